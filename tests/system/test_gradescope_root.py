"""`grade gradescope`'s zip in a fresh Debian root, as Gradescope runs it: setup.sh for real, then run_autograder.

tests/system/test_gradescope.py runs run_autograder with this venv's python. Here nothing of this machine's Python is
used: a minimal Debian root is made from the package registry with mmdebstrap (the machine's own apt sources and
release, Debian's, or Ubuntu's on an Ubuntu machine; no Python in it), the zip is unpacked into /autograder/source, and
setup.sh runs there as root (Gradescope does the same when it builds the image): apt installs python3.11, pip the pinned
environment and the kit. Then run_autograder grades two sample submissions, one correct and one buggy, each into
/autograder/results, and must give what `grade autograde` gives on this machine.

The root is entered in a mount and PID namespace of its own: the root folder is bind-mounted onto itself (so it is a
mount point, as a container's root is, and the grader's own sandbox can pivot_root inside it), with its own /proc, a
/dev of its own (tmpfs, as in a container), /sys read-only, then chroot. The network is the machine's (setup.sh needs
apt and PyPI, as on Gradescope).

pip: the machine's pip configuration (PIP_* variables and pip.conf files, e.g. local wheel folders, a CA bundle)
is passed in as PIP_* variables, and the local folders and files it names are bind-mounted read-only at the same
paths. torch is never downloaded: where this machine has its CPU wheel (pip's find-links, /opt/wheels),
AUTOGRADER_PIP_INDEX_URL (pip's index, PyPI by default) and AUTOGRADER_PIP_FIND_LINKS (that folder) stand in for
the PyTorch CPU index (docs/gradescope.md); only without one does setup.sh run with its defaults.

The base root is built once per content key (mmdebstrap's version, the release, the apt sources, the packages)
and kept as a tarball in AUTOGRADER_TEST_ROOT_CACHE (default /var/cache/attention-autograder); a key older than
30 days is rebuilt. Each run unpacks a fresh copy. Needs root, Linux and mmdebstrap (installed with apt-get if
missing); it is skipped, saying why, only when mmdebstrap cannot be installed or the apt mirror cannot be
reached.

Its cost, the longest set-up of the suite: setup.sh for real (apt's python3.11, pip's environment, the reference
answers) takes 2 to 4 minutes on a loaded 2-core machine, once per run (the root is a module fixture; its zip
and the host's grades are the run's own, tests/support/built_for_the_run.py), plus 1.5 minutes the first time
mmdebstrap builds the base root. It cannot be shorter and stay what it shows: Gradescope's image built from the zip.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from autograder.gradescope.scripts import SETUP_SH
from autograder.release.pins import TORCH_CPU_INDEX

from tests.support.built_for_the_run import sample_results
from .conftest import ROOT

in_a_root = [pytest.mark.slow,
             pytest.mark.skipif(sys.platform != "linux" or os.geteuid() != 0,
                                reason="a Debian root needs Linux and root (mount namespaces, chroot, mmdebstrap)")]

SAMPLES = ROOT / "samples" / "submissions"
SUBMISSIONS = ("alice", "bob")  # alice: all correct; bob: one bug
CACHE = Path(os.environ.get("AUTOGRADER_TEST_ROOT_CACHE", "/var/cache/attention-autograder"))
MAX_AGE_DAYS = 30
VARIANT = "apt"  # Essential packages and apt: no Python; setup.sh must install it
INCLUDE = ("ca-certificates",)
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Runs under `unshare --mount --pid --fork`: ROOT BINDS -- COMMAND... The root gets a /dev of its own, as a
# container does (a tmpfs with the usual nodes): nothing run as root in it (dpkg's scripts, apt) can touch the
# machine's /dev. /sys is read-only (its cgroup mounts stay as they are, for the grader's per-submission limits).
ENTER = r"""
set -euo pipefail
R=$1; BINDS=$2; shift 3
mount --make-rprivate /
mount --bind "$R" "$R"            # the root is a mount point, as a container's is
mount -t proc proc "$R/proc"
mount --rbind /sys "$R/sys"
mount -o remount,bind,ro "$R/sys"
mount -t tmpfs -o mode=755,nosuid devtmp "$R/dev"
for node in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
    IFS=: read -r name major minor <<< "$node"
    mknod -m 666 "$R/dev/$name" c "$major" "$minor"
done
mkdir -m 1777 "$R/dev/shm" && mount -t tmpfs -o mode=1777,nosuid,nodev shm "$R/dev/shm"
mkdir "$R/dev/pts" && mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$R/dev/pts"
ln -s pts/ptmx "$R/dev/ptmx"
ln -s /proc/self/fd "$R/dev/fd"
ln -s /proc/self/fd/0 "$R/dev/stdin"; ln -s /proc/self/fd/1 "$R/dev/stdout"; ln -s /proc/self/fd/2 "$R/dev/stderr"
IFS=: read -r -a binds <<< "$BINDS"
for b in "${binds[@]}"; do
    [ -n "$b" ] || continue
    if [ -d "$b" ]; then mkdir -p "$R$b"; else mkdir -p "$(dirname "$R$b")"; [ -e "$R$b" ] || : > "$R$b"; fi
    mount --bind "$b" "$R$b"
    mount -o remount,bind,ro "$R$b"
done
exec chroot "$R" "$@"
"""


# -- the base root: mmdebstrap, cached by content -----------------------------------------------------------
def _codename() -> str:
    fields = dict(line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines() if "=" in line)
    codename = fields.get("VERSION_CODENAME", "").strip('"')
    if fields.get("ID", "").strip('"') not in ("debian", "ubuntu") or not codename:
        pytest.skip(f"this machine is neither Debian nor Ubuntu ({fields.get('PRETTY_NAME', '?')}): "
                    "no apt sources to build a root from")
    return codename


def _apt_sources(codename: str) -> list[Path]:
    """The machine's active apt source files that serve ``codename`` from a Debian (or Ubuntu) archive."""
    candidates = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*.list")),
                  *sorted(Path("/etc/apt/sources.list.d").glob("*.sources"))]
    found = []
    for path in candidates:
        try:
            text = path.read_text()
        except OSError:
            continue
        live = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        if re.search(rf"\b{re.escape(codename)}\b", live) and re.search(r"/(debian|ubuntu)", live):
            found.append(path)
    if not found:
        pytest.skip(f"no apt source for {codename} in /etc/apt: nothing to build a root from")
    return found


def _mmdebstrap() -> str:
    found = shutil.which("mmdebstrap")
    if found:
        return found
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    done = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "mmdebstrap"],
                          capture_output=True, text=True, env=env, timeout=900)
    if done.returncode != 0:  # perhaps stale lists
        subprocess.run(["apt-get", "update"], capture_output=True, text=True, env=env, timeout=900)
        done = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "mmdebstrap"],
                              capture_output=True, text=True, env=env, timeout=900)
    if done.returncode != 0 or not shutil.which("mmdebstrap"):
        pytest.skip("mmdebstrap is not installed and apt-get cannot install it: "
                    + (done.stderr.strip().splitlines() or ["no message"])[-1])
    return shutil.which("mmdebstrap")


def _base_tarball(log) -> Path:
    """The minimal Debian root as a tarball, built once per content key."""
    tool = _mmdebstrap()
    codename = _codename()
    sources = _apt_sources(codename)
    version = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout.strip()
    key_text = json.dumps({"mmdebstrap": version, "suite": codename, "variant": VARIANT, "include": INCLUDE,
                           "arch": os.uname().machine,
                           "sources": {str(p): p.read_text() for p in sources}}, sort_keys=True)
    key = hashlib.sha256(key_text.encode()).hexdigest()[:16]
    CACHE.mkdir(parents=True, exist_ok=True)
    tarball = CACHE / f"debian-{codename}-{VARIANT}-{key}.tar"
    with open(CACHE / f".{tarball.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time; the others wait and reuse it
        if tarball.exists() and time.time() - tarball.stat().st_mtime < MAX_AGE_DAYS * 86400:
            log(f"base root: cached {tarball}")
            return tarball
        partial = tarball.with_name(tarball.name + ".partial")
        started = time.monotonic()
        done = subprocess.run([tool, f"--variant={VARIANT}", f"--include={','.join(INCLUDE)}", "--format=tar",
                               codename, str(partial), *map(str, sources)],
                              capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            partial.unlink(missing_ok=True)
            tail = "\n".join(done.stderr.strip().splitlines()[-15:])
            if re.search(r"(Could not resolve|Failed to fetch|Unable to connect|Temporary failure|"
                         r"Could not connect|Connection failed|No route)", done.stderr):
                pytest.skip(f"the apt mirror cannot be reached to build a Debian {codename} root:\n{tail}")
            raise AssertionError(f"mmdebstrap failed (exit {done.returncode}):\n{tail}")
        os.replace(partial, tarball)
        log(f"base root: built {tarball} in {time.monotonic() - started:.0f} s")
        return tarball


# -- pip: this machine's configuration, passed in -----------------------------------------------------------
def _pip_settings() -> dict[str, str]:
    """This machine's effective pip settings as PIP_* variables (environment over install over global)."""
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    rank = {"global": 0, "install": 1, ":env:": 2}
    best: dict[str, tuple[int, str]] = {}
    for line in listed.splitlines():
        match = re.match(r"^([^.=]+)\.([^=]+)=(.*)$", line.strip())
        if not match or match.group(1) not in rank:
            continue
        section, key, value = match.groups()
        value = value[1:-1] if value[:1] == value[-1:] and value[:1] in "'\"" else value
        name = "PIP_" + key.upper().replace("-", "_")
        if name not in best or rank[section] >= best[name][0]:
            best[name] = (rank[section], value)
    return {name: value for name, (_, value) in best.items()}


def _local_paths(values) -> list[str]:
    """Folders and files of this machine named in pip settings (plain paths or file:// URLs)."""
    paths = []
    for value in values:
        for token in value.split():
            path = token[len("file://"):] if token.startswith("file://") else token
            if not path.startswith("/") or not os.path.exists(path):
                continue
            path = path.rstrip("/") or "/"
            if os.path.basename(path) == "simple":  # a PEP 503 index whose files sit beside it
                path = os.path.dirname(path)
            if path not in paths and path not in ("/", "/etc", "/usr", "/var", "/tmp", "/opt", "/root", "/home"):
                paths.append(path)
    return paths


def _torch_wheel_folders(settings: dict[str, str], version: str) -> list[str]:
    """Local folders holding a torch ``version`` wheel for CPython 3.11 on this architecture."""
    pattern = f"torch-{version}*-cp311-cp311-*linux*_{os.uname().machine}.whl"
    return [folder for folder in _local_paths([settings.get("PIP_FIND_LINKS", ""), "/opt/wheels"])
            if os.path.isdir(folder) and any(Path(folder).glob(pattern))]


def _reachable(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=15) as answer:
            return answer.status < 400
    except Exception:  # noqa: BLE001 - any failure means: not reachable from here
        return False


# -- the root and commands inside it ------------------------------------------------------------------------
class DebianRoot:
    def __init__(self, path: Path, binds: list[str], env: dict[str, str]):
        self.path, self.binds, self.env = path, binds, env

    def run(self, command: str, timeout: float, extra_env: dict | None = None) -> subprocess.CompletedProcess:
        env = {"PATH": PATH, "HOME": "/root", "LANG": "C.UTF-8", **self.env, **(extra_env or {})}
        inner = ["/usr/bin/env", "-i", *(f"{k}={v}" for k, v in env.items()), "/bin/bash", "-c", command]
        return subprocess.run(["unshare", "--mount", "--pid", "--fork", "--kill-child", "bash", "-c", ENTER, "enter",
                               str(self.path), ":".join(self.binds), "--", *inner],
                              capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def timings() -> dict:
    record: dict = {}
    yield record
    print("\n" + json.dumps(record, indent=2))


@pytest.fixture(scope="module")
def debian_root(tmp_path_factory, timings, gradescope_zip):
    started = time.monotonic()
    notes: list[str] = []
    tarball = _base_tarball(notes.append)
    timings["base root"] = round(time.monotonic() - started, 1)
    timings["notes"] = notes

    tmp = tmp_path_factory.mktemp("debian-root")
    path = tmp / "root"
    path.mkdir()
    subprocess.run(["tar", "--numeric-owner", "-xpf", str(tarball), "-C", str(path)], check=True, timeout=600)
    shutil.copyfile("/etc/resolv.conf", path / "etc" / "resolv.conf")

    zip_path = gradescope_zip  # grade gradescope's, once per run (tests/support/built_for_the_run.py)
    source = path / "autograder" / "source"
    with zipfile.ZipFile(zip_path) as z:  # as Gradescope unpacks it; modes kept (setup.sh, run_autograder)
        for info in z.infolist():
            target = source / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(z.read(info))
            target.chmod((info.external_attr >> 16) & 0o7777 or 0o644)

    settings = _pip_settings()
    extra: dict[str, str] = {}
    version = next(line.split("==", 1)[1] for line in (source / "requirements.txt").read_text().splitlines()
                   if line.startswith("torch=="))
    folders = _torch_wheel_folders(settings, version)
    if folders:  # this machine's wheel (/opt/wheels, pip's find-links): never a download of torch
        extra = {"AUTOGRADER_PIP_INDEX_URL": settings.get("PIP_INDEX_URL", "https://pypi.org/simple"),
                 "AUTOGRADER_PIP_FIND_LINKS": " ".join(folders)}
        timings["torch from"] = extra
    else:
        assert _reachable(TORCH_CPU_INDEX + "/torch/"), (
            f"no torch {version} CPU wheel for Python 3.11 in pip's find-links or /opt/wheels, and {TORCH_CPU_INDEX} "
            "cannot be reached: setup.sh would have nowhere to install torch from")
        timings["torch from"] = TORCH_CPU_INDEX
    binds = _local_paths([*settings.values(), *extra.values()])
    root = DebianRoot(path, binds, {**settings, **extra})

    assert root.run("command -v python3 || echo none", timeout=300).stdout.strip() == "none"  # setup.sh brings it
    started = time.monotonic()
    setup = root.run("cd /autograder/source && ./setup.sh", timeout=2400)
    timings["setup.sh"] = round(time.monotonic() - started, 1)
    (tmp / "setup.log").write_text(setup.stdout + setup.stderr)
    assert setup.returncode == 0, f"setup.sh failed (exit {setup.returncode}):\n{(setup.stdout + setup.stderr)[-6000:]}"
    assert re.search(r"^torch 2\.\d+\.\d+\S* - kit ", setup.stdout, re.M), setup.stdout[-3000:]
    # its last step keeps the reference answers for every run (autograder/gradescope/reference_answers.py)
    assert re.search(r"^reference answers: \d+ cases, kept in /autograder/cache$", setup.stdout, re.M), \
        setup.stdout[-3000:]
    KEPT_BY_SETUP[:] = [p.stat().st_ino for p in (path / "autograder" / "cache").glob("reference-answers-0/*.pt")]
    assert len(KEPT_BY_SETUP) == 1
    installed = root.run("dpkg-query -W -f='${Package} ${Version} ${Status}\\n' python3.11 python3.11-venv; "
                         "/autograder/venv/bin/python -c 'import sys; print(sys.version)'", timeout=300).stdout
    assert installed.count("install ok installed") == 2 and "\n3.11." in "\n" + installed, installed
    timings["python in the root"] = installed.split("\n")[:3]
    shutil.copy2(source / "run_autograder", path / "autograder" / "run_autograder")
    yield root
    # 1.6 GB; the namespaces that held its mounts ended with each command, but never delete through a mount
    if not any(f" {path}/" in line or f" {path} " in line
               for line in Path("/proc/self/mountinfo").read_text().splitlines()):
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def expected(graded_samples) -> dict[str, dict]:
    """What `grade autograde` gives the same submissions on this machine (the sample class, graded once per run:
    tests/support/built_for_the_run.py)."""
    return sample_results(graded_samples, *SUBMISSIONS)


def _grade_in_root(root: DebianRoot, name: str, env: dict) -> tuple[subprocess.CompletedProcess, dict]:
    ag = root.path / "autograder"
    for folder in ("submission", "results"):
        shutil.rmtree(ag / folder, ignore_errors=True)
        (ag / folder).mkdir()
    for path in (SAMPLES / name).glob("*.py"):
        shutil.copyfile(path, ag / "submission" / path.name)
    (ag / "submission_metadata.json").write_text(json.dumps(
        {"id": 1, "created_at": "2026-12-10T14:03:22.5-08:00", "assignment": {"title": "attention"},
         "users": [{"name": name}]}))
    done = root.run("cd /autograder && ./run_autograder", timeout=1200, extra_env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return done, json.loads((ag / "results" / "results.json").read_text())


# Gradescope's containers may refuse namespaces (Docker's default seccomp profile and capabilities): the
# grader then falls back to uid+rlimits, which must grade the same.
CASES = [("alice", None), ("bob", None), ("bob", "uid+rlimits")]
#: the file of reference answers setup.sh kept (its inode): every run reads it
KEPT_BY_SETUP: list[int] = []


@in_a_root[0]
@in_a_root[1]
@pytest.mark.parametrize(("name", "cap"), CASES, ids=[f"{n}-{c or 'default'}" for n, c in CASES])
def test_run_autograder_in_the_root_grades_as_grade_autograde(debian_root, expected, timings, name, cap):
    started = time.monotonic()
    done, results = _grade_in_root(debian_root, name, {"AUTOGRADER_ISOLATION": cap} if cap else {})
    case = f"{name} ({cap or 'default isolation'})"
    timings[f"run_autograder {case}"] = round(time.monotonic() - started, 1)
    want = expected[name]
    described = [line for line in done.stdout.splitlines() if line.startswith("isolation: ")]
    timings[f"isolation {case}"] = described[-1] if described else results.get("extra_data", {}).get("isolation")
    assert results["tests"], results["output"] + done.stdout[-3000:] + done.stderr[-3000:]
    assert "kit: /autograder/source/autograder; python: /autograder/venv/bin/python" in done.stdout
    if cap:
        assert results["extra_data"]["isolation"] == cap, timings[f"isolation {case}"]
    differ = [(t["name"], t["score"], u["score"], t.get("output", "")[:1500])
              for t, u in zip(results["tests"], want["tests"])
              if (t["name"], t["score"], t["status"]) != (u["name"], u["score"], u["status"])]
    assert not differ, (differ, timings[f"isolation {case}"])  # in the root, then on the host, with the root's words
    assert [t["name"] for t in results["tests"]] == [t["name"] for t in want["tests"]]
    assert results["score"] == want["score"], (results["score"], want["score"], timings[f"isolation {case}"])
    assert results["extra_data"]["submitted_at"] == "2026-12-10T14:03:22.500000-08:00"
    timings[f"score {case}"] = f"{results['score']:g}/{sum(t['max_score'] for t in results['tests']):g}"
    kept = [p.stat().st_ino for p in (debian_root.path / "autograder" / "cache").glob("reference-answers-0/*.pt")]
    assert kept == KEPT_BY_SETUP, ("the run computed again the reference answers setup.sh kept (a run that computes "
                                   "replaces the file)")
    assert not (debian_root.path / "root" / ".cache" / "attention-autograder").exists(), \
        "the run kept its own, elsewhere"


# -- setup.sh's pip arguments, without a root or a network (stub python3.11 and pip) ------------------------
STUB = """#!/bin/bash
# python3.11, and the venv's python: log what pip is asked; make the venv's python a copy of this stub
echo "$0 $*" >> "$STUB_LOG"
if [ "${1:-}" = -m ] && [ "${2:-}" = venv ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; fi
exit 0
"""


def _setup_sh_calls(tmp: Path, env: dict) -> list[str]:
    root, bin_dir, log = tmp / "autograder", tmp / "bin", tmp / "calls.log"
    (root / "source").mkdir(parents=True, exist_ok=True)
    bin_dir.mkdir()
    (root / "source" / "requirements.txt").write_text(
        f"# pins\n--extra-index-url {TORCH_CPU_INDEX}\nnumpy==2.0.0\ntorch==2.13.0\n")
    (root / "source" / "setup.sh").write_text(SETUP_SH)
    (bin_dir / "python3.11").write_text(STUB)
    (bin_dir / "python3.11").chmod(0o755)
    done = subprocess.run(["bash", str(root / "source" / "setup.sh")], capture_output=True, text=True, timeout=60,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "AUTOGRADER_ROOT": str(root), "STUB_LOG": str(log),
                               **env})
    assert done.returncode == 0, done.stdout + done.stderr
    assert (root / "venv" / "requirements.txt").read_text() == "# pins\nnumpy==2.0.0\ntorch==2.13.0\n"
    return [line.split(" ", 1)[1] for line in log.read_text().splitlines() if " -m pip install " in line]


@pytest.mark.unit
@pytest.mark.skipif(shutil.which("bash") is None, reason="setup.sh is a bash script")
def test_setup_sh_uses_the_cpu_index_unless_told_otherwise(tmp_path):
    calls = _setup_sh_calls(tmp_path / "default", {})
    assert len(calls) == 3, calls
    torch, requirements, kit = calls
    assert f"--index-url {TORCH_CPU_INDEX} torch==2.13.0" in torch
    assert "--index-url" not in requirements and "-r " in requirements  # torch is in; PyPI has the rest
    assert "--no-deps --no-build-isolation -e" in kit
    assert not any("--find-links" in call for call in calls)

    calls = _setup_sh_calls(tmp_path / "elsewhere",
                            {"AUTOGRADER_PIP_INDEX_URL": "https://mirror.example/simple",
                             "AUTOGRADER_PIP_FIND_LINKS": " /opt/wheels  https://mirror.example/w/"})
    torch, requirements, kit = calls
    assert "--index-url https://mirror.example/simple torch==2.13.0" in torch and TORCH_CPU_INDEX not in torch
    for call in calls:  # each space-separated entry once, on every call
        assert call.count("--find-links /opt/wheels ") == 1, call
        assert call.count("--find-links https://mirror.example/w/ ") == 1, call
        assert call.count("--find-links") == 2, call


@pytest.mark.unit
@pytest.mark.skipif(shutil.which("bash") is None, reason="setup.sh is a bash script")
def test_setup_sh_leaves_the_source_to_root_alone(tmp_path):
    """The zip unpacks world-readable (the reference at 0644); after setup.sh nobody but its owner (root) may read or
    enter anything in the source, while the venv the workers import from stays readable."""
    source = tmp_path / "modes" / "autograder" / "source"
    (source / "solutions").mkdir(parents=True)
    (source / "solutions" / "simple_attention.py").write_text("reference\n")
    for path in (source, source / "solutions"):
        path.chmod(0o755)
    (source / "solutions" / "simple_attention.py").chmod(0o644)
    loose = [p for p in [source, *source.rglob("*")] if p.stat().st_mode & 0o077]
    assert loose  # the control: as unpacked, others may read them
    _setup_sh_calls(tmp_path / "modes", {})
    assert [p for p in [source, *source.rglob("*")] if p.stat().st_mode & 0o077] == []
    venv = tmp_path / "modes" / "autograder" / "venv"
    assert venv.stat().st_mode & 0o005 == 0o005 and (venv / "bin" / "python").stat().st_mode & 0o005 == 0o005

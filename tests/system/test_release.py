"""`grade release`: the student bundle holds what grade check needs and nothing instructor-only.

Leak rule (autograder/release/leaks.py): every non-blank line of a solution body is secret, except
bare syntax (`)`, `else:`, `return`), the idioms `with torch.no_grad():` / `super().__init__()`, and
lines the solutions also show outside their solution blocks (a docstring quoting a hint). A secret
line leaks when a shipped line *is* it (whitespace collapsed), however short (`return x @ W` is a
whole answer); a secret line of 24+ characters also leaks when it appears *inside* any file.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import pytest

from autograder.course import load_course
from autograder.release import leaks
from autograder.release.pins import TORCH_CPU_INDEX, canonical
from autograder.release.reproducible_zip import write_zip
from autograder.release.student_code import ReleaseError, closure, student_cli

from .conftest import ROOT, run_grade

BUNDLE = "attention-exercises"


@pytest.fixture(scope="module")
def release(release_bundle) -> Path:
    """``grade release``'s bundle, built once per run (tests/support/built_for_the_run.py)."""
    assert release_bundle.name == BUNDLE and (release_bundle.parent / f"{BUNDLE}.zip").is_file()
    return release_bundle


def files_of(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


# -- (a) nothing instructor-only ------------------------------------------------------------------

def test_bundle_layout(release):
    for rel in ("README.md", "requirements.txt", "pyproject.toml", "autograder/cli.py",
                "autograder/check/public_cases.json", "autograder/check/public_cases.safetensors"):
        assert (release / rel).is_file(), rel
    assert sorted(p.name for p in (release / "exercises").glob("*.py")) == sorted(
        p.name for p in (ROOT / "solutions").glob("*.py"))
    for name in (release / "exercises").glob("*.py"):  # exactly what `grade assign` writes
        assert name.read_text() == (ROOT / "exercises" / name.name).read_text()
    requirements = (release / "requirements.txt").read_text()
    # torch's CPU build comes from install_torch.py, first; no index line that pip would try for every package
    assert "torch==2.13.0\n" in requirements and not any(line.startswith("--") for line in requirements.splitlines())
    assert (release / "install_torch.py").read_text() == (ROOT / "autograder" / "release" / "torch_cpu.py").read_text()
    readme = (release / "README.md").read_text()
    assert readme.index("python install_torch.py") < readme.index("pip install -r requirements.txt")
    assert "grade check" in readme


def test_every_package_the_bundle_imports_is_in_its_requirements(release):
    """A student installs requirements.txt into a fresh venv: whatever the bundle's code imports (at the top or
    inside a function, such as rich for a failing case's grid) must be there."""
    wanted: set[str] = set()
    for path in (release / "autograder").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                wanted |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                wanted.add(node.module.split(".")[0])
    third_party = {name for name in wanted if name not in sys.stdlib_module_names and name != "autograder"}
    assert {"torch", "rich", "PIL"} <= third_party  # the control: the scan sees what it should
    pinned = {canonical(line.split("==")[0]) for line in (release / "requirements.txt").read_text().splitlines()
              if "==" in line and not line.startswith("#")}
    from importlib.metadata import packages_distributions  # noqa: PLC0415 - only this test maps imports to packages

    providers = packages_distributions()  # an import's name -> the installed packages that provide it (PIL: pillow)
    needed = {canonical(providers.get(name, [name])[0]) for name in third_party}
    assert needed <= pinned, sorted(needed - pinned)


def test_no_solution_line_leaks(release):
    secrets = leaks.secret_lines(ROOT / "solutions")
    assert "return x @ W" in secrets  # short, but a whole answer: it counts
    assert leaks.scan(release, secrets) == []


def test_the_leak_scanner_catches_a_planted_leak(tmp_path):
    secrets = leaks.secret_lines(ROOT / "solutions")
    long_line = max(secrets, key=len)
    (tmp_path / "a.py").write_text("def project(x, W):\n        return  x @ W\n")
    (tmp_path / "b.json").write_text(json.dumps({"source": f"    {long_line}\n"}))
    found = leaks.scan(tmp_path, secrets)
    assert {(leak.file, leak.code) for leak in found} == {("a.py", "return x @ W"), ("b.json", long_line)}
    # every secret line of the solutions is found in the solutions themselves
    assert {leak.code for leak in leaks.scan(ROOT / "solutions", secrets)} == set(secrets)


def test_no_hidden_suite_no_solutions_no_instructor_module(release):
    suites = {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in files_of(ROOT / "autograder" / "unit" / "suites")}
    suite_lines = {" ".join(line.split()) for p in suites.values() if p.suffix == ".py"
                   for line in p.read_text().splitlines() if "case=" in line}
    for path in files_of(release):
        rel = path.relative_to(release)
        assert hashlib.sha256(path.read_bytes()).hexdigest() not in suites, rel
        assert not ({"unit", "suites", "solutions", "assign", "grade", "course", "release", "gradescope"}
                    & set(rel.parts)), rel
        assert rel.name not in ("reference.py", "documents.py", "mistakes.py", "prose.py", "course.yml"), rel
        if path.suffix in (".py", ".md", ".txt", ".toml", ".json"):
            text = {" ".join(line.split()) for line in path.read_text().splitlines()}
            assert not (suite_lines & text), f"{rel} holds lines of the hidden suites"
    cli = (release / "autograder" / "cli.py").read_text()
    assert "def check(" in cli and "def autograde(" not in cli and "def assign(" not in cli
    assert "add_command" not in cli


@pytest.fixture(scope="module")
def every_case():
    """Every case the suites evaluate on the reference, hidden ones included: (case, expected, public)."""
    from autograder.grading.suites.plugin import GradingPlugin  # noqa: PLC0415 - imported on first use: torch is slow to load
    from autograder.grading.suites.suite_runner import run_suites  # noqa: PLC0415 - imported on first use: torch is slow to load
    from autograder.grading import cases as check_module  # noqa: PLC0415 - imported on first use: torch is slow to load
    from autograder.grading.suites.reference import Reference  # noqa: PLC0415 - imported on first use: torch is slow to load

    course = load_course(ROOT / "course.yml")
    reference = Reference(ROOT / course.solutions, course.modules, list(course.steps))
    seen = []
    original = check_module.Check._evaluate

    def recording(self, case, expected):
        seen.append((case, expected, bool(case["public"] and self.public_count)))
        return original(self, case, expected)

    check_module.Check._evaluate = recording
    try:
        run_suites((ROOT / course.suites).resolve(), GradingPlugin(course, reference, lambda s, r: reference.run(r)))
    finally:
        check_module.Check._evaluate = original
    assert any(not public for *_, public in seen) and any(public for *_, public in seen)
    return seen


def _tensor_hashes(node) -> set:
    import torch  # noqa: PLC0415 - imported on first use: torch is slow to load

    found = set()
    if isinstance(node, torch.Tensor):
        t = node.detach().contiguous()
        if t.numel() >= 4:  # a lone 0 or 1 is in every file
            found.add((tuple(t.shape), str(t.dtype), hashlib.sha256(t.numpy().tobytes()).hexdigest()))
    elif isinstance(node, dict):
        for value in node.values():
            found |= _tensor_hashes(value)
    elif isinstance(node, (list, tuple)):
        for value in node:
            found |= _tensor_hashes(value)
    return found


def test_only_public_cases_are_shipped(release, every_case):
    from safetensors.torch import load_file  # noqa: PLC0415 - imported on first use: torch is slow to load

    data = json.loads((release / "autograder" / "check" / "public_cases.json").read_text())
    for case in data["cases"]:
        assert case["public"] is True
        assert data["steps"][case["step"]]["counts"][case["count"]]["visibility"] == "public"
    public_names = {case["name"] for case, _, public in every_case if public}
    hidden_names = {case["name"] for case, _, public in every_case if not public} - public_names
    assert {case["name"] for case in data["cases"]} == public_names
    assert "eval mode: dropout is off" in hidden_names and len(hidden_names) > 30
    for path in files_of(release):
        text = path.read_bytes().decode("latin-1")
        shown = [name for name in hidden_names if name in text]
        assert not shown, f"{path.relative_to(release)} names hidden cases: {shown[:5]}"
    # hidden inputs and answers, except those equal to a public one (a hidden count may reuse them)
    public_values = set().union(*(_tensor_hashes([c["request"], e]) for c, e, public in every_case if public))
    hidden_values = set().union(*(_tensor_hashes([c["request"], e]) for c, e, public in every_case if not public))
    shipped = _tensor_hashes(list(load_file(str(release / "autograder" / "check"
                                                / "public_cases.safetensors")).values()))
    assert hidden_values - public_values, "no hidden value to look for: the test would prove nothing"
    assert not (shipped & (hidden_values - public_values))


def test_grade_check_closure_refuses_instructor_only_modules(tmp_path):
    root = tmp_path / "autograder"
    for rel, text in {"__init__.py": "", "cli.py": "", "worker/__init__.py": "", "check/__init__.py": "",
                      "check/magic.py": "from autograder.check import run\n",
                      "check/run.py": "def f():\n    from autograder.grading.suites.session import Grader\n",
                      "grade/__init__.py": "", "grade/session.py": ""}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    with pytest.raises(ReleaseError, match="autograder.grading.suites"):
        closure(student_cli((ROOT / "autograder" / "cli.py").read_text()), root)


def test_an_unsafe_out_folder_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    result = run_grade("release", "--out", str(tmp_path), timeout=120)
    assert result.returncode == 2 and "not a bundle built by grade release" in result.stderr
    assert (tmp_path / "notes.txt").read_text() == "mine"


# -- (b) reproducible archive ---------------------------------------------------------------------

def test_the_archive_is_byte_identical_across_builds(tmp_path):
    """Two builds from the same inputs, in different folders, give the same bytes. The inputs are a
    snapshot of the repository, so that an edit elsewhere in the repo during the test changes nothing."""
    from autograder.release.bundle import build_release  # noqa: PLC0415 - imported on first use: torch is slow to load

    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "autograder", repo / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "solutions", repo / "solutions")
    shutil.copyfile(ROOT / "course.yml", repo / "course.yml")
    first = build_release(tmp_path / "one" / BUNDLE, repo / "course.yml")["zip"].read_bytes()
    again = build_release(tmp_path / "two" / BUNDLE, repo / "course.yml")
    assert again["zip"].read_bytes() == first
    # rebuilding over the previous bundle replaces it, with the same bytes
    assert build_release(tmp_path / "two" / BUNDLE, repo / "course.yml")["zip"].read_bytes() == first
    with zipfile.ZipFile(again["zip"]) as archive:
        infos = archive.infolist()
    names = [i.filename for i in infos]
    assert names == sorted(names) and all(n.startswith(f"{BUNDLE}/") for n in names)
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc") or "/." in n]
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert {i.external_attr >> 16 for i in infos} == {0o100644}


def test_source_date_epoch_sets_every_timestamp(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    a = write_zip(tmp_path / "a.zip", [("b", b"2"), ("a", b"1")])
    b = write_zip(tmp_path / "b.zip", [("a", b"1"), ("b", b"2")])
    assert a.read_bytes() == b.read_bytes()
    with zipfile.ZipFile(a) as archive:
        assert [i.filename for i in archive.infolist()] == ["a", "b"]
        assert {i.date_time for i in archive.infolist()} == {(2023, 11, 14, 22, 13, 20)}


# -- (c) the bundle works on its own ----------------------------------------------------------------

def test_the_bundle_installs_and_checks_without_the_instructor_repo(release, tmp_path):
    """Install the bundle (no deps: torch comes from the venv's site-packages, named explicitly) and run
    its `grade` under `python -S`, so the instructor's editable install (a .pth finder) is not loaded."""
    import torch  # noqa: PLC0415 - imported on first use: torch is slow to load

    bundle = tmp_path / "student" / BUNDLE
    shutil.copytree(release, bundle)
    target = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                          "--disable-pip-version-check", "--target", str(target), str(bundle)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    site_packages = str(Path(torch.__file__).resolve().parent.parent)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": os.pathsep.join([str(target), site_packages]),
           "PYTHONNOUSERSITE": "1", "HOME": str(tmp_path), "LANG": "C.UTF-8"}

    def python(*args, cwd=bundle):
        return subprocess.run([sys.executable, "-S", *args], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=600)

    probe = python("-c", "import autograder, torch; print(autograder.__file__)\n"
                   "for m in ('autograder.unit.suites', 'autograder.autograde', 'autograder.grading.suites', "
                   "'autograder.assign', 'autograder.course',"
                   " 'autograder.grading.suites.reference', 'solutions'):\n"
                   "    try:\n        __import__(m)\n    except ImportError:\n        pass\n"
                   "    else:\n        raise SystemExit(f'{m} is importable')\n", cwd=tmp_path)
    assert probe.returncode == 0, probe.stdout + probe.stderr
    assert probe.stdout.strip() == str(target / "autograder" / "__init__.py")
    assert (target / "autograder" / "check" / "public_cases.safetensors").is_file()

    grade = str(target / "bin" / "grade")
    helped = python(grade, "--help")
    assert helped.returncode == 0 and "check" in helped.stdout
    assert "autograde" not in helped.stdout and "release" not in helped.stdout

    stubs = python(grade, "check", "--json")
    assert stubs.returncode == 1, stubs.stdout + stubs.stderr
    data = json.loads(stubs.stdout)
    assert data["score"] == 0 and data["max_score"] > 0
    assert {s["status"] for s in data["steps"]} == {"not attempted"}

    for path in (ROOT / "solutions").glob("*.py"):
        shutil.copyfile(path, bundle / "exercises" / path.name)
    solved = python(grade, "check")
    assert solved.returncode == 0, solved.stdout + solved.stderr
    assert "FAILED" not in solved.stdout and "not attempted" not in solved.stdout


# -- (d) the Python range the bundle claims is the one its pins install on ------------------------------
PYENV = Path("/root/.pyenv/versions")


def pythons_here() -> dict[tuple[int, int], Path]:
    """(major, minor) -> an interpreter of that version on this machine: pyenv's, and the one running."""
    found = {}
    try:
        folders = sorted(PYENV.glob("3.*")) if PYENV.is_dir() else []
    except PermissionError:  # root's, and the suite runs as a normal user: the running Python only
        folders = []
    for folder in folders:
        python = folder / "bin" / "python3"
        if python.is_file() and os.access(python, os.X_OK):
            found[tuple(int(p) for p in folder.name.split(".")[:2])] = python
    found.setdefault(sys.version_info[:2], Path(sys.base_exec_prefix) / "bin" / "python3")
    return found


def _venv(python: Path, folder: Path) -> Path:
    run = subprocess.run([str(python), "-m", "venv", str(folder)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return folder / "bin" / "python"


def _reachable(url: str, seconds: float = 5.0) -> bool:
    host = urlparse(url)
    try:
        with socket.create_connection((host.hostname, host.port or 443), timeout=seconds):
            return True
    except OSError:
        return False


def _torch_first(python: Path, bundle: Path) -> str:
    """The README's first install step: install_torch.py, in the bundle's venv; what it said."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    run = subprocess.run([str(python), "install_torch.py"], cwd=bundle, env=env, capture_output=True, text=True,
                         timeout=1200)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    return run.stdout


def _cpu_torch_at_hand(python: Path, bundle: Path) -> bool:
    """Whether this Python can have torch 2.13.0's CPU build without a CUDA download: PyTorch's CPU index answers,
    or a local wheel (pip's own find-links) fits it."""
    if _reachable(TORCH_CPU_INDEX):
        return True
    local = _pip(python, "--dry-run", "--no-index", "--no-deps", "torch==2.13.0", cwd=bundle)
    return local.returncode == 0 and "+cpu" in local.stdout


def _pip(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=1200)


@pytest.fixture(scope="module")
def documented_install(tmp_path_factory, release) -> Path:
    """The unzipped bundle that docs/release.md's commands installed as its README says (a venv of the documents'
    ``python3``, install_torch.py, the pins, ``pip install --no-deps .``; every command's exit status checked by
    tests/system/test_documented_commands.py), run once per run; its folder holds each block's log. Its zip is byte
    for byte ``release``'s: the bundle installed there is the one this file checks."""
    from .test_documented_commands import documents_run_once  # noqa: PLC0415 - its runner, shared with that test

    folder = documents_run_once(("docs/release.md",), tmp_path_factory)
    assert (folder / "course" / "dist" / f"{BUNDLE}.zip").read_bytes() == \
        (release.parent / f"{BUNDLE}.zip").read_bytes()
    return folder


def _python_version(python: Path) -> tuple[int, int]:
    said = subprocess.run([str(python), "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                          text=True, check=True, timeout=60).stdout
    return tuple(int(part) for part in said.split())


def test_the_bundle_installs_on_the_pythons_it_claims_and_refuses_the_others(release, documented_install, tmp_path):
    """requirements.txt into a fresh venv of the lowest and the highest Python the bundle's requires-python
    claims that this machine has, then `pip install --no-deps .` and `grade check`, as its README says. Just
    outside the range, `pip install --no-deps .` must refuse; the control: the pins do not install there
    either (3.10 was claimed once, where numpy==2.4.6 and contourpy==1.3.3 have no release).

    A Python the documents' install is of (docs/release.md's commands, run once per run: ``documented_install``)
    is checked in that install, not installed again: the same bundle, the same README steps, into a fresh venv.

    Its cost: 80 s (47 CPU-s) on a loaded 2-core machine, besides the documents' install it shares (a venv and pip's
    installs per Python but that one's, torch from the local wheel), the longest single test of the bundle; what it
    shows needs the installs."""
    from packaging.specifiers import SpecifierSet  # noqa: PLC0415 - pip and pytest bring packaging, no declared dependency
    from packaging.version import Version  # noqa: PLC0415 - pip and pytest bring packaging, no declared dependency
    from .test_documented_commands import said_by  # noqa: PLC0415 - the log reader of the documents' runner

    claim = SpecifierSet(tomllib.loads((release / "pyproject.toml").read_text())["project"]["requires-python"])
    here = pythons_here()
    inside = sorted(v for v in here if Version(f"{v[0]}.{v[1]}.0") in claim)
    assert inside, f"no Python of {sorted(here)} is in {claim}"
    assert f"Python {inside[0][0]}.{inside[0][1]}" in (release / "README.md").read_text()
    documented = documented_install / "student" / BUNDLE
    for version in sorted({inside[0], inside[-1]}):
        if _python_version(documented / ".venv" / "bin" / "python") == version:
            bundle = documented
            said = [line for line in said_by(documented_install, "docs/release.md", "python install_torch.py")
                    .splitlines() if line.startswith("torch ")]
            assert len(said) == 1, said  # its one line, among pip's own
            said = said[0]
        else:
            bundle = tmp_path / f"{version}" / BUNDLE
            shutil.copytree(release, bundle)
            python = _venv(here[version], bundle / ".venv")
            if not _cpu_torch_at_hand(python, bundle):
                # No CPU build of torch for this Python here (PyPI's is the 2.7 GB CUDA build): every other pin and
                # the package itself install; grade check runs on the Pythons that have one (3.11 on these machines).
                others = bundle / "requirements-without-torch.txt"
                others.write_text("".join(line for line in (bundle / "requirements.txt").read_text().splitlines(True)
                                          if not line.startswith("torch==")))
                rest = _pip(python, "-r", others.name, cwd=bundle)
                assert rest.returncode == 0, f"{version}: " + rest.stdout[-2000:] + rest.stderr[-3000:]
                package = _pip(python, "--no-deps", ".", cwd=bundle)
                assert package.returncode == 0, package.stdout[-2000:] + package.stderr[-3000:]
                continue
            said = _torch_first(python, bundle).splitlines()[-1]  # after pip's own progress, its one line
            requirements = _pip(python, "-r", "requirements.txt", cwd=bundle)
            assert requirements.returncode == 0, (f"{version}: " + requirements.stdout[-2000:]
                                                  + requirements.stderr[-3000:])
            package = _pip(python, "--no-deps", ".", cwd=bundle)
            assert package.returncode == 0, package.stdout[-2000:] + package.stderr[-3000:]
        assert re.match(r"torch 2\.13\.0\+cpu \(CPU build\), ", said), said
        if not _reachable(TORCH_CPU_INDEX):  # said, with where it was installed from instead
            assert "cannot be reached" in said, said
        else:
            assert said.startswith("torch 2.13.0+cpu (CPU build), from PyTorch's CPU index"), said
        check = subprocess.run([str(bundle / ".venv" / "bin" / "grade"), "check", "--json"], cwd=bundle,
                               capture_output=True, text=True, timeout=600)
        assert check.returncode == 1, check.stdout[-2000:] + check.stderr[-3000:]  # the stubs: not attempted
        assert {s["status"] for s in json.loads(check.stdout)["steps"]} == {"not attempted"}
        if version == inside[0]:
            _a_student_runs_the_magic_in_the_bundle_s_notebook(bundle, tmp_path / "magic")
    below = [v for v in here if Version(f"{v[0]}.{v[1]}.0") < Version(f"{inside[0][0]}.{inside[0][1]}.0")]
    above = [v for v in here if Version(f"{v[0]}.{v[1]}.0") > Version(f"{inside[-1][0]}.{inside[-1][1]}.0")]
    outside = [v for v in (max(below, default=None), min(above, default=None)) if v and v[0] == 3]
    if not outside and os.geteuid() != 0:  # root's Pythons (pyenv's, under /root) are not this user's to run
        pytest.skip("no Python outside the range that this user can run: the refusal is checked as root")
    assert outside, "no Python just outside the range on this machine: the refusal cannot be checked"
    for version in outside:
        bundle = tmp_path / f"{version}" / BUNDLE
        shutil.copytree(release, bundle)
        python = _venv(here[version], bundle / ".venv")
        package = _pip(python, "--no-deps", ".", cwd=bundle)
        assert package.returncode != 0 and "requires a different Python" in package.stdout + package.stderr, (
            f"{version}: " + package.stdout[-2000:] + package.stderr[-2000:])
        assert not (bundle / ".venv" / "bin" / "grade").exists()
        requirements = _pip(python, "-r", "requirements.txt", cwd=bundle)
        assert requirements.returncode != 0, f"{version}: the pins install here, so the range could be wider"


KERNEL_RUN = """
import json, sys
from jupyter_client.manager import start_new_kernel
cells = json.load(open(sys.argv[1]))["cells"]
manager, client = start_new_kernel(kernel_name="python3")
shown = []
def keep(msg):
    content = msg["content"]
    shown.append(content.get("text", "") + content.get("data", {}).get("text/plain", ""))
try:
    for cell in cells:
        if cell["cell_type"] == "code":
            shown.clear()
            client.execute_interactive("".join(cell["source"]), timeout=600, output_hook=keep)
finally:
    client.stop_channels()
    manager.shutdown_kernel(now=True)
print("".join(shown))
"""


def _a_student_runs_the_magic_in_the_bundle_s_notebook(bundle: Path, work: Path) -> None:
    """In the fresh venv of the bundle's own install steps: carol's code in a copy (in ``work``: the bundle is only
    read) of the bundle's causal_attention notebook, run in that venv's kernel down to ``%grade check
    causal_attention``, reads as that venv's ``grade check``."""
    from .test_bundle_notebooks import fill  # noqa: PLC0415 - imported on first use: torch is slow to load

    shutil.copytree(bundle / "notebooks", work / "notebooks")
    path = work / "notebooks" / "causal_attention.ipynb"
    fill(path, ROOT / "samples" / "submissions" / "carol")
    data = json.loads(path.read_text())
    data["cells"].append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                          "source": "%grade check causal_attention"})
    path.write_text(json.dumps(data))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "JUPYTER"))}
    env["HOME"] = str(work)
    magic = subprocess.run([str(bundle / ".venv" / "bin" / "python"), "-c", KERNEL_RUN, str(path)],
                           cwd=path.parent, env=env, capture_output=True, text=True, timeout=900)
    assert magic.returncode == 0, magic.stdout[-2000:] + magic.stderr[-3000:]
    cli = subprocess.run([str(bundle / ".venv" / "bin" / "grade"), "check", str(path)], cwd=bundle, env=env,
                         capture_output=True, text=True, timeout=600)
    likely = "likely: masked after the softmax without renormalizing the rows"
    assert likely in magic.stdout and likely in cli.stdout, magic.stdout[-3000:] + cli.stdout[-3000:]
    assert cli.stdout.split("\n\n", 1)[0] in magic.stdout  # the same table
    assert "causal_attention.CausalAttention           FAILED" in magic.stdout

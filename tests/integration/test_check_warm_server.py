"""``grade check``'s warm server (``autograder/check/warm_server.py``): the second check loads no torch, and says the
same words with the same exit status as a check done in-process; Ctrl-C ends the served check and all it
started; an idle server ends; a folder others could write in is never used.

The suite turns the server off for every other test (``tests/conftest.py``); these turn it on, each in a short
folder of its own, and remove that folder's socket when done (the server then ends within seconds).
"""
from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from autograder.check import warm_server

from .conftest import CORPUS, ROOT, run_grade

#: runs ``grade check ARGS`` as the console script does, then says on its last stderr line whether torch was loaded
WRAPPER = ("import sys\n"
           "from autograder.cli import main\n"
           "try:\n"
           "    main(sys.argv[1:], prog_name='grade')\n"
           "except SystemExit as exc:\n"
           "    code = exc.code\n"
           "sys.stderr.write('\\ntorch loaded: %s\\n' % ('torch' in sys.modules))\n"
           "sys.exit(code)\n")


@pytest.fixture
def warm(monkeypatch):
    folder = Path(tempfile.mkdtemp(prefix="gcs-", dir="/tmp"))  # a socket's name must be short
    env = {**os.environ, warm_server.ENV: "1", warm_server.DIR_ENV: str(folder), warm_server.IDLE_ENV: "300"}
    yield folder, env
    shutil.rmtree(folder, ignore_errors=True)  # its server sees its socket gone, and ends
    _wait_for(lambda: not _processes(folder), 60)


def _grade(env: dict, *args: str, cwd: Path = ROOT, timeout: float = 600) -> tuple[int, str, str, bool]:
    """(exit status, stdout, stderr without the wrapper's line, whether torch was loaded)."""
    done = subprocess.run([sys.executable, "-c", WRAPPER, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)  # a server holding the caller's pipes would make this wait: it must not
    err, _, said = done.stderr.rpartition("\ntorch loaded: ")
    return done.returncode, done.stdout, err, said.strip() == "True"


def _processes(folder: Path) -> list[int]:
    """The processes started with this test's server folder in their environment: the server, its checks and
    their hosts and workers (a fork keeps the environment it was started with)."""
    marker = f"{warm_server.DIR_ENV}={folder}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if marker in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                    found.append(int(entry))
            except OSError:
                continue
    return found


def _interruptible() -> None:
    """Ctrl-C as a terminal gives it: a suite run in the background (``make test &``) ignores SIGINT, and a
    Python started so ignores it too."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


# -- unit ----------------------------------------------------------------------------------------------
@pytest.mark.unit
def test_a_folder_others_may_write_in_is_never_used_and_settings_name_another_server(monkeypatch, tmp_path):
    own = Path(tempfile.mkdtemp(prefix="gcs-", dir="/tmp"))
    try:
        monkeypatch.setenv(warm_server.DIR_ENV, str(own))
        assert warm_server.socket_path() is not None  # control: a folder of ours, 0700
        os.chmod(own, 0o777)
        assert warm_server.socket_path() is None
        os.chmod(own, 0o700)
        first = warm_server.socket_path()
        monkeypatch.setenv("AUTOGRADER_ISOLATION", "rlimits")  # a setting that could change an answer
        assert warm_server.socket_path() != first
        monkeypatch.setenv(warm_server.ENV, "0")
        assert not warm_server.enabled()
    finally:
        shutil.rmtree(own, ignore_errors=True)


@pytest.mark.unit
def test_an_edited_kit_file_names_another_server_and_its_bytecode_does_not(monkeypatch, tmp_path):
    """A kit whose code or public cases changed is served by a server of its own (the key names every .py, .json
    and .safetensors file, at any depth, by its size and time); control: a new __pycache__ file changes nothing."""
    kit = tmp_path / "autograder"
    (kit / "check" / "__pycache__").mkdir(parents=True)
    (kit / "cli.py").write_text("x = 1\n")
    (kit / "check" / "public_cases.json").write_text("{}\n")
    monkeypatch.setattr(warm_server, "PACKAGE", kit)
    first = warm_server.key()
    (kit / "check" / "__pycache__" / "run.cpython-311.pyc").write_bytes(b"compiled")
    assert warm_server.key() == first
    (kit / "check" / "public_cases.json").write_text('{"cases": []}\n')
    second = warm_server.key()
    assert second != first
    os.utime(kit / "cli.py", ns=(1, 1))
    assert warm_server.key() != second


@pytest.mark.unit
def test_a_folder_root_made_under_sudo_leaves_the_users_own_folder_usable(monkeypatch):
    """``sudo grade check`` that keeps ``XDG_RUNTIME_DIR`` makes root's folder there: the user's checks still find a
    folder of their own (the name says the uid). Control: a folder of the user's name that root owns is not used."""
    if os.getuid() != 0:
        pytest.skip("needs root to make a folder owned by another uid")
    runtime = Path(tempfile.mkdtemp(prefix="xdg-", dir="/tmp"))  # a socket's name must be short
    monkeypatch.setattr(warm_server, "key", lambda: "k")
    monkeypatch.delenv(warm_server.DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    try:
        as_root = warm_server.socket_path()  # the sudo run: root, in the user's runtime folder
        assert as_root is not None and as_root.parent.stat().st_uid == 0
        theirs = runtime / "attention-grade-4321"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, 4321, 4321)
        monkeypatch.setattr(os, "getuid", lambda: 4321)
        monkeypatch.setattr(os, "geteuid", lambda: 4321)  # whose a folder must be (worker/owned_dirs.py)
        path = warm_server.socket_path()
        assert path is not None and path.parent == theirs and as_root.parent != theirs
        os.chown(theirs, 0, 0)  # control: the same name, root's
        assert warm_server.socket_path() is None
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def _key(*prefix: str, limit=None) -> str:
    code = "from autograder.check import warm_server; print(warm_server.key())"
    preexec = (lambda: __import__("resource").setrlimit(*limit)) if limit else None
    return subprocess.run([*prefix, sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                          preexec_fn=preexec).stdout.strip()


@pytest.mark.unit
def test_a_caller_with_another_niceness_or_limit_names_another_server():
    """A check is a fork of the server and inherits what the server may use: a caller whose niceness, resource
    limits or CPUs differ from the first caller's is served by a server of its own. Control: two plain callers
    name the same server."""
    import resource  # noqa: PLC0415 - POSIX

    plain = _key()
    assert _key() == plain
    if os.getpriority(os.PRIO_PROCESS, 0) <= 12:  # room to be nicer
        assert _key("nice", "-n", "7") != plain
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    assert _key(limit=(resource.RLIMIT_AS, (8 << 30 if soft == resource.RLIM_INFINITY else soft // 2, hard))) != plain
    if shutil.which("taskset") and len(os.sched_getaffinity(0)) > 1:
        assert _key("taskset", "-c", str(min(os.sched_getaffinity(0)))) != plain


# -- end to end ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_served_check_says_what_an_in_process_check_says_without_loading_torch(warm, tmp_path):
    folder, env = warm
    first = _grade(env, "check", str(CORPUS / "correct_einsum"))
    assert first[0] == 0 and first[3], first  # checked here (torch loaded), and a server left behind
    assert list(folder.glob("*.sock"))
    cold = {**env, warm_server.ENV: "0"}
    page_dir = tmp_path / "pages"
    page_dir.mkdir()
    hostile = tmp_path / "hostile"  # writes "exit 0" on every socket it can reach: the caller's channel is not one
    shutil.copytree(CORPUS / "stubs", hostile)
    module = hostile / "simple_attention.py"
    module.write_text("import os, stat\nfor fd in range(3, 256):\n    try:\n"
                      "        if stat.S_ISSOCK(os.fstat(fd).st_mode):\n"
                      "            os.write(fd, b'{\"exit\": 0}\\n')\n    except OSError:\n        pass\n"
                      + module.read_text())
    # (arguments, working folder, whether the in-process answer comes from a fresh console script: the control that
    # loads torch there, and the usage error, whose words name the program as the console script does; the others
    # come from a fork of the suite's warm process, tests/support/warm_grade.py)
    cases = [
        (["check", str(hostile)], ROOT, True),
        (["check", str(CORPUS / "bug_no_scaling")], ROOT, False),
        (["check", str(CORPUS / "correct_einsum"), "--step", "simple_attention"], ROOT, False),
        (["check", "bug_softmax_dim0", "--json"], CORPUS, False),  # a path relative to the caller's folder
        (["check", str(CORPUS / "syntax_error")], ROOT, False),
        (["check", str(tmp_path / "nowhere")], ROOT, True),  # the user's mistake: exit 2, the same words
        (["check", str(CORPUS / "bug_context_transposed"), "--html", "page.html"], page_dir, False),
    ]
    for args, cwd, fresh in cases:
        served = _grade(env, *args, cwd=cwd)
        page = (page_dir / "page.html").read_text() if (page_dir / "page.html").exists() else None
        assert served[3] is False, (args, served)  # answered by the server: no torch in this process
        if fresh:
            here = _grade(cold, *args, cwd=cwd)
            assert here[3] is True, (args, here)  # control: checked in-process
        else:
            done = run_grade(*args, cwd=cwd, env=cold, timeout=600)
            here = (done.returncode, done.stdout, done.stderr)
        assert served[:3] == here[:3], args
        if "--html" in args:
            assert page is not None and page == (page_dir / "page.html").read_text()


@pytest.mark.slow
def test_ctrl_c_or_a_killed_caller_ends_a_served_check_and_everything_it_started(warm, tmp_path):
    folder, env = warm
    assert _grade(env, "check", str(CORPUS / "correct_einsum"), "--step", "simple_attention")[0] == 0
    assert _wait_for(lambda: len(_processes(folder)) == 1, 60)  # the server alone
    spinning = tmp_path / "spinning"  # every step's worker spins in the import: minutes of checking, unless ended
    shutil.copytree(CORPUS / "stubs", spinning)
    module = spinning / "simple_attention.py"
    module.write_text("while True:\n    pass\n" + module.read_text())
    for how in ("Ctrl-C", "kill -9"):
        client = subprocess.Popen([sys.executable, "-c", WRAPPER, "check", str(spinning)], cwd=ROOT, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_interruptible)
        try:
            # besides the server: the served check, its host and the worker spinning in the student's loop
            assert _wait_for(lambda: len(set(_processes(folder)) - {client.pid}) >= 4, 120), _processes(folder)
            client.send_signal(signal.SIGINT if how == "Ctrl-C" else signal.SIGKILL)
            out, err = client.communicate(timeout=120)  # the check held this caller's pipes: ended, it holds none
        finally:
            client.kill()
        if how == "Ctrl-C":
            assert client.returncode != 0 and "Aborted!" in err, (client.returncode, err)
        assert _wait_for(lambda: len(_processes(folder)) == 1, 60), (how, _processes(folder))  # the server alone


@pytest.mark.slow
def test_an_idle_server_ends_on_its_own(warm):
    folder, env = warm  # this one's server waits 300 s for a check
    quick = Path(tempfile.mkdtemp(prefix="gcs-", dir="/tmp"))
    try:
        step = ["check", str(CORPUS / "correct_einsum"), "--step", "simple_attention"]
        assert _grade(env, *step)[0] == 0
        assert _grade({**env, warm_server.DIR_ENV: str(quick), warm_server.IDLE_ENV: "2"}, *step)[0] == 0
        assert _wait_for(lambda: not _processes(quick) and not list(quick.glob("*.sock")), 90)
        # control: the server told to wait longer is still there, and still answers
        assert _processes(folder) and list(folder.glob("*.sock"))
        assert _grade(env, *step)[3] is False
    finally:
        shutil.rmtree(quick, ignore_errors=True)


@pytest.mark.slow
def test_a_served_check_writes_with_the_callers_encoding_and_errors_handler(warm, tmp_path):
    """``PYTHONIOENCODING=ascii``: a note naming a non-ASCII folder is written as the caller's stderr writes it
    (``backslashreplace``), not a traceback (a handler reset to strict would raise)."""
    folder, env = warm
    assert _grade(env, "check", str(CORPUS / "correct_einsum"), "--step", "simple_attention")[0] == 0
    odd = tmp_path / "\u00fcbung"
    shutil.copytree(CORPUS / "correct_einsum", odd)
    args = ("check", str(odd / "simple_attention.py"))
    served = _grade({**env, "PYTHONIOENCODING": "ascii"}, *args)
    here = _grade({**env, "PYTHONIOENCODING": "ascii", warm_server.ENV: "0"}, *args)
    assert served[3] is False and here[3] is True  # control: the second is in-process
    assert served[:3] == here[:3] and "\\xfc" in here[2]


@pytest.mark.slow
def test_the_server_keeps_nothing_its_first_caller_inherited(warm, tmp_path):
    """``flock LOCK grade check``: once grade check has ended, the lock is free (a server forked from that
    first check that kept flock's descriptor would hold it for its idle time)."""
    folder, env = warm
    lock = tmp_path / "lock"
    fd = os.open(lock, os.O_CREAT | os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    done = subprocess.run([sys.executable, "-c", WRAPPER, "check", str(CORPUS / "correct_einsum"), "--step",
                           "simple_attention"], cwd=ROOT, env=env, pass_fds=[fd], capture_output=True, timeout=600)
    os.close(fd)
    assert done.returncode == 0 and list(folder.glob("*.sock"))  # control: a server was left
    other = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError if the server held it
    finally:
        os.close(other)


@pytest.mark.slow
def test_a_check_is_not_run_at_the_niceness_of_the_check_that_left_the_server(warm, tmp_path):
    """``nice -n 7 grade check`` first: the server it leaves runs at niceness 7, and a plain check after it is not
    handed to that server (it checks in-process and leaves its own, which the next plain check uses)."""
    folder, env = warm
    args = ("check", str(CORPUS / "correct_einsum"), "--step", "simple_attention")
    niced = subprocess.run(["nice", "-n", "7", sys.executable, "-c", WRAPPER, *args], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600)
    assert niced.returncode == 0 and len(list(folder.glob("*.sock"))) == 1
    assert _grade(env, *args)[::3] == (0, True)  # not served: torch loaded here
    assert len(list(folder.glob("*.sock"))) == 2
    assert _grade(env, *args)[::3] == (0, False)  # control: a plain caller is served by the plain server
    niced_again = subprocess.run(["nice", "-n", "7", sys.executable, "-c", WRAPPER, *args], cwd=ROOT, env=env,
                                 capture_output=True, text=True, timeout=600)
    assert niced_again.returncode == 0 and niced_again.stderr.rstrip().endswith("torch loaded: False")

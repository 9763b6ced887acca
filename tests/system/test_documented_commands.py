"""Every command block of README.md and docs/*.md runs as written, in order, in a fresh copy of the kit.

**Blocks.** A fenced block with no language, or ``bash``/``sh``/``console``, is a command block; other languages
(yaml, csv, python) are not commands and are not run, except python meant to run, which ``PYTHON`` names (with
a reason when it is skipped). ``NOT_COMMANDS`` names the untagged blocks that are pictures, not commands.
``test_every_block_is_classified`` fails on a new block nobody classified, and on an entry of these tables that
no longer matches a line, so the tables cannot go stale.

**Where.** The documents run in fresh copies of the repository (its tracked and untracked, not ignored files,
committed into a new git repository), each with a fresh ``HOME``. A document runs in a copy of its own, unless
``CONTINUES`` says it continues another (export.md exports the class instructors.md graded): it then runs after
that one, in its copy and with its ``HOME``. Each block starts in the copy's folder, in one ``bash`` for the whole
block (a ``cd`` or ``source`` holds until the block ends); ``BLOCK_START`` names the blocks that start elsewhere (the
student bundle's README starts in the unzipped bundle). The copy's ``.venv`` is what ``make install`` leaves: a venv
with the kit installed editable from the copy, layered over the kit's own venv (a ``.pth`` line) so torch is not
installed again; ``pip install -e .`` lines run for real, into it. It is built once per run, in a first copy, and
each copy gets a copy of it with that copy's paths written in (a venv names its own folder in its scripts and in
the editable install's finder). docs/release.md's copy is run once per run and kept for it (``KEPT``):
tests/system/test_release.py reads the student install its commands made, instead of making the same one again.
Every command must exit 0 unless ``EXPECTED_RC`` says otherwise, with its reason.
After the last block of a copy, ``git status`` in it must show nothing but the placeholders the test filled:
everything the commands wrote is either ignored by .gitignore or identical to what is committed (``grade assign``
regenerates ``exercises/`` byte for byte).

**Run once.** A command shown on two pages runs on one. The README shows the first commands of each page: a README
line that a page runs is run there, in that page's context, and not again in the README's copy. Between pages,
``RUN_ELSEWHERE`` names each line run on another page, with its reason, and ``REPEATED`` each line run on every page
that shows it, with its reason (the same words, in other places: ``grade check`` in the kit and in the unzipped
bundle); ``test_no_command_runs_twice`` fails on any other line two pages would run.

**Placeholders filled** (the command is run as written; the test makes what it names exist first):
``submissions/`` (three submissions of the test corpus, ``SUBMISSIONS``: not the samples, which ``make demo``
has graded into ``results/`` already), ``roster.csv`` (every student the commands grade), ``path/to/folder`` (alice's
correct submission), ``last-term-submissions`` and ``../last-term/submissions`` (corpus submissions), ``~``
(a fresh HOME per copy, whose ``~/.jupyter/nbgrader_config.py`` sets nbgrader's exchange to a temporary
folder: the hub's global config), two students' notebooks in ``~/attention-course/submitted/`` for docs/similarity.md
(frank's are the course's source notebooks, erin's the untouched release: it continues docs/nbgrader.md, whose
course it is), and, after each ``nbgrader release_assignment``, a student who fetches the assignment and
submits it through that exchange (what the comment "students: ... Fetch, work, Submit" says happens).

**Placeholders substituted** (``SUBSTITUTE``, each with its reason): ``tls://login1:8786`` (a scheduler the test
starts on loopback, with one ``dask worker``, both over TLS with the certificates the document's own commands
made, started once they are made), ``/shared/attention`` (the copy; so the certificates' ``/shared/attention-tls``
is a folder beside it), ``/tmp/ag`` (a temporary folder: a fixed path in /tmp is shared by everyone on the
machine).

**Skipped** (``SKIP_LINES`` and ``PYTHON``, each with its reason): ``make test`` (it is what runs this test)
and docs/cluster.md's Slurm script (it needs a Slurm cluster; tests/system/test_cluster.py runs its job script).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import ROOT
from tests.support import scheduler_file
from tests.support.once import built_once

DOCUMENTS = ["README.md"] + sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))
COMMAND_LANGUAGES = {"", "bash", "sh", "console"}
FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
SAMPLES = ROOT / "samples" / "submissions"
KIT_VENV = Path(sys.prefix)
#: submissions/: student -> a submission of tests/corpus/submissions
SUBMISSIONS = {"grace": "correct_einsum", "heidi": "bug_no_scaling", "ivan": "bug_mask_wrong_corner"}

#: untagged blocks that are not commands: (document, the block's first line starts with) -> what it is
NOT_COMMANDS = {
    ("docs/isolation.md", "grade autograde                       trusted:"): "the process tree, a picture",
}
#: python blocks: (document, first line starts with) -> None to run it, or the reason it is not run
PYTHON = {
    ("docs/adding-a-step.md", "def scale_by_two(x):"): "a fragment of solutions/simple_attention.py "
                                                          "(tests/integration/test_adding_a_step.py does these steps)",
    ("docs/adding-a-step.md", '@step("simple_attention.scale_by_two")'): "a fragment of a suite file "
                                                                         "(tests/integration/test_adding_a_step.py)",
    ("docs/cluster.md", "# slurm_grading.py"): "needs a Slurm cluster (sbatch, a login node); "
                                               "tests/system/test_cluster.py builds its job script and runs the "
                                               "worker command it holds",
}
#: command lines not run: line -> reason
SKIP_LINES = {
    "make test": "it runs the whole test suite, this test included: running it from here would recurse",
}
#: (document or None for all, old, new, reason): applied to every line of the document
SUBSTITUTE = [
    (None, "tls://login1:8786", "{scheduler}", "a real scheduler, started by the test on loopback over TLS with the "
                                               "certificates the document's commands made"),
    (None, "/shared/attention", "{course}", "the shared folder of a cluster: the copy itself"),
    (None, "/tmp/ag", "{tmp}/ag", "a fixed path in /tmp is shared by everyone on the machine"),
]
#: (document, line) -> (exit status, why)
EXPECTED_RC = {
    ("docs/release.md", "grade check"): (1, "the bundle's exercises are untouched stubs: grade check exits 1 while "
                                            "anything fails (2 would be a usage error)"),
    ("docs/release.md", "grade check notebooks/causal_attention.ipynb"): (1, "the bundle's notebooks hold the "
                                                                             "untouched stubs too"),
    ("docs/students.md", "grade check"): (1, "exercises/ holds the stubs"),
    ("docs/students.md", "grade check --json"): (1, "exercises/ holds the stubs"),
}
#: (document, the block's first command starts with) -> a shell line run first, instead of `cd COURSE`
BLOCK_START = {
    ("docs/release.md", "python3 -m venv .venv"): "mkdir -p {tmp}/student && cd {tmp}/student && "
                                                  "unzip -q {course}/dist/attention-exercises.zip && "
                                                  "cd attention-exercises",
    ("docs/nbgrader.md", "nbgrader release_assignment attention"): "cd ~/attention-course",  # "run every nbgrader
    # command from here", says the document's first block
}
#: after a line: shell lines that play a part the line's comment says someone else plays
AFTER = {
    "nbgrader release_assignment attention": "(mkdir -p {tmp}/a-student && cd {tmp}/a-student && "
                                             "nbgrader fetch_assignment attention --course attention && "
                                             "nbgrader submit attention --course attention) >/dev/null 2>&1",
}
#: document -> (the document it continues, in that one's copy and HOME, after it; why)
CONTINUES = {
    "docs/export.md": ("docs/instructors.md", "it exports the class that instructors.md grades (its first line says "
                                              "so, and links there)"),
    "docs/similarity.md": ("docs/nbgrader.md", "its --nbgrader ~/attention-course is the course nbgrader.md makes"),
}
#: (document, line) -> (the document that runs it, why it is not run here too)
RUN_ELSEWHERE = {
    ("docs/adding-a-step.md", "grade assign"): ("docs/release.md", "here it would regenerate what is committed, as "
                                                "release.md's does: this test makes none of the page's edits "
                                                "(tests/integration/test_adding_a_step.py makes them, and assigns "
                                                "them)"),
}
#: line -> why it runs on every page that shows it
REPEATED = {
    "grade check": "students.md checks the kit's exercises/; release.md the exercises of the unzipped bundle, "
                   "with the bundle's own grade installed as a student installs it",
}


@dataclass
class Block:
    document: str
    language: str
    text: str
    line: int

    @property
    def first(self) -> str:
        return self.text.splitlines()[0] if self.text.strip() else ""

    def commands(self) -> list[str]:
        """Logical lines (``\\`` continuations joined), without blank and comment-only lines."""
        out, pending = [], ""
        for raw in self.text.splitlines():
            if raw.rstrip().endswith("\\"):
                pending += raw.strip()[:-1].strip() + " "
                continue
            line = (pending + raw.strip()).strip()
            pending = ""
            if line and not line.startswith("#"):
                out.append(line)
        return out


def blocks(document: str) -> list[Block]:
    text = (ROOT / document).read_text(encoding="utf-8")
    return [Block(document, m.group(1).lower(), m.group(2), text[:m.start()].count("\n") + 1)
            for m in FENCE.finditer(text)]


def _lookup(table: dict, block: Block):
    for (document, start), value in table.items():
        if document == block.document and block.first.startswith(start):
            return True, value
    return False, None


def command_blocks(document: str) -> list[Block]:
    return [b for b in blocks(document) if b.language in COMMAND_LANGUAGES and not _lookup(NOT_COMMANDS, b)[0]]


def bare(line: str) -> str:
    """A command line without its trailing comment."""
    return re.sub(r"\s+#.*$", "", line).strip()


def _lines(document: str) -> list[str]:
    return [bare(line) for block in command_blocks(document) for line in block.commands()]


def runs_elsewhere(document: str, line: str) -> str | None:
    """The document that runs this line of ``document``, when another one does (README's lines run on a page that
    runs them: the first, in DOCUMENTS' order); None when it runs here."""
    key = bare(line)
    if (document, key) in RUN_ELSEWHERE:
        return RUN_ELSEWHERE[(document, key)][0]
    if document == "README.md":
        return next((page for page in DOCUMENTS if page != document and key in lines_run(page)), None)
    return None


def lines_run(document: str) -> list[str]:
    """The lines the test runs in ``document``'s copy, in order."""
    return [line for line in _lines(document) if line not in SKIP_LINES and not runs_elsewhere(document, line)]


def runs() -> list[tuple[str, ...]]:
    """The copies: the documents run one after another in each, a document before the ones that continue it."""
    out = []
    for document in DOCUMENTS:
        if document in CONTINUES:
            continue
        chain = [document]
        while follower := next((d for d, (before, _) in CONTINUES.items() if before == chain[-1]), None):
            chain.append(follower)
        if any(lines_run(d) for d in chain):
            out.append(tuple(chain))
    return out


def run_twice(lines: dict[str, list[str]]) -> dict[str, list[str]]:
    """The lines (but REPEATED's) that two documents would run: line -> the documents."""
    where: dict[str, list[str]] = {}
    for document, run in lines.items():
        for line in dict.fromkeys(run):
            where.setdefault(line, []).append(document)
    return {line: docs for line, docs in where.items() if len(docs) > 1 and line not in REPEATED}


# -- the tables hold --------------------------------------------------------------------------------------
@pytest.mark.unit
def test_every_block_is_classified():
    seen_not, seen_python, seen_skip, seen_rc = set(), set(), set(), set()
    lines = {}
    for document in DOCUMENTS:
        for block in blocks(document):
            if block.language in COMMAND_LANGUAGES:
                found, _ = _lookup(NOT_COMMANDS, block)
                if found:
                    seen_not.add(next(k for k in NOT_COMMANDS if k[0] == document and block.first.startswith(k[1])))
                    continue
                for line in block.commands():
                    lines.setdefault(document, []).append(bare(line))
                    seen_skip.add(bare(line)) if bare(line) in SKIP_LINES else None
                    seen_rc.add((document, bare(line))) if (document, bare(line)) in EXPECTED_RC else None
            elif block.language == "python":
                found, _ = _lookup(PYTHON, block)
                assert found, f"{document}:{block.line}: a python block: say in PYTHON whether it is meant to run"
                seen_python.add(next(k for k in PYTHON if k[0] == document and block.first.startswith(k[1])))
            else:
                assert block.language in {"yaml", "csv", "text", "json", "toml"}, \
                    f"{document}:{block.line}: ```{block.language}: a command block, or not? classify it here"
    assert seen_not == set(NOT_COMMANDS) and seen_python == set(PYTHON)
    assert seen_skip == set(SKIP_LINES) and seen_rc == set(EXPECTED_RC)
    for document, old, _, _ in SUBSTITUTE:
        assert any(old in line for doc, ls in lines.items() if document in (None, doc) for line in ls), old
    for document, start in BLOCK_START:
        assert any(b.commands() and b.commands()[0].startswith(start) for b in command_blocks(document)), start
    for line in AFTER:
        assert any(line in map(bare, ls) for ls in lines.values()), line
    for document, (before, _) in CONTINUES.items():
        assert document in DOCUMENTS and before in DOCUMENTS and before not in CONTINUES, document
    # the documents this test runs, and what it runs there: the README and the workflows
    assert {d for d in DOCUMENTS if lines_run(d)} >= {"README.md", "docs/nbgrader.md", "docs/release.md",
                                                      "docs/export.md", "docs/cluster.md", "docs/gradescope.md",
                                                      "docs/students.md", "docs/instructors.md"}
    assert lines_run("README.md") == ["make demo"]
    # the nbgrader sequence: the course made first, the assignment released before it is collected
    nbgrader = lines["docs/nbgrader.md"]
    assert "grade nbgrader --course-dir ~/attention-course" in nbgrader
    assert nbgrader.index("nbgrader release_assignment attention") < nbgrader.index("nbgrader collect attention")


@pytest.mark.unit
def test_no_command_runs_twice():
    assert run_twice({d: lines_run(d) for d in DOCUMENTS}) == {}
    for (document, line), (where, _) in RUN_ELSEWHERE.items():
        assert line in _lines(document) and line in lines_run(where), (document, line)
    for line in REPEATED:  # the table holds: each line is run on two pages at least
        assert sum(line in lines_run(d) for d in DOCUMENTS) > 1, line
    # the README shows each page's first commands; it runs only what no page runs
    assert all(runs_elsewhere("README.md", line) for line in _lines("README.md")
               if line not in SKIP_LINES and line != "make demo")
    # the control: a line two pages run is found, and a REPEATED one is not
    assert run_twice({"a.md": ["grade assign", "grade check"], "b.md": ["grade assign", "grade check"]}) == \
        {"grade assign": ["a.md", "b.md"]}


@pytest.mark.unit
def test_the_parser_sees_blocks_as_written():
    """The control for the tables above: a known block, split as a shell would."""
    block = next(b for b in command_blocks("docs/cluster.md") if b.first == "cd /shared/attention")
    assert block.commands() == ["cd /shared/attention",
                                "grade autograde /shared/attention/submissions --out /shared/attention/results "
                                "--executor dask --scheduler tls://login1:8786 --require-isolation namespaces "
                                "--tls-ca-file /shared/attention-tls/ca.pem "
                                "--tls-cert /shared/attention-tls/grader.pem "
                                "--tls-key /shared/attention-tls/grader.key"]
    assert [b.language for b in blocks("docs/export.md")].count("csv") == 1


# -- running them ---------------------------------------------------------------------------------------
def _copy_repository(dest: Path) -> None:
    """The repository's tracked and untracked, not ignored, files, committed into a new repository."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        source = ROOT / rel
        if source.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.org"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "the kit, as copied"]):
        subprocess.run(git + args, cwd=dest, check=True, capture_output=True)


def _layered_venv(course: Path) -> Path:
    """course/.venv: the kit installed editable from ``course``, over the kit's own venv's packages."""
    venv = course / ".venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=600)
    site = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    kit_site = next(p for p in map(Path, sys.path) if p.name == "site-packages" and p.is_relative_to(KIT_VENV))
    (site / "_kit_venv.pth").write_text(str(kit_site) + "\n")
    # ensurepip's setuptools would shadow the kit venv's, and grade release pins what it finds installed
    # (torch needs setuptools>=77): the copy's venv must see the kit's environment, not an older one
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "uninstall", "-y", "-q", "setuptools"], check=True,
                   capture_output=True, timeout=300)
    run = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps",
                          "-e", str(course)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    (venv / ".installed").touch()  # make's stamps: the kit, and the test tools over it
    (venv / ".installed-test").touch()
    return venv


def first_copy_once(tmp_path_factory) -> Path:
    """The first copy of the repository, with its venv: built once per run (tests/support/once.py; its documents'
    tests run on every xdist worker, which built one each, 8 CPU-s apiece), copied for each document."""
    def build(folder: Path) -> None:
        (folder / "course").mkdir()
        _copy_repository(folder / "course")
        _layered_venv(folder / "course")

    folder, _ = built_once(tmp_path_factory, "documented-first-copy", build)
    return folder / "course"


def _copy_of(first: Path, dest: Path) -> None:
    """``first`` copied to ``dest``, its venv's own paths (the scripts' interpreter, ``activate``, the editable
    install's finder and record) rewritten to name ``dest``."""
    shutil.copytree(first, dest, symlinks=True)
    old, new = str(first).encode(), str(dest).encode()
    for path in (dest / ".venv").rglob("*"):
        if path.is_symlink() or not path.is_file() or path.suffix == ".pyc" or path.stat().st_size > 1 << 20:
            continue
        data = path.read_bytes()
        if old in data:
            path.write_bytes(data.replace(old, new))
    for cache in (dest / ".venv").glob("lib/python*/site-packages/__pycache__"):
        shutil.rmtree(cache)  # the finder's bytecode holds the first copy's path


class Scheduler:
    """A ``dask scheduler`` and one ``dask worker`` on loopback, run by the copy's venv in the copy, over TLS with the
    cluster's certificate in ``tls`` (docs/cluster.md's commands made it)."""

    def __init__(self, python: Path, cwd: Path, env: dict, logs: Path, tls: Path):
        self.procs = []
        certificate = ["--tls-ca-file", str(tls / "ca.pem"), "--tls-cert", str(tls / "cluster.pem"),
                       "--tls-key", str(tls / "cluster.key")]
        where, log = logs / "dask-scheduler.json", logs / "dask-scheduler.log"
        self.procs.append(self._start(python, cwd, env, log, ["scheduler", "--host", "127.0.0.1", "--port", "0",
                                                             "--scheduler-file", str(where), "--no-dashboard",
                                                             "--protocol", "tls", *certificate]))
        self.address = scheduler_file.address(where, self.procs[0], log)
        self.procs.append(self._start(python, cwd, env, logs / "dask-worker.log",
                                      ["worker", self.address, "--nworkers", "1", "--nthreads", "1",
                                       "--host", "127.0.0.1", "--no-dashboard", *certificate]))

    @staticmethod
    def _start(python: Path, cwd: Path, env: dict, log: Path, args: list[str]) -> subprocess.Popen:
        with open(log, "wb") as out:  # the process holds its own copy of the file until it is stopped
            return subprocess.Popen([str(python), "-m", "dask", *args], cwd=cwd, env=env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)

    def close(self) -> None:
        for proc in reversed(self.procs):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _fill(course: Path, home: Path, tmp: Path) -> list[str]:
    """Make the placeholders exist; return the paths in the copy that the test made (git status may show them)."""
    corpus = ROOT / "tests" / "corpus" / "submissions"
    for student, name in SUBMISSIONS.items():  # not the samples: make demo has graded those into results/ already
        shutil.copytree(corpus / name, course / "submissions" / student)
    (course / "roster.csv").write_text("name,login,email\n" + "".join(
        f"{who.title()} X,{who},{who}@uni.edu\n" for who in ("alice", "bob", "carol", "dave", *SUBMISSIONS, "frank",
                                                             "erin", "root")))
    shutil.copytree(SAMPLES / "alice", course / "path" / "to" / "folder")
    for name in ("correct_loops", "bug_softmax_dim0"):
        shutil.copytree(corpus / name, course / "last-term-submissions" / name)
        shutil.copytree(corpus / name, tmp / "last-term" / "submissions" / name)
    (home / ".jupyter").mkdir(parents=True)
    (tmp / "exchange").mkdir()
    (tmp / "exchange").chmod(0o777)
    (home / ".jupyter" / "nbgrader_config.py").write_text(f"c.Exchange.root = {str(tmp / 'exchange')!r}\n")
    return ["submissions/", "roster.csv", "path/", "last-term-submissions/"]


def _two_students(home: Path) -> None:
    """docs/similarity.md's course (the one docs/nbgrader.md made) gets two students' notebooks in submitted/:
    frank's are the source notebooks (the solutions), erin's the untouched release."""
    course = home / "attention-course"
    for student, folder in (("frank", "source"), ("erin", "release")):
        dest = course / "submitted" / student / "attention"
        shutil.copytree(course / folder / "attention", dest)
        (dest / "timestamp.txt").write_text("2025-03-14 20:00:00.000000 UTC")


#: before a document that continues another: what the test makes first, in its HOME
BEFORE = {"docs/similarity.md": _two_students}


def _script(block: Block, values: dict) -> tuple[str, list[tuple[int, str, int, str | None]]]:
    """The block as one bash script printing each line's exit status; and per line (index, line, rc, skip)."""
    commands = block.commands()
    found, start = _lookup({k: v for k, v in BLOCK_START.items()}, Block(block.document, "", "\n".join(commands), 0))
    lines = [f"cd {values['course']}" if not found else start.format(**values)]
    plan = []
    for i, line in enumerate(commands):
        text = line
        for document, old, new, _ in SUBSTITUTE:
            if document in (None, block.document):
                text = text.replace(old, new.format(**values))
        rc, _ = EXPECTED_RC.get((block.document, bare(line)), (0, None))
        skip = SKIP_LINES.get(bare(line)) or runs_elsewhere(block.document, line)
        plan.append((i, text, rc, skip))
        if skip:
            lines.append(f"printf '\\n@@@ {i} skipped\\n'")
            continue
        lines.append(f"printf '\\n@@@ {i} start\\n'")
        lines.append(text)
        lines.append(f"printf '\\n@@@ {i} rc %d\\n' $?")
        after = AFTER.get(bare(line))
        if after:
            lines.append(after.format(**values))
    return "\n".join(lines) + "\n", plan


def _run_documents(chain: tuple[str, ...], tmp: Path, first: Path) -> None:
    course, home = tmp / "course", tmp / "home"
    home.mkdir()
    _copy_of(first, course)
    venv = course / ".venv"
    made = _fill(course, home, tmp)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    env.update(HOME=str(home), PATH=os.pathsep.join([str(venv / "bin"), str(KIT_VENV / "bin"), env["PATH"]]),
               DASK_TEMPORARY_DIRECTORY=str(tmp), NO_COLOR="1")
    # A command that names an index this machine cannot reach (the bundle's PyTorch CPU index, with no network
    # but the registries) runs as written; pip is only told not to retry it, package after package.
    env.setdefault("PIP_RETRIES", "0")
    scheduler = None
    values = {"course": str(course), "tmp": str(tmp), "scheduler": ""}
    try:
        for document in chain:
            if document in BEFORE:
                BEFORE[document](home)
            for block in command_blocks(document):
                if not any(not SKIP_LINES.get(bare(line)) and not runs_elsewhere(document, line)
                           for line in block.commands()):
                    continue
                if scheduler is None and "tls://login1:8786" in block.text:  # its certificates are made by now
                    scheduler = Scheduler(venv / "bin" / "python", course, env, tmp, Path(f"{course}-tls"))
                    values["scheduler"] = scheduler.address
                _run_block(block, values, course, env, tmp)
    finally:
        if scheduler:
            scheduler.close()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=normal"], cwd=course,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    unexpected = [line for line in status if line[3:] not in made]
    assert not unexpected, f"{chain}: files the commands wrote that git would pick up:\n" + "\n".join(unexpected)


def _run_block(block: Block, values: dict, course: Path, env: dict, tmp: Path) -> None:
    script, plan = _script(block, values)
    log = tmp / f"{Path(block.document).stem}-{block.line}.log"
    with open(log, "w") as out:
        run = subprocess.run(["bash", "-c", script], cwd=course, env=env, stdout=out, stderr=subprocess.STDOUT,
                             timeout=3600)
    text = log.read_text(errors="replace")
    for i, line, rc, skip in plan:
        if skip:
            continue
        got = re.search(rf"^@@@ {i} rc (\d+)$", text, re.M)
        section = text.split(f"@@@ {i} start\n", 1)[-1].split(f"\n@@@ {i} rc", 1)[0][-4000:]
        where = f"{block.document}:{block.line}"
        assert got, f"{where}: `{line}` did not finish (bash exited {run.returncode}):\n{section}"
        assert int(got.group(1)) == rc, f"{where}: `{line}` exited {got.group(1)}, not {rc}:\n{section}"


#: chain -> the name of its run's folder, for the chains whose copy another test reads after them: run once per run
#: (tests/support/once.py) and kept for the run. docs/release.md's student install (a venv, torch, the pins, the
#: bundle's grade) is the one tests/system/test_release.py checks on the lowest Python the bundle claims.
KEPT = {("docs/release.md",): "documented-release"}


def documents_run_once(chain: tuple[str, ...], tmp_path_factory) -> Path:
    """The folder where ``chain`` ran (``course``, ``home`` and each block's log in it), run once per run; what
    ``_run_documents`` asserts holds for every test that reads it (a run that fails is not kept: the next asks
    again, and fails the same way)."""
    first = first_copy_once(tmp_path_factory)
    folder, _ = built_once(tmp_path_factory, KEPT[chain], lambda folder: _run_documents(chain, folder, first))
    return folder


def said_by(folder: Path, document: str, line: str) -> str:
    """What ``line`` of ``document`` printed (stdout and stderr), from its block's log in ``folder``."""
    for block in command_blocks(document):
        commands = [bare(command) for command in block.commands()]
        if line in commands:
            text = (folder / f"{Path(document).stem}-{block.line}.log").read_text(errors="replace")
            i = commands.index(line)
            return text.split(f"@@@ {i} start\n", 1)[1].split(f"\n@@@ {i} rc", 1)[0]
    raise KeyError(f"{document} runs no `{line}`")


@pytest.mark.slow
@pytest.mark.parametrize("chain", runs(), ids="+".join)
def test_the_documented_commands_run_as_written(chain, tmp_path_factory, tmp_path):
    if chain in KEPT:
        documents_run_once(chain, tmp_path_factory)
    else:
        _run_documents(chain, tmp_path, first_copy_once(tmp_path_factory))

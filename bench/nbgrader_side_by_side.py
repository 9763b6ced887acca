"""Benchmark: the real `nbgrader autograde` against `grade autograde --nbgrader`, on the same nbgrader course, paired.

Usage: python bench/nbgrader_side_by_side.py [--n 32] [--repeat 1] [--jobs J] [--timeout 3600] [--keep DIR] [--mix A,B]
       python bench/nbgrader_side_by_side.py --make-course DIR [--n 32]   # only write the course, for timing elsewhere

Makes an nbgrader course with the kit's own `grade nbgrader`, releases it (`nbgrader generate_assignment`), and
hands in the notebooks of N students in `submitted/<student>/attention/`: each is the released notebooks with
their solution cells filled with one corpus submission's code (`tests/corpus/submissions/`: correct, buggy and
untouched stubs, in the mix of MIX), as a student would fill them (the multi-head notebook's carried-over
`CausalAttention` cell with that student's own). Then, in turn (A B A B ...), each on a fresh copy of the
course so that neither sees the other's outputs or gradebook entries:

  A: `nbgrader autograde attention`, nbgrader's own way (one kernel per notebook, one student after another);
  B: `grade autograde --nbgrader COPY --out COPY/kit-results` (the kit's default --jobs: the number of cores;
     its gradebook write-back and autograded/ notebooks included).

Both are timed as whole processes, start-up included (wall; CPU of the process and the processes it waited for;
the largest single process's peak memory). Prints a Markdown block to paste into bench/RESULTS.md: seconds per
student for each, and the ratio nbgrader / kit taken pair by pair (median over --repeat pairs). Then it checks
that the two graded alike: every test cell's points in nbgrader's gradebook (copy A) against the kit's in its
own (copy B), the kit's results.json totals, who waits for manual grading and nbgrader's comment on each
answer; any student and cell that differ are named. A side-by-side
that graded differently would not be a fair comparison.

nbgrader takes about 15-22 s per student on 2 cores: --n 32 --repeat 1 is about 10-12 minutes.
Needs the test extra (nbgrader, ipykernel: `make install`); run from the kit's venv.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: bench/ is on the path, the kit's root is not
    sys.path.insert(0, str(ROOT))

from bench.measure import measure

CORPUS = ROOT / "tests" / "corpus" / "submissions"
ASSIGNMENT = "attention"
NBGRADER = Path(sys.executable).parent / "nbgrader"
#: one student in eight of each; four correct, three buggy (each bug on a step that no other step builds on, so
#: nbgrader's kernel and the kit's stand-ins must give the same points: see docs/nbgrader.md), one untouched stubs
MIX = ["correct_einsum", "bug_no_scaling", "correct_loops", "bug_softmax_dim0", "stubs",
       "correct_sdpa", "bug_context_transposed", "correct_alt_style"]
STAMP = "2026-12-11 20:00:00.000000 UTC"


def grade_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "autograder.cli", *args]


def jupyter_env(tmp: Path) -> dict:
    """An environment where nbgrader runs this Python as its "python3" kernel and reads no configuration, kernel
    or IPython profile of the user's (as tests/system/test_nbgrader.py runs it); nbgrader calls `alembic` from PATH."""
    spec = tmp / "jupyter-path" / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)", "language": "python"}))
    dirs = {name: tmp / name.lower() for name in ("JUPYTER_DATA_DIR", "JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR",
                                                  "IPYTHONDIR")}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    return {**os.environ, **{k: str(v) for k, v in dirs.items()}, "JUPYTER_PATH": str(tmp / "jupyter-path"),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONWARNINGS": "ignore"}


def _run(cmd: list[str], cwd: Path, env: dict | None = None, timeout: float = 900) -> None:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")


# -- the students' notebooks --------------------------------------------------------------------------------
def _used_names(piece: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(piece)) if isinstance(n, ast.Name)}


def _with_helpers(names: list[str], pieces: dict[str, str]) -> list[str]:
    """``names`` and the module's other top-level definitions they use (transitively), helpers first."""
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order or name not in pieces:
            return
        for used in sorted(_used_names(pieces[name])):
            if used != name:
                visit(used)
        order.append(name)

    for name in names:
        visit(name)
    return order


def fill_notebook(release_nb: Path, submission: Path, dest: Path) -> list[str]:
    """Write ``release_nb`` to ``dest`` with its solution cells filled from ``submission`` (a corpus folder of .py
    modules), as a student fills them: each solution cell (nbgrader ``grade_id`` = the name it defines) gets the
    submission's definition of that name; a carried-over cell (``from_<module>_code``) gets the submission's own
    definitions from that module, with the helpers they use; imports the setup cell lacks, and the module's
    definitions no cell asks for (its own helpers), go at the top of the first solution cell. A name the
    submission does not define keeps the release's stub. Returns the grade_ids filled."""
    import nbformat

    from autograder.course.sources import read_module

    module = release_nb.stem
    nb = nbformat.read(str(release_nb), as_version=4)
    own = read_module(submission / f"{module}.py")
    setup = next(c.source for c in nb.cells if (c.metadata.get("nbgrader") or {}).get("grade_id") == "setup")
    solution_cells = [c for c in nb.cells if (c.metadata.get("nbgrader") or {}).get("solution")]
    asked = {c.metadata["nbgrader"]["grade_id"] for c in solution_cells}
    imports = [i for i in own.imports if i not in setup.splitlines()]
    filled = []
    for cell in solution_cells:
        grade_id = cell.metadata["nbgrader"]["grade_id"]
        if grade_id.startswith("from_") and grade_id.endswith("_code"):
            other = grade_id[len("from_"):-len("_code")]
            theirs = read_module(submission / f"{other}.py")
            wanted = [name for m, name in own.borrowed if m == other and name in theirs.pieces]
            if wanted:
                imports += [i for i in theirs.imports if i not in imports and i not in setup.splitlines()]
                cell.source = "\n\n\n".join(theirs.pieces[n] for n in _with_helpers(wanted, theirs.pieces))
                filled.append(grade_id)
        elif grade_id in own.pieces:
            cell.source = own.pieces[grade_id]
            filled.append(grade_id)
    extra = [own.pieces[n] for n in own.pieces if n not in asked]
    if (imports or extra) and solution_cells:
        first = solution_cells[0]
        first.source = "\n".join(imports) + ("\n\n\n" if imports else "") + "".join(p + "\n\n\n" for p in extra) \
            + first.source
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(dest))
    return filled


def students(n: int, mix: list[str] | None = None) -> dict[str, str]:
    """student id -> the corpus submission the student hands in (``mix``, default MIX, round and round)."""
    mix = mix or MIX
    return {f"student{i:03d}": mix[i % len(mix)] for i in range(n)}


def make_course(course: Path, who: dict[str, str], env: dict) -> dict[str, str]:
    """``grade nbgrader``, ``nbgrader generate_assignment``, and the students' filled notebooks in submitted/
    (``who``: student id -> corpus submission)."""
    _run(grade_cmd("nbgrader", "--course-dir", str(course), "--course", str(ROOT / "course.yml")), cwd=ROOT, env=env)
    _run([str(NBGRADER), "generate_assignment", ASSIGNMENT], cwd=course, env=env)
    return hand_in(course, who)


def hand_in(course: Path, who: dict[str, str]) -> dict[str, str]:
    """The students' notebooks in submitted/ of a released course: the release's, filled with their corpus
    submission's code (``who``: student id -> corpus submission), and nbgrader's timestamp.txt."""
    release = course / "release" / ASSIGNMENT
    for student, source in who.items():
        folder = course / "submitted" / student / ASSIGNMENT
        for nb in sorted(release.glob("*.ipynb")):
            fill_notebook(nb, CORPUS / source, folder / nb.name)
        (folder / "timestamp.txt").write_text(STAMP)
    return who


# -- the two graders' points --------------------------------------------------------------------------------
def gradebook_points(course: Path) -> dict[str, dict[str, float]]:
    """student -> {"<notebook>/<test cell>": its score} from the course's gradebook.db (nbgrader's API)."""
    from nbgrader.api import Gradebook

    points: dict[str, dict[str, float]] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for sub in gb.assignment_submissions(ASSIGNMENT):
            points[sub.student.id] = {f"{nb.name}/{g.name}": float(g.score) for nb in sub.notebooks for g in nb.grades}
    return points


def waiting_for_a_person(course: Path) -> dict[str, bool]:
    """student -> whether nbgrader's formgrader lists their submission as waiting for manual grading."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {sub.student.id: bool(sub.needs_manual_grade) for sub in gb.assignment_submissions(ASSIGNMENT)}


def solution_comments(course: Path) -> dict[str, dict[str, str | None]]:
    """student -> {"<notebook>/<solution cell>": nbgrader's automatic comment} ("No response." on a cell handed in as
    released), as the formgrader shows it."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {sub.student.id: {f"{nb.name}/{c.name}": c.auto_comment for nb in sub.notebooks for c in nb.comments}
                for sub in gb.assignment_submissions(ASSIGNMENT)}


def compare_comments(nbgrader: dict, kit: dict, who: dict[str, str]) -> list[str]:
    """The cells whose automatic comment differs between the two gradebooks, one line each."""
    return [f"{student} ({source}): {cell}: comment: nbgrader {a.get(cell)!r}, kit {b.get(cell)!r}"
            for student, source in who.items()
            for a, b in [(nbgrader.get(student, {}), kit.get(student, {}))]
            for cell in sorted(set(a) | set(b)) if a.get(cell) != b.get(cell)]


def compare_waiting(nbgrader: dict[str, bool], kit: dict[str, bool], who: dict[str, str]) -> list[str]:
    """The students one gradebook lists as waiting for manual grading and the other does not."""
    return [f"{student} ({source}): waits for manual grading: nbgrader {nbgrader.get(student)}, kit {kit.get(student)}"
            for student, source in who.items() if nbgrader.get(student) != kit.get(student)]


def kit_totals(out: Path) -> dict[str, float]:
    return {p.parent.name: float(json.loads(p.read_text())["score"]) for p in out.glob("*/results.json")}


def compare(nbgrader: dict[str, dict[str, float]], kit: dict[str, dict[str, float]], totals: dict[str, float],
            who: dict[str, str]) -> list[str]:
    """What differs, one line per student and cell; empty when the two graded alike."""
    lines = []
    for student, source in who.items():
        a, b = nbgrader.get(student), kit.get(student)
        if a is None or b is None:
            lines.append(f"{student} ({source}): {'nbgrader' if a is None else 'the kit'} has no grades")
            continue
        for cell in sorted(set(a) | set(b)):
            if a.get(cell) != b.get(cell):
                lines.append(f"{student} ({source}): {cell}: nbgrader {a.get(cell)}, kit {b.get(cell)}")
        if totals.get(student) != sum(b.values()):
            lines.append(f"{student} ({source}): the kit's results.json says {totals.get(student)}, "
                         f"its gradebook {sum(b.values())}")
    return lines


# -- the paired run -----------------------------------------------------------------------------------------
def fresh_copy(course: Path, dest: Path) -> Path:
    shutil.copytree(course, dest, symlinks=True)
    return dest


def side_by_side(work: Path, n: int, repeat: int, jobs: int | None, timeout: float,
                 mix: list[str] | None = None, keep: bool = True) -> dict:
    """The course, then ``repeat`` pairs (nbgrader, kit), each pair's scores compared; ``keep``: keep the copies."""
    # the reference answers `grade nbgrader` keeps for the kit's runs (stored_answers.py): in a folder of this run's
    # own, so the kit reads what this course's build kept, never what another run left in the user's cache
    env = {**jupyter_env(work / "jupyter"), "GRADE_CACHE_DIR": str(work / "grade-cache")}
    course = work / "course"
    who = make_course(course, students(n, mix), env)
    kit_args = ["--jobs", str(jobs)] if jobs else []
    runs: list[dict] = []
    differ: list[str] = []
    for r in range(repeat):
        a = fresh_copy(course, work / f"nbgrader{r}")
        nb = measure([str(NBGRADER), "autograde", ASSIGNMENT], cwd=a, env=env, log=work / f"nbgrader{r}.log",
                     timeout=timeout)
        b = fresh_copy(course, work / f"kit{r}")
        kit = measure(grade_cmd("autograde", "--nbgrader", str(b), "--out", str(b / "kit-results"), *kit_args),
                      cwd=ROOT, env=env, log=work / f"kit{r}.log", timeout=timeout)
        # the kit again, with nothing kept: the reference answers computed at the start of its batch (its first
        # run on a course that was not built with `grade nbgrader` on this machine)
        c = fresh_copy(course, work / f"kitcold{r}")
        cold = measure(grade_cmd("autograde", "--nbgrader", str(c), "--out", str(c / "kit-results"), *kit_args),
                       cwd=ROOT, env={**env, "GRADE_REFERENCE_CACHE": "0"}, log=work / f"kitcold{r}.log",
                       timeout=timeout)
        for name, m in (("nbgrader", nb), ("kit", kit), ("kitcold", cold)):
            if m.returncode != 0:
                raise RuntimeError(f"{name} run {r} exited {m.returncode}: see {work / f'{name}{r}.log'}")
        totals = kit_totals(b / "kit-results")
        if kit_totals(c / "kit-results") != totals:
            differ.append(f"the kit with nothing kept: totals {kit_totals(c / 'kit-results')} against {totals}")
        differ += [d for d in compare(gradebook_points(a), gradebook_points(b), totals, who) if d not in differ]
        differ += [d for d in compare_waiting(waiting_for_a_person(a), waiting_for_a_person(b), who) if d not in differ]
        differ += [d for d in compare_comments(solution_comments(a), solution_comments(b), who) if d not in differ]
        runs.append({"nbgrader": nb, "kit": kit, "kitcold": cold})
        if not keep:
            for folder in (a, b, c):
                shutil.rmtree(folder, ignore_errors=True)
    log = (work / f"kit{repeat - 1}.log").read_text().strip().splitlines()
    isolation = next((line for line in reversed(log) if "isolation" in line), "")
    return {"who": who, "runs": runs, "differ": differ, "isolation": isolation, "totals": totals}


def report(result: dict, n: int, jobs: int | None) -> str:
    runs = result["runs"]
    nb_wall = statistics.median(r["nbgrader"].wall for r in runs)
    kit_wall = statistics.median(r["kit"].wall for r in runs)
    nb_cpu = statistics.median(r["nbgrader"].cpu for r in runs)
    kit_cpu = statistics.median(r["kit"].cpu for r in runs)
    ratios = [r["nbgrader"].wall / r["kit"].wall for r in runs]
    cold_wall = statistics.median(r["kitcold"].wall for r in runs)
    cold_ratios = [r["nbgrader"].wall / r["kitcold"].wall for r in runs]
    cpu_ratios = [r["nbgrader"].cpu / r["kit"].cpu for r in runs]
    spread = f" ({min(ratios):.1f}-{max(ratios):.1f})" if len(ratios) > 1 else ""
    mix = {}
    for source in result["who"].values():
        mix[source] = mix.get(source, 0) + 1
    top = max(result["totals"].values(), default=0)
    lines = [
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; load average before: {os.getloadavg()[0]:.1f}",
        f"students: {n} ({', '.join(f'{k} x{v}' for k, v in mix.items())}); pairs: {len(runs)} (A B A B ..., a fresh "
        f"copy of the course for each run; medians, the ratio pair by pair)",
        f"kit: grade autograde --nbgrader, --jobs {jobs or os.cpu_count()}; {result['isolation']}".rstrip("; "),
        "",
        "| whole process, start-up included | wall | per student | CPU (user + sys) | peak memory, largest process |",
        "| --- | --- | --- | --- | --- |",
        f"| `nbgrader autograde {ASSIGNMENT}` | {nb_wall:.1f} s | {nb_wall / n:.2f} s | {nb_cpu:.1f} s | "
        f"{statistics.median(r['nbgrader'].peak_mib for r in runs):.0f} MiB |",
        f"| `grade autograde --nbgrader` | {kit_wall:.1f} s | {kit_wall / n:.2f} s | {kit_cpu:.1f} s | "
        f"{statistics.median(r['kit'].peak_mib for r in runs):.0f} MiB |",
        f"| the same, nothing kept (`GRADE_REFERENCE_CACHE=0`) | {cold_wall:.1f} s | {cold_wall / n:.2f} s | "
        f"{statistics.median(r['kitcold'].cpu for r in runs):.1f} s | "
        f"{statistics.median(r['kitcold'].peak_mib for r in runs):.0f} MiB |",
        "",
        f"ratio nbgrader / kit, wall, paired: **{statistics.median(ratios):.1f}x**{spread}; "
        f"CPU: {statistics.median(cpu_ratios):.1f}x (the target at 32 students: at least 40x, wall); with "
        f"nothing kept (the reference answers computed in the kit's run): {statistics.median(cold_ratios):.1f}x",
    ]
    if result["differ"]:
        lines.append(f"scores: the two DISAGREE on {len({d.split(' ')[0] for d in result['differ']})} of {n} "
                     f"students ({len(result['differ'])} cells):")
        lines += [f"- {d}" for d in result["differ"]]
    else:
        scores = sorted(set(result["totals"].values()))
        lines.append(f"scores: the two agree on all {n} students, test cell by test cell (totals "
                     f"{', '.join(f'{s:g}' for s in scores)} of {top:g} max per student seen), on which of them "
                     "wait for manual grading, and on the comment on each answer (\"No response.\" or none)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=32, help="students (default 32)")
    parser.add_argument("--repeat", type=int, default=1, help="pairs A B (default 1: nbgrader is ~20 s a student)")
    parser.add_argument("--jobs", type=int, default=None, help="the kit's --jobs (default: its own, the cores)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per run before it is killed")
    parser.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it (default: a "
                                                                 "temporary folder, removed)")
    parser.add_argument("--mix", default=None, help="corpus submissions handed in, comma-separated, round and round "
                                                     "(default: MIX, whose bugs nbgrader and the kit grade alike)")
    parser.add_argument("--make-course", type=Path, default=None, help="only write the course and its N students")
    args = parser.parse_args()
    if not NBGRADER.exists():
        sys.exit(f"no {NBGRADER}: install the test extra (make install)")
    mix = args.mix.split(",") if args.mix else None
    unknown = [m for m in mix or [] if not (CORPUS / m).is_dir()]
    if unknown:
        sys.exit(f"not in {CORPUS}: {', '.join(unknown)}")
    if args.make_course:
        who = make_course(args.make_course, students(args.n, mix), jupyter_env(args.make_course.parent / "jupyter"))
        print(f"{args.make_course}: {len(who)} students in submitted/")
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="grade-nbbench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        print(report(side_by_side(work, args.n, args.repeat, args.jobs, args.timeout, mix,
                                  keep=bool(args.keep)), args.n, args.jobs))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

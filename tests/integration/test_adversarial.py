"""`grade autograde` against submissions that try to cheat, or to damage the grader and the other submissions.

Each submission in ``tests/corpus/adversarial/<name>/`` is the reference (markers removed) with ONE trick applied;
``tests/corpus/adversarial/manifest.json`` says what a sound grader gives it: ``full`` (the trick must simply have
no effect) or ``lose`` (exactly these steps are lost, because the trick replaced part of the real computation and
only works if the grader is unsound). Some tricks write marker files under ``/tmp/adversarial-*`` or forged
results: none may exist after grading. The archive tricks (zip slip, zip bomb, empty, corrupt, symlink entry,
a submission nested one folder deep) are built here, at test time, so that no binary zip is committed.

Several submissions attack the machine (bounded: 16 GB of memory at most, 400 forks at most, 200 MB of output,
a 1 GB file, a daemon that SIGKILLs the grader's processes): run this only against a grader that confines
workers (namespaces, unprivileged uid, limits).

Its cost, the suite's largest module: about 6 minutes on a loaded 2-core machine, 2 of them grading the 77
attempts once (the module's ``graded``, read by every test that reads a result: 53 s and 73 CPU-s unloaded, the
four attacks that run to their step's time limit at the short course's 6 s), the rest the scenarios that need a
batch of their own (the zips, the tricklers beside a correct submission, the memory limit, the levels).
"""
from __future__ import annotations


import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from autograder.course import load_course

from tests.support.kit_files import scan
from tests.support.leak_scan import scan_results
from tests.support.machine_lock import machine_to_ourselves
from .conftest import ROOT, run_grade

ADV_DIR = ROOT / "tests" / "corpus" / "adversarial"
ADV_MANIFEST = json.loads((ADV_DIR / "manifest.json").read_text())
COURSE = load_course(ROOT / "course.yml")
MODULES = ["simple_attention", "trainable_attention", "causal_attention", "multihead_attention"]
SA = "simple_attention.attention_scores"

#: written by the submissions' tricks; their content says who wrote them
FAKE = "ADVERSARIAL-FAKE-OUTPUT"
FORGED = "ADVERSARIAL-FORGED-RESULTS"
FORGE_TARGETS = [Path("/tmp/results.json"), Path("/tmp/results/results.json"), Path("/autograder/results/results.json")]
TMP = Path("/tmp")
DAEMON_GRACE = 4.5  # seconds: the daemon trick writes its marker 3 s after it starts


def markers() -> list[Path]:
    return sorted(TMP.glob("adversarial-*"))


def forged_files() -> list[Path]:
    found = []
    for path in FORGE_TARGETS:
        try:
            if FORGED in path.read_text(errors="replace"):
                found.append(path)
        except OSError:
            pass
    return found


def clean_markers() -> None:
    for path in markers():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    for path in forged_files():
        path.unlink(missing_ok=True)


def jobs_args() -> list[str]:
    """``--jobs`` when the CLI has it: the corpus has several slow submissions (time limits)."""
    help_text = run_grade("autograde", "--help", timeout=120).stdout
    return ["--jobs", "2"] if "--jobs" in help_text else []


def solution_lines() -> set[str]:
    """Non-trivial lines of the reference between the markers that the student version does not show."""
    public = ("\n".join(p.read_text() for p in (ROOT / "exercises").glob("*.py"))
              if (ROOT / "exercises").is_dir() else "")
    lines: set[str] = set()
    for path in (ROOT / "solutions").glob("*.py"):
        inside = False
        for line in path.read_text().splitlines():
            text = line.strip()
            if text == "### BEGIN SOLUTION":
                inside = True
            elif text == "### END SOLUTION":
                inside = False
            elif inside and len(text) >= 16 and text not in public:
                lines.add(text)
    assert lines, "no solution lines found: did the markers change?"
    return lines


def outputs(result: dict) -> list[str]:
    return [result.get("output", "")] + [t.get("output", "") for t in result.get("tests", [])]


# ------------------------------------------------------------------------------------------- the corpus
#: the attacks that hold their step until its time limit, a core spinning (infinite_loop; hostile_exceptions, whose
#: exception's __str__ never returns) or a job slot waiting (sleep_forever, trickle_channel): graded in a batch of
#: their own with the short step limit of tests/support/short_course.py, 6 s of CPU or of a job each instead of the
#: course's 20 s. What the tests read of them (that step lost at its time limit, said as one; the manifest's score)
#: is the same at any limit; test_a_trickle_on_the_channel_is_a_time_limit_and_the_batch_finishes grades
#: trickle_channel at the course's own.
AT_THE_LIMIT = ("hostile_exceptions", "infinite_loop", "sleep_forever", "trickle_channel")


@pytest.fixture(scope="module")
def graded(tmp_path_factory, short_course_file):
    """The corpus graded in two batches, each its own ``grade autograde``, one after the other: the attacks
    AT_THE_LIMIT with the short course, into ``out_at_the_limit``; the rest (the corpus's own files too, each named
    for a person) with the course, into ``out``. ``result``: the second batch's command."""
    out, out_at_the_limit = (tmp_path_factory.mktemp(name) for name in ("adversarial-results", "adversarial-limit"))
    entries = [p for p in sorted(ADV_DIR.iterdir()) if not p.name.startswith((".", "__"))]
    with machine_to_ourselves():
        clean_markers()
        start = time.monotonic()
        at_the_limit = run_grade("autograde", *(str(p) for p in entries if p.name in AT_THE_LIMIT),
                                 "--out", str(out_at_the_limit), "--course", str(short_course_file), *jobs_args(),
                                 timeout=3600)
        assert at_the_limit.returncode == 0, at_the_limit.stderr[-3000:]
        # fresh: attempts read their ancestors' command lines (detect_grader, write_results_json), which must be grade's
        result = run_grade("autograde", *(str(p) for p in entries if p.name not in AT_THE_LIMIT), "--out", str(out),
                           *jobs_args(), timeout=3600, fresh=True)
        elapsed = time.monotonic() - start
        time.sleep(DAEMON_GRACE)  # a daemon that escaped would have written its marker by now
        left = markers()
        forged = forged_files()
        clean_markers()
    return {"out": out, "out_at_the_limit": out_at_the_limit, "result": result, "elapsed": elapsed, "markers": left,
            "forged": forged}


def folder(graded, name) -> Path:
    """Where ``name``'s results.json and feedback.html are."""
    return graded["out_at_the_limit" if name in AT_THE_LIMIT else "out"] / name


def outs(graded) -> list[Path]:
    """Both batches' --out folders."""
    return [graded["out"], graded["out_at_the_limit"]]


def load(graded, name) -> dict:
    return json.loads((folder(graded, name) / "results.json").read_text())


def test_no_student_message_names_a_file_of_the_kit(graded):
    """Whatever the hostile code did, no results.json or feedback.html names the kit's files."""
    assert [scan(out) for out in outs(graded)] == [{}, {}]


def test_grading_completes_with_exit_code_zero(graded):
    result = graded["result"]
    assert result.returncode == 0, result.stderr[-3000:]


def test_every_submission_has_results(graded):
    missing = [name for name in ADV_MANIFEST if not (folder(graded, name) / "results.json").is_file()]
    assert missing == []


def _timed_out_as_allowed(graded, name: str) -> bool:
    """An attack the manifest says may end at a step's time limit when the machine is loaded, that did exactly
    that: its only problem is that one time limit."""
    allowed = ADV_MANIFEST[name].get("when_loaded")
    if allowed is None:
        return False
    problems = load(graded, name)["extra_data"].get("problems") or []
    return [(p["kind"], p["steps"]) for p in problems] == [("timed_out", [allowed["may_time_out"]])]


@pytest.mark.parametrize("name", sorted(ADV_MANIFEST))
def test_submission_scores_as_the_manifest_says(graded, name):
    expect = ADV_MANIFEST[name]
    result = load(graded, name)
    lost = sorted({t["name"].split(" ", 1)[0] for t in result["tests"] if t["status"] != "passed"})
    if expect["expect"] == "full" and _timed_out_as_allowed(graded, name):
        step = expect["when_loaded"]["may_time_out"]
        assert lost == [step] and result["score"] == COURSE.max_points() - sum(
            c.points for c in COURSE.steps[step].counts.values()), expect["when_loaded"]["why"]
    elif expect["expect"] == "full":
        assert lost == [] and result["score"] == COURSE.max_points(), expect.get("why")
    else:
        assert lost == sorted(expect["steps"]), expect.get("why")
        lost_points = sum(COURSE.steps[s].counts[c].points for s in lost for c in COURSE.steps[s].counts
                          if any(t["name"].startswith(f"{s} {c}:") and t["status"] == "failed"
                                 for t in result["tests"]))
        assert result["score"] == COURSE.max_points() - lost_points, expect.get("why")


def test_no_attack_scores_more_than_its_honest_control(graded):
    """Each trick of the security issue against the same code without it: the trick must gain nothing."""
    pairs = {name: e["control"] for name, e in ADV_MANIFEST.items() if e.get("control")}
    assert len(pairs) >= 8
    gains = {}
    for name, control in pairs.items():
        attack, honest = load(graded, name)["score"], load(graded, control)["score"]
        exact = "score" in ADV_MANIFEST[name] and not _timed_out_as_allowed(graded, name)
        if attack > honest or (exact and attack != ADV_MANIFEST[name]["score"]):
            gains[name] = (attack, honest)
    assert gains == {}, "attack: (its score, its honest control's)"


def test_the_memory_scanner_would_find_a_line_of_the_reference(graded):
    """The scan finds nothing in the workers that hold stand-ins; its positive control (one solution line
    planted as base64(zlib(line))) shows that it finds what is there."""
    for name, entry in ADV_MANIFEST.items():
        control = entry.get("positive_control")
        if control:
            assert load(graded, name)["score"] == COURSE.max_points(), name
            lost = {t["name"].split(" ", 1)[0] for t in load(graded, control)["tests"] if t["status"] != "passed"}
            assert lost == set(ADV_MANIFEST[control]["steps"]), control


@pytest.fixture(scope="module")
def leaks(graded) -> dict[str, list[str]]:
    """What of the reference decodes from each graded submission's results.json and feedback.html
    (tests/support/leak_scan.py), scanned once for the tests that read it."""
    return {name: found for out in outs(graded) for name, found in scan_results(out).items()}


def test_no_solution_line_decodes_from_any_result(leaks):
    """Feedback never carries the reference, in any encoding (base85, base64, hex; compressed or not; a few layers
    deep): neither a solution line nor a reference function's bytecode (marshalled, or its instructions, also as the
    numbers a page prints), in any string of results.json or in feedback.html."""
    assert leaks == {}


def test_a_submission_s_own_files_never_set_its_submission_time(graded):
    forged = {n: e["forged_submitted_at"] for n, e in ADV_MANIFEST.items() if "forged_submitted_at" in e}
    assert forged
    for name, when in forged.items():
        assert load(graded, name)["extra_data"]["submitted_at"] is None, name


def test_no_marker_file_appears(graded):
    """Start-up hooks, threads, daemons, forked children and zip slips leave nothing behind in /tmp."""
    assert graded["markers"] == []


def test_the_marker_tricks_do_write_their_markers_when_not_confined(tmp_path):
    """The control of the test above: unconfined, a sitecustomize.py and a thread left running write their markers."""
    for name in ("sitecustomize_in_submission", "background_thread"):  # copies: nothing is written into the corpus
        shutil.copytree(ADV_DIR / name, tmp_path / name)
    env = {"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    with machine_to_ourselves():
        clean_markers()
        _write_markers_unconfined(tmp_path, env)


def _write_markers_unconfined(tmp_path, env) -> None:
    try:
        subprocess.run([sys.executable, "-c", "pass"],
                       env={**env, "PYTHONPATH": str(tmp_path / "sitecustomize_in_submission")},
                       timeout=60, check=False)
        code = ("import sys, torch; sys.path.insert(0, sys.argv[1]); import simple_attention as m; "
                "m.attention_scores(torch.rand(6, 3), torch.rand(3))")
        subprocess.run([sys.executable, "-c", code, str(tmp_path / "background_thread")], env=env, timeout=120,
                       check=True)
        names = sorted(p.name for p in markers())
        assert "adversarial-background_thread-marker" in names, names
        assert any("sitecustomize" in n for n in names), names
    finally:
        clean_markers()


def test_no_forged_results_anywhere(graded):
    assert graded["forged"] == []
    total_counts = sum(len(s.counts) for s in COURSE.steps.values())
    for path in [path for out in outs(graded) for path in out.rglob("results.json")]:
        text = path.read_text()
        assert FORGED not in text and FAKE not in text, path
        result = json.loads(text)
        assert len(result["tests"]) == total_counts, path
        assert result["score"] == sum(t["score"] for t in result["tests"]), path
        assert 0 <= result["score"] <= COURSE.max_points(), path
    # the class summary, and the instructor's log of the grader's frames where a submission made them fail
    summary = {"summary.json", "summary.md", "summary.html", "grader_errors.log"}
    # the corpus's own files beside the submissions are entries of the folder too: each named, never run or graded
    tooling = {"build_corpus": "single_file", "conftest": "single_file", "manifest": "not_code"}
    for name, cause in tooling.items():
        first = load(graded, name)["extra_data"]["problems"][0]
        assert (first["kind"], first["cause"], load(graded, name)["score"]) == ("not_graded", cause, 0), name
    stray = [p for out in outs(graded) for p in out.iterdir() if p.name not in ADV_MANIFEST and p.name not in summary
             and p.name not in tooling and not p.name.startswith(".")]
    assert stray == [], "the grader wrote results for submissions that do not exist"


def test_fake_output_does_not_reach_the_grader_or_the_feedback(graded):
    result = graded["result"]
    assert FAKE not in result.stdout and FAKE not in result.stderr
    assert "PASSED 81/81" not in result.stdout


def test_feedback_never_shows_the_reference(graded):
    lines = solution_lines()
    for name in ADV_MANIFEST:
        for text in outputs(load(graded, name)):
            assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text, name
            leaked = [line for line in lines if line in text]
            assert leaked == [], f"{name}: the feedback quotes the reference: {leaked[:3]}"


def test_feedback_never_shows_files_outside_the_submission(graded):
    for name in ("symlink_to_etc_passwd", "symlink_to_solutions"):
        for text in outputs(load(graded, name)):
            assert "root:x:0:" not in text and "/bin/bash" not in text
            assert "inputs @ query" not in text


def by_step(result: dict) -> dict[str, str]:
    text: dict[str, str] = {}
    for t in result["tests"]:
        step = t["name"].split(" ", 1)[0]
        text[step] = text.get(step, "") + "\n" + t["output"]
    return text


def test_clear_messages(graded):
    # said once, at the top; each of the module's tests points there
    non_utf8 = load(graded, "non_utf8_module")
    assert "utf-8" in non_utf8["output"].lower(), non_utf8["output"]
    assert "the message at the top" in by_step(non_utf8)["trainable_attention.init_qkv"]
    returns = by_step(load(graded, "numpy_and_list_returns"))
    assert "ndarray" in returns["simple_attention.attention_scores"]
    assert "list" in returns["simple_attention.normalize_sum"]
    assert "subclass" in by_step(load(graded, "tensor_subclass_torch_function"))["simple_attention.attention_scores"]
    assert "_FakeTensor" in by_step(load(graded, "fake_tensor_object"))["simple_attention.attention_scores"]
    assert "time limit" in by_step(load(graded, "infinite_loop"))[SA]
    assert "time limit" in by_step(load(graded, "sleep_forever"))["simple_attention.attention_scores"]
    assert "segmentation fault" in by_step(load(graded, "segfault"))["simple_attention.attention_scores"]
    hostile = by_step(load(graded, "hostile_exceptions"))
    for step in ("simple_attention.attention_scores", "simple_attention.normalize_sum",
                 "simple_attention.softmax_naive"):
        assert hostile[step].strip(), step
    assert "in place" in by_step(load(graded, "mutate_input_hide_with_patched_equal"))["simple_attention.normalize_sum"]
    # a note, whatever the trick: never a point
    assert "should be an nn.Parameter" in by_step(load(graded, "forge_worker_facts"))["trainable_attention.init_qkv"]
    assert "should be an nn.Parameter" in by_step(load(graded, "forge_facts_channel_takeover_control"))[
        "trainable_attention.init_qkv"]


def test_no_hidden_input_reaches_a_result_whatever_the_exception_is_called(graded):
    """A worker's exception named after a kit error type (UnreadableSource), raised on hidden cases only with the
    hidden input in its message, is the student's own: redacted as its control's (InputError) is, in results.json and
    on the page; each named by its own class name, which is in the student's source (feedback/redact.py)."""
    marked = {name: entry["hidden_input_marker"] for name, entry in ADV_MANIFEST.items()
              if "hidden_input_marker" in entry}
    assert len(marked) == 2
    for name, marker in marked.items():
        said = by_step(load(graded, name))[SA]
        assert f"{marker} [#." in said, name  # said, masked
        for text in ((folder(graded, name) / "results.json").read_text(),
                     (folder(graded, name) / "feedback.html").read_text()):
            assert not re.search(re.escape(marker) + r" \[\d", text), name
    attack, control = (by_step(load(graded, n))[SA] for n in marked)
    assert "your code raised UnreadableSource (" in attack and "your code raised InputError (" in control
    # a class of the student's, whatever it is called
    assert attack.replace("UnreadableSource", "InputError") == control


def test_no_student_words_reach_the_class_summary(graded):
    """An exception named after a problem kind (Tampering) with Markdown in its message: the student reads their own
    words; the instructor's summary lists no problem for it (as for its control) and carries none of its text."""
    words = {name: entry["student_words"] for name, entry in ADV_MANIFEST.items() if "student_words" in entry}
    assert len(words) == 2
    for name, marker in words.items():
        assert marker in by_step(load(graded, name))[SA]  # the student reads them
        assert load(graded, name)["extra_data"]["problems"] == []
    for summary in ("summary.md", "summary.html", "summary.json"):
        text = (graded["out"] / summary).read_text()
        assert not any(marker in text for marker in words.values()), summary
        assert "Tampering" not in text, summary


def test_the_submission_folders_are_left_as_they_were(graded):
    """Nothing a trick wrote (a results.json, a big file) lands in the corpus itself."""
    for name in ADV_MANIFEST:
        folder = ADV_DIR / name
        for path in folder.iterdir():
            assert path.name != "results.json" and not path.name.startswith("adversarial-"), path
            assert path.name != "__pycache__", f"{folder}: bytecode was written into the submission"


# ------------------------------------------------------------------------------------------- archives
ZIP_BOMB_BYTES = 1 << 28  # 256 MB uncompressed (five times what an archive may unpack to), 250 KB compressed


def reference_files() -> dict[str, bytes]:
    files = {"__init__.py": b'"""A submission in a zip."""\n'}
    for module in MODULES:
        text = (ROOT / "solutions" / f"{module}.py").read_text()
        body = "".join(line for line in text.splitlines(True)
                       if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))
        files[f"{module}.py"] = body.encode()
    return files


def write_zip(path: Path, entries: dict[str, bytes], prefix: str = "") -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(prefix + name, data)
    return path


def build_zips(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    ref = reference_files()
    zips = {"zip_nested_folder": write_zip(folder / "zip_nested_folder.zip", ref, prefix="my_submission/")}
    empty = folder / "zip_empty.zip"
    zipfile.ZipFile(empty, "w").close()
    zips["zip_empty"] = empty
    corrupt = folder / "zip_corrupt.zip"
    good = write_zip(folder / "tmp-good.zip", ref).read_bytes()
    (folder / "tmp-good.zip").unlink()
    corrupt.write_bytes(b"PK\x03\x04" + good[4:200] + b"\x00garbage" * 64)  # a zip's start, then nonsense
    zips["zip_corrupt"] = corrupt
    slip = dict(ref)
    slip["../adversarial-zipslip-rel.py"] = b"print('zip slip')\n"
    slip["../../../../../../../../../../tmp/adversarial-zipslip-deep.py"] = b"print('zip slip')\n"
    slip["/tmp/adversarial-zipslip-abs.py"] = b"print('zip slip')\n"
    zips["zip_slip"] = write_zip(folder / "zip_slip.zip", slip)
    bomb = folder / "zip_bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name, data in ref.items():
            zf.writestr(name, data)
        with zf.open("padding.bin", "w", force_zip64=True) as fh:
            block = b"\0" * (1 << 24)
            for _ in range(ZIP_BOMB_BYTES // len(block)):
                fh.write(block)
    zips["zip_bomb"] = bomb
    link = folder / "zip_symlink.zip"
    with zipfile.ZipFile(link, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in ref.items():
            if name != "simple_attention.py":
                zf.writestr(name, data)
        info = zipfile.ZipInfo("simple_attention.py")
        info.create_system = 3  # Unix, so external_attr holds a mode
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, str(ROOT / "solutions" / "simple_attention.py"))
    zips["zip_symlink"] = link
    return zips


@pytest.fixture(scope="module")
def graded_zips(tmp_path_factory):
    base = tmp_path_factory.mktemp("adversarial-zips")
    zips = build_zips(base / "zips")
    out = base / "out"
    before = {p for p in base.rglob("*")}
    with machine_to_ourselves():
        clean_markers()
        result = run_grade("autograde", *[str(p) for p in zips.values()], "--out", str(out), timeout=1800)
        left = markers()
        clean_markers()
    written = {p for p in base.rglob("*")} - before
    return {"zips": zips, "out": out, "result": result, "base": base, "markers": left, "written": written}


def zip_result(graded_zips, name) -> dict:
    path = graded_zips["out"] / name / "results.json"
    assert path.is_file(), f"no results for {name}.zip; grader said:\n{graded_zips['result'].stderr[-2000:]}"
    return json.loads(path.read_text())


def test_zips_are_graded_with_exit_code_zero(graded_zips):
    assert graded_zips["result"].returncode == 0, graded_zips["result"].stderr[-3000:]


def test_a_submission_nested_one_folder_deep_is_graded_normally(graded_zips):
    result = zip_result(graded_zips, "zip_nested_folder")
    assert result["score"] == COURSE.max_points(), [t["output"] for t in result["tests"] if t["status"] != "passed"][:3]


def test_an_empty_zip_gets_a_clear_message(graded_zips):
    result = zip_result(graded_zips, "zip_empty")
    assert result["score"] == 0
    assert re.search(r"empty|no files|none of", "\n".join(outputs(result)), re.I)


def test_a_corrupt_zip_gets_a_clear_message(graded_zips):
    result = zip_result(graded_zips, "zip_corrupt")
    assert result["score"] == 0
    assert re.search(r"zip", "\n".join(outputs(result)), re.I)
    assert re.search(r"corrupt|not a (valid )?zip|bad|invalid|damaged|could not", "\n".join(outputs(result)), re.I)


def test_zip_slip_writes_nothing_outside_the_extraction(graded_zips):
    assert graded_zips["markers"] == []
    escaped = [p for p in graded_zips["written"] if "zipslip" in p.name]
    assert escaped == []
    for root in (ROOT, ROOT.parent, graded_zips["base"].parent):
        assert not list(root.glob("adversarial-zipslip*"))
    result = zip_result(graded_zips, "zip_slip")
    text = "\n".join(outputs(result))
    assert re.search(r"outside|unsafe|\.\./|absolute|not allowed|refus|reject", text, re.I), text[:500]


def test_a_zip_bomb_is_refused_with_a_clear_message(graded_zips):
    result = zip_result(graded_zips, "zip_bomb")
    text = "\n".join(outputs(result))
    assert re.search(r"too (large|big)|uncompressed|unpacks to more than|limit|size", text, re.I), text[:500]
    big = [p for p in graded_zips["written"] if p.is_file() and p.stat().st_size > 64 << 20]
    assert big == [], "the bomb was extracted where the test can see it"


def test_a_symlink_entry_is_not_followed(graded_zips):
    result = zip_result(graded_zips, "zip_symlink")
    lost = {t["name"].split(" ", 1)[0] for t in result["tests"] if t["status"] != "passed"}
    assert {s for s in COURSE.steps if s.startswith("simple_attention.")} <= lost
    lines = solution_lines()
    for text in outputs(result):
        assert not [line for line in lines if line in text]


# ------------------------------------------------------------------------------------------- across submissions
def _ipc_owned_by_workers() -> list[str]:
    """System V objects owned by a worker uid (the grader's blocks start at 1,000,000)."""
    found = []
    for kind in ("shm", "sem", "msg"):
        try:
            header, *rows = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        except OSError:
            continue
        columns = header.split()
        for row in rows:
            fields = dict(zip(columns, row.split()))
            if int(fields.get("uid", 0)) >= 1_000_000 or int(fields.get("cuid", 0)) >= 1_000_000:
                found.append(f"{kind} {row.split()[1]}")
    return found


def _trusted_at(level: str) -> list[str]:
    """At uid+rlimits the checkout's files are readable to every uid, so untrusted code is refused there
    (tests/integration/test_isolation.py shows it); what these tests look at, the leftovers between submissions, is
    the same."""
    return ["--trust-submissions"] if level == "uid+rlimits" else []


@pytest.mark.parametrize("level", ["namespaces", "uid+rlimits"])
def test_a_stash_reaches_no_later_submission(tmp_path, level):
    """The stash trick, then its reader, in one batch and in that order: neither gains a point, and no IPC
    object of a worker outlives the run (under uid+rlimits the machine's IPC is shared)."""
    subs = tmp_path / "subs"
    for order, name in enumerate(("stash_standins_sysv_shm", "stash_reader_sysv_shm")):
        shutil.copytree(ADV_DIR / name, subs / f"{order}_{name}")
    out = tmp_path / "out"
    with machine_to_ourselves():  # the machine's IPC objects are counted: another suite's stash takes its turn
        result = run_grade("autograde", str(subs), "--out", str(out), "--jobs", "1", *_trusted_at(level),
                           env={"AUTOGRADER_ISOLATION": level})
        left = _ipc_owned_by_workers()
    assert result.returncode == 0, result.stderr[-2000:]
    if level not in result.stdout:
        pytest.skip(f"this machine does not allow {level}: {result.stdout.strip().splitlines()[-1]}")
    scores = {p.parent.name: json.loads(p.read_text())["score"] for p in out.glob("*/results.json")}
    assert scores == {"0_stash_standins_sysv_shm": 3, "1_stash_reader_sysv_shm": 0}
    assert left == []


def _used_mb() -> float:
    info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return (int(info["MemTotal"].split()[0]) - int(info["MemAvailable"].split()[0])) / 1024


def _peak_use_mb(submission: str, out: Path):
    """Grade one corpus submission; the grading's run and how far the machine's memory in use rose meanwhile (MB)."""
    peak, stop = [_used_mb()], threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], _used_mb())
            time.sleep(0.05)

    peak[0] = start = _used_mb()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        result = run_grade("autograde", str(ADV_DIR / submission), "--out", str(out))
    finally:
        stop.set()
        sampler.join()
    return result, peak[0] - start


def test_memory_is_limited_per_submission_not_per_process(tmp_path):
    """Five forked children writing 1.5 GB each: the machine holds at most the submission's budget more than it does
    for the same submission without them (its honest control: the grader's own processes are counted in both)."""
    with machine_to_ourselves():  # the machine's memory is measured: another suite's memory tricks take their turn
        control, honest_mb = _peak_use_mb("fork_children_memory_control", tmp_path / "control")
        result, attack_mb = _peak_use_mb("fork_children_memory", tmp_path / "out")
    assert control.returncode == 0 and result.returncode == 0, control.stderr[-2000:] + result.stderr[-2000:]
    if "limited per submission" not in result.stdout:
        pytest.skip("no per-submission control group on this machine: " + result.stdout.strip().splitlines()[-1])
    budget = COURSE.limits.memory_mb
    assert attack_mb - honest_mb < budget + 1024, (f"the attack took {attack_mb:.0f} MB, "
                                                   f"its honest control {honest_mb:.0f} MB")
    graded = json.loads((tmp_path / "out" / "fork_children_memory" / "results.json").read_text())
    lost = [(t["name"], t.get("output", "")[:600]) for t in graded["tests"] if t.get("score") != t.get("max_score")]
    if _timed_out_as_allowed({"out": tmp_path / "out"}, "fork_children_memory"):
        return  # the other tests' load slowed the children's pages past the step's time: that step alone, at zero
    assert graded["score"] == COURSE.max_points(), lost  # what each lost count said, to tell a limit from a bug


# ----------------------------------------------------------- a trickled channel, marshalled bytecode, a hidden stash
#: a batch that hangs fails here, after this long, instead of holding CI forever (the current grader never ends one
#: with trickle_channel: the step's socket timeout restarts with every byte)
HANG_TIMEOUT = 600
#: what a batch with tricklers may take at most: each trickling step ends at its wall-clock budget (step_seconds)
TRICKLE_BOUND = 6 * COURSE.limits.step_seconds + 60


def _run_batch(names: dict[str, str], tmp_path: Path, *args: str, env: dict | None = None) -> dict:
    """Grade copies of corpus submissions (folder name -> corpus name) in one batch; a hang is reported, not waited
    on."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    for folder, name in names.items():
        shutil.copytree(ADV_DIR / name, subs / folder)
    start = time.monotonic()
    try:
        result = run_grade("autograde", str(subs), "--out", str(out), *args, env=env, timeout=HANG_TIMEOUT)
    except subprocess.TimeoutExpired:
        result = None
    scores = {p.parent.name: json.loads(p.read_text())["score"] for p in out.glob("*/results.json")}
    return {"result": result, "elapsed": time.monotonic() - start, "out": out, "scores": scores}


def _hung(run: dict) -> str:
    return (f"the batch did not finish within {HANG_TIMEOUT} s (graded by then: {run['scores']})"
            if run["result"] is None else "")


def test_a_trickle_on_the_channel_is_a_time_limit_and_the_batch_finishes(tmp_path):
    """trickle_channel announces a 1000-byte frame and sends a byte every 5 s: the step scores a time-limit zero
    within its wall-clock budget, the rest of the submission is graded, and the batch (with a correct submission
    beside it, --jobs 2) finishes on its own with every results.json and the class summary."""
    run = _run_batch({"trickle_channel": "trickle_channel", "correct": "trickle_channel_control"}, tmp_path,
                     "--jobs", "2")
    assert run["result"] is not None, _hung(run)
    assert run["result"].returncode == 0, run["result"].stderr[-2000:]
    assert run["elapsed"] < TRICKLE_BOUND, f"the batch took {run['elapsed']:.0f} s"
    assert sorted(run["scores"]) == ["correct", "trickle_channel"]
    assert (run["out"] / "summary.json").is_file()
    assert run["scores"]["correct"] == COURSE.max_points()
    trickler = json.loads((run["out"] / "trickle_channel" / "results.json").read_text())
    assert trickler["score"] == ADV_MANIFEST["trickle_channel"]["score"]
    lost = [t for t in trickler["tests"] if t["status"] != "passed"]
    assert {t["name"].split(" ", 1)[0] for t in lost} == {SA_STEP}
    assert all(re.search(r"time", t["output"], re.I) for t in lost), [t["output"] for t in lost]


def test_two_tricklers_do_not_starve_a_correct_submission(tmp_path):
    """With --jobs 2 and two tricklers, each job is held by one: the correct submission must still be graded."""
    run = _run_batch({"0_trickle": "trickle_channel", "1_trickle": "trickle_channel",
                      "2_correct": "trickle_channel_control"},
                     tmp_path, "--jobs", "2")
    assert run["scores"].get("2_correct") == COURSE.max_points(), _hung(run) or run["scores"]
    assert run["result"] is not None, _hung(run)
    assert run["result"].returncode == 0, run["result"].stderr[-2000:]
    assert run["elapsed"] < TRICKLE_BOUND, f"the batch took {run['elapsed']:.0f} s"
    assert run["scores"] == {"0_trickle": ADV_MANIFEST["trickle_channel"]["score"],
                             "1_trickle": ADV_MANIFEST["trickle_channel"]["score"], "2_correct": COURSE.max_points()}


SA_STEP = "simple_attention.attention_scores"
#: the machine's world-writable folders a worker uid may write under uid+rlimits (no private /tmp)
SHARED_FOLDERS = [Path("/run/lock"), Path("/var/tmp"), Path("/tmp"), Path("/dev/shm")]
RUN_LOCK_STASH = Path("/run/lock/adversarial-stash_run_lock")
#: a world-writable folder of root's inside /tmp, as /tmp/.X11-unix is on many machines: the writer stashes inside it
#: too
NESTED_SHARED = TMP / "adversarial-world-writable"


def _worker_files() -> set[str]:
    """Everything in the shared folders, at any depth, that a worker uid owns (the grader's blocks start at
    1,000,000). The walk enters only the folders a worker could write in (world-writable, a worker's own, or
    group-writable by a worker's group), as the grader's own sweep does (autograder/worker/leftovers.py): a worker
    can leave nothing anywhere else, and the other folders of a busy /tmp (this run's venvs and copies of the kit:
    hundreds of thousands of entries) cost seconds to walk for nothing."""
    found = set()
    for top in SHARED_FOLDERS:
        for folder, dirs, files in os.walk(top, onerror=lambda e: None):
            if folder == "/tmp":  # a Dask worker's folder: a cluster test's beside this one (this batch runs none)
                dirs[:] = [d for d in dirs if not d.startswith("grade-dask-")]
            enter = []
            for name, is_dir in [(d, True) for d in dirs] + [(f, False) for f in files]:
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if st.st_uid >= 1_000_000:
                    found.add(path)
                if is_dir and stat.S_ISDIR(st.st_mode) and (
                        st.st_mode & stat.S_IWOTH or st.st_uid >= 1_000_000
                        or (st.st_gid >= 1_000_000 and st.st_mode & stat.S_IWGRP)):
                    enter.append(name)
            dirs[:] = enter
    return found


@pytest.mark.parametrize("level", ["namespaces", "uid+rlimits"])
def test_a_stash_in_run_lock_reaches_no_later_submission(tmp_path, level):
    """stash_run_lock stores the stand-in CausalAttention's bytecode two folders deep in /run/lock and in every
    world-writable folder one level down in /tmp (this test makes one, root's, mode 1777), then stash_run_lock_reader
    (the stub CausalAttention) loads it, in one batch and in that order: the reader scores no more than its control,
    and no file a worker made is left at any depth of the machine's shared folders after the run."""
    with machine_to_ourselves():  # fixed paths and the machine's shared folders: another suite takes its turn
        _stash_in_run_lock(tmp_path, level)


def _stash_in_run_lock(tmp_path, level) -> None:
    shutil.rmtree(RUN_LOCK_STASH, ignore_errors=True)  # a failed earlier run's
    shutil.rmtree(NESTED_SHARED, ignore_errors=True)
    NESTED_SHARED.mkdir()
    NESTED_SHARED.chmod(0o1777)
    before = _worker_files()
    try:
        run = _run_batch({"0_stash_run_lock": "stash_run_lock", "1_stash_run_lock_reader": "stash_run_lock_reader",
                          "2_stash_run_lock_reader_control": "stash_run_lock_reader_control"},
                         tmp_path, "--jobs", "1", *_trusted_at(level), env={"AUTOGRADER_ISOLATION": level})
        assert run["result"] is not None, _hung(run)
        assert run["result"].returncode == 0, run["result"].stderr[-2000:]
        if level not in run["result"].stdout:
            pytest.skip(f"this machine does not allow {level}: {run['result'].stdout.strip().splitlines()[-1]}")
        # what a worker left, not what another grader on this machine has in use for a moment: still there 3 s later
        first = _worker_files() - before
        time.sleep(3)
        left = sorted(first & _worker_files())
        scores = run["scores"]
        assert scores["1_stash_run_lock_reader"] <= scores["2_stash_run_lock_reader_control"], scores
        assert scores == {"0_stash_run_lock": ADV_MANIFEST["stash_run_lock"]["score"],
                          "1_stash_run_lock_reader": ADV_MANIFEST["stash_run_lock_reader"]["score"],
                          "2_stash_run_lock_reader_control": ADV_MANIFEST["stash_run_lock_reader_control"]["score"]}
        assert left == [], "files a worker left in the machine's shared folders"
    finally:
        shutil.rmtree(RUN_LOCK_STASH, ignore_errors=True)
        shutil.rmtree(NESTED_SHARED, ignore_errors=True)


def test_no_reference_bytecode_decodes_from_a_leak(graded, leaks):
    """leak_standin_bytecode raises the stand-ins' marshalled bytecode (zlib, base85) on its public cases;
    leak_standin_bytecode_values writes the stand-in's instructions into a failing public case's values: nothing in
    their results.json (Gradescope output included) or feedback.html decodes to reference code
    (tests/support/leak_scan.py), and neither scores more than its control. Both and their control are graded in the
    corpus's batch (``graded``): this reads their results and the scan of them."""
    names = [n for n, e in ADV_MANIFEST.items() if e.get("no_decodable_reference_code")]
    assert sorted(names) == ["leak_standin_bytecode", "leak_standin_bytecode_values"]
    assert graded["result"].returncode == 0, graded["result"].stderr[-2000:]
    for name in [*names, "leak_standin_bytecode_control"]:
        assert (folder(graded, name) / "results.json").is_file() and (folder(graded, name) / "feedback.html").is_file()
        assert name not in leaks, (name, leaks[name])
    for name in names:
        control = ADV_MANIFEST[name]["control"]
        assert load(graded, name)["score"] <= load(graded, control)["score"], name
        assert load(graded, name)["score"] == ADV_MANIFEST[name]["score"], name

"""grade similarity: planted copies rank above independent solutions, fairly, without running student code."""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from autograder.cli import main as cli
from autograder.commands import similarity as verb
from autograder.similarity.compare_class import compare_class
from autograder.usage import UsageError
from autograder.similarity import book_code
from autograder.similarity.normalise import Module, tokens
from tests.conftest import run_grade
from tests.support.submission_forms import module_notebooks, one_notebook, zipped

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus" / "similarity"
SUBMISSIONS = CORPUS / "submissions"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
MODULES = ["simple_attention", "trainable_attention", "causal_attention", "multihead_attention"]


def _run(paths, out, **kwargs):
    return compare_class([Path(p) for p in paths], out, course_file=ROOT / "course.yml", **kwargs)


def _key(a: str, b: str) -> frozenset:
    return frozenset((a, b))


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("similarity")
    done = _run([SUBMISSIONS], out)
    return out, done, json.loads((out / "similarity.json").read_text())


def test_every_planted_pair_ranks_above_every_independent_pair(corpus_run):
    _, done, pairs = corpus_run
    planted = {_key(p["a"], p["b"]) for p in MANIFEST["planted"]}
    names = sorted(p.name for p in SUBMISSIONS.iterdir())
    assert done.submissions == len(names) == 15 and len(MANIFEST["independent"]) >= 10
    scores = {_key(p["a"], p["b"]): p["score"] for p in pairs}
    lowest_planted = min(scores.get(k, 0.0) for k in planted)
    others = {_key(a, b): scores.get(_key(a, b), 0.0) for i, a in enumerate(names) for b in names[i + 1:]
              if _key(a, b) not in planted}
    worst = max(others, key=others.get)
    assert lowest_planted > others[worst], (f"an independent pair {sorted(worst)} ({others[worst]}) ranks with or "
                                            f"above a planted copy ({lowest_planted})")
    ranked = [_key(p["a"], p["b"]) for p in pairs]
    top10 = ranked[:10]
    hits = sum(k in planted for k in top10)
    print(f"\nprecision at top 10 pairs: {hits}/10 = {hits / 10:.2f} (all {len(planted)} planted pairs are the top "
          f"{len(planted)}: precision at top {len(planted)} = "
          f"{sum(k in planted for k in ranked[:len(planted)]) / len(planted):.2f}); "
          f"lowest planted score {lowest_planted:.2f}, highest independent {others[worst]:.2f} {sorted(worst)}")
    assert set(ranked[:len(planted)]) == planted


def test_the_copied_step_is_named(corpus_run):
    _, _, pairs = corpus_run
    by_pair = {_key(p["a"], p["b"]): p for p in pairs}
    for planted in MANIFEST["planted"]:
        entry = by_pair[_key(planted["a"], planted["b"])]
        if "steps" in planted:  # one step copied, the rest the student's own
            assert entry["steps"] == planted["steps"], entry
        else:
            assert len(entry["steps"]) >= 5 and "multihead_attention.MultiHeadAttention" in entry["steps"], entry


def test_json_is_a_ranked_list_of_pairs(corpus_run):
    _, _, pairs = corpus_run
    assert pairs and all({"a", "b", "score", "steps"} <= set(p) for p in pairs)
    assert all(0 <= p["score"] <= 1 for p in pairs)
    assert [p["score"] for p in pairs] == sorted((p["score"] for p in pairs), reverse=True)
    names = {p.name for p in SUBMISSIONS.iterdir()}
    assert {p["a"] for p in pairs} | {p["b"] for p in pairs} <= names


def test_the_book_and_the_reference_are_nobodys(tmp_path, corpus_run):
    """Two students who both hand in the book's code, renamed and recommented, share nothing that counts."""
    _, _, pairs = corpus_run
    assert not [p for p in pairs if "book" in (p["a"], p["b"]) and p["score"] > 0.3]
    for name, prefix in (("ann", "my_"), ("ben", "tmp_")):
        dest = tmp_path / "class" / name
        dest.mkdir(parents=True)
        for module in MODULES:
            text = (SUBMISSIONS / "book" / f"{module}.py").read_text()
            text = re.sub(r"\b(attn_scores|attn_weights|keys|queries|values|masked|mask|T)\b(?!\s*=\s*[^=]*\))",
                          lambda m: prefix + m.group(1), text)
            (dest / f"{module}.py").write_text(f"# {name}'s work\n" + text)
    shutil.copytree(ROOT / "exercises", tmp_path / "class" / "stubs", ignore=shutil.ignore_patterns("__pycache__"))
    done = _run([tmp_path / "class"], tmp_path / "out")
    assert done.submissions == 3
    assert all(p["score"] < 0.3 for p in done.pairs), done.pairs


def test_normalisation_ignores_names_comments_formatting_and_order():
    first = '''
class A:
    def __init__(self, n):
        self.w = n  # weights
    def forward(self, x):
        total = x @ x.T
        return total.softmax(dim=-1)
'''
    second = '''
class A:
    """A docstring of my own."""

    def forward(me, inp):
        # another comment
        s = inp @ inp.T
        return s.softmax(
            dim=-1)

    def __init__(me, size):
        me.weights = size
'''
    def norm(text):
        module = Module(text)
        return [t.text for t in tokens(module, [module.definitions()["A"]], set())]

    assert norm(first) == norm(second)
    assert "softmax" in norm(first) and "dim" in norm(first)  # the API's names stay


def test_syntax_errors_get_a_note_not_a_crash(tmp_path):
    cls = tmp_path / "class"
    shutil.copytree(SUBMISSIONS / "style_bmm", cls / "broken")
    shutil.copytree(SUBMISSIONS / "copy_renamed", cls / "renamed")
    shutil.copytree(SUBMISSIONS / "correct_alt_style", cls / "alt")
    (cls / "broken" / "causal_attention.py").write_text("def simple_causal_mask(n):\n    return (\n")
    done = _run([cls], tmp_path / "out")
    page = (tmp_path / "out" / "similarity.html").read_text()
    assert "causal_attention.py does not parse (line 2" in page
    assert done.pairs[0]["a"] in ("renamed", "alt") and done.pairs[0]["score"] > 0.9


def test_student_code_is_never_run(tmp_path):
    marker = tmp_path / "ran"
    cls = tmp_path / "class"
    for name in ("one", "two"):
        shutil.copytree(SUBMISSIONS / "style_terse", cls / name)
        for module in MODULES:
            path = cls / name / f"{module}.py"
            path.write_text(f"open({str(marker)!r}, 'w').write('imported')\n" + path.read_text())
    done = _run([cls], tmp_path / "out")
    assert not marker.exists()
    assert done.pairs[0]["score"] > 0.9


def test_same_inputs_and_names_as_grade_autograde(tmp_path):
    """Folders, a .zip, notebooks per module, one notebook for all; names as grade autograde gives them."""
    cls = tmp_path / "class"
    cls.mkdir()
    zipped(SUBMISSIONS / "copy_renamed", cls / "renamed_student.zip")
    module_notebooks(SUBMISSIONS / "correct_alt_style", cls / "alt_student")
    one_notebook(SUBMISSIONS / "copy_reordered", cls, name="reordered_student.ipynb")
    shutil.copytree(SUBMISSIONS / "correct_loops", cls / "loops_student")
    (cls / "broken_student.zip").write_bytes(b"PK\x03\x04 not really a zip")
    done = _run([cls], tmp_path / "out")
    assert done.submissions == 5
    notes = re.findall(r"<li><strong>broken_student</strong>: ([^<]*)</li>",
                       (tmp_path / "out" / "similarity.html").read_text())
    assert notes and "broken_student.zip" in notes[0], notes
    ranked = {_key(p["a"], p["b"]): p["score"] for p in done.pairs}
    assert ranked[_key("renamed_student", "alt_student")] > 0.9
    assert ranked[_key("reordered_student", "loops_student")] > 0.9
    assert max(s for k, s in ranked.items() if k not in (_key("renamed_student", "alt_student"),
                                                       _key("reordered_student", "loops_student"))) < 0.8


def test_nbgrader_submitted(tmp_path):
    course = tmp_path / "course"
    for student, source in (("s001", "copy_unrolled"), ("s002", "style_functional"), ("s003", "style_bmm")):
        module_notebooks(SUBMISSIONS / source, course / "submitted" / student / "attention")
    done = _run([], tmp_path / "out", nbgrader=course)
    assert (done.pairs[0]["a"], done.pairs[0]["b"]) == ("s001", "s002") and done.pairs[0]["score"] > 0.9


def test_against_last_term(tmp_path):
    now, before = tmp_path / "now", tmp_path / "before"
    shutil.copytree(SUBMISSIONS / "copy_comprehension", now / "carol")
    shutil.copytree(SUBMISSIONS / "style_terse", now / "dan")
    shutil.copytree(SUBMISSIONS / "style_verbose", before / "old_eve")
    shutil.copytree(SUBMISSIONS / "copy_renamed", before / "old_fay")
    shutil.copytree(SUBMISSIONS / "correct_alt_style", before / "old_gus")
    done = _run([now], tmp_path / "out", against=before)
    assert done.previous == 3
    pairs = {(p["a"], p["b"]): p for p in done.pairs}
    assert pairs[("carol", "old_eve")]["terms"] == ["current", "previous"] and done.pairs[0]["a"] == "carol"
    assert not [p for p in done.pairs if p["a"].startswith("old_") and p["b"].startswith("old_")], \
        "last term's submissions are compared with this term's only"
    assert done.compared == 1 + 2 * 3


def test_command_line(tmp_path):
    runner = CliRunner()
    result = runner.invoke(cli, ["similarity", str(SUBMISSIONS), "--out", str(tmp_path / "out"),
                                 "--course", str(ROOT / "course.yml")])
    assert result.exit_code == 0, result.output
    assert "copy_" in result.output and "not a verdict" in result.output
    assert runner.invoke(cli, ["similarity", "--out", str(tmp_path / "o2")]).exit_code == 2


def test_report_opens_in_chromium_without_errors(browser, corpus_run):
    out, _, pairs = corpus_run
    page = (out / "similarity.html").read_text()
    assert "<script" not in page.lower() and not re.search(r"""(src|href)=['"]?https?:""", page)
    view = browser.open(out / "similarity.html")
    assert view.console_errors == []
    text = view.text()
    assert "No verdict." in text and "never gives a verdict" in text
    assert f"{pairs[0]['a']} and {pairs[0]['b']}" in text
    marks = view.page.evaluate("() => document.querySelectorAll('#pair-1 mark').length")
    assert marks >= 10  # the shared fragments are highlighted on both sides


def test_corpus_is_what_its_generator_makes(tmp_path):
    sys.path.insert(0, str(CORPUS))
    try:
        import make_corpus  # noqa: PLC0415 - the corpus's own script, importable only with its folder on sys.path
    finally:
        sys.path.remove(str(CORPUS))
    make_corpus.main(tmp_path / "submissions", tmp_path / "manifest.json")
    assert json.loads((tmp_path / "manifest.json").read_text()) == MANIFEST
    made = sorted(p.relative_to(tmp_path / "submissions") for p in (tmp_path / "submissions").rglob("*.py"))
    assert made == sorted(p.relative_to(SUBMISSIONS) for p in SUBMISSIONS.rglob("*.py"))
    assert all((tmp_path / "submissions" / p).read_text() == (SUBMISSIONS / p).read_text() for p in made)


def test_book_code_is_taken_from_the_course_documents():
    seeds = ROOT.parent / "shared" / "seeds"
    if not seeds.is_dir():
        pytest.skip(f"the course documents are not at {seeds}")
    assert book_code.build(seeds) == json.loads(book_code.DATA.read_text())
    assert any("class MultiHeadAttentionWrapper" in code for code in book_code.load())


BOOK_LOOP = '''
    context_vec = torch.zeros(inputs.shape[1])
    for i in range(inputs.shape[0]):
        context_vec += attn_weights[i] * inputs[i]
    return context_vec
'''
OWN_LOOP = '''
    acc = [w * row for w, row in zip(attn_weights.unbind(0), inputs.unbind(0))]
    out = acc.pop()
    while acc:
        out = out + acc.pop()
    return out
'''


@pytest.mark.parametrize("body, shared", [(BOOK_LOOP, False), (OWN_LOOP, True)], ids=["the-book's-loop", "control"])
def test_the_books_code_is_boilerplate(tmp_path, body, shared):
    """Two students who write context_vector the book's way share nothing; the same two with a loop of their own
    (the control) are found."""
    for name in ("ann", "ben"):
        shutil.copytree(ROOT / "exercises", tmp_path / "class" / name, ignore=shutil.ignore_patterns("__pycache__"))
        path = tmp_path / "class" / name / "simple_attention.py"
        text = path.read_text()
        stub = '    raise NotImplementedError("simple_attention.context_vector: not attempted yet")\n'
        assert stub in text
        path.write_text(text.replace(stub, body.lstrip("\n")))
    done = _run([tmp_path / "class"], tmp_path / "out")
    found = [p for p in done.pairs if p["score"] > 0.3]
    assert bool(found) == shared, done.pairs
    if shared:
        assert found[0]["steps"] == ["simple_attention.context_vector"]


def test_the_verb_is_plain_python(tmp_path):
    source = (ROOT / "autograder" / "commands" / "similarity.py").read_text()
    assert "import click" not in source and "sys.exit" not in source
    with pytest.raises(UsageError, match="not both or neither"):
        verb.main((), out=tmp_path)
    with pytest.raises(UsageError, match="no submission to compare"):
        verb.main([tmp_path / "nowhere"], out=tmp_path, course_file=ROOT / "course.yml")
    assert verb.main([SUBMISSIONS / "style_bmm", SUBMISSIONS / "book"], tmp_path / "out",
                     course_file=ROOT / "course.yml") == 0
    assert json.loads((tmp_path / "out" / "similarity.json").read_text()) == []  # the book shares nothing that counts


def test_the_class_dashboard_lists_the_top_pairs(tmp_path, browser):
    """grade similarity --out a results folder: its dashboard (summary.html) lists the most similar pairs."""
    subs = tmp_path / "subs"
    for name in ("copy_renamed", "correct_einsum", "style_verbose"):
        shutil.copytree(SUBMISSIONS / name, subs / name)
    out = tmp_path / "results"
    graded = run_grade("autograde", str(subs), "--out", str(out))
    assert graded.returncode == 0, graded.stderr
    assert "Most similar pairs" not in (out / "summary.html").read_text()  # control: not before it is run
    result = CliRunner().invoke(cli, ["similarity", str(subs), "--out", str(out), "--course", str(ROOT / "course.yml")])
    assert result.exit_code == 0, result.output
    top = json.loads((out / "similarity.json").read_text())[0]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["similar_pairs"][0]["a"] == top["a"] and summary["submissions"] == 3
    view = browser.open(out / "summary.html")
    assert view.console_errors == [] and view.broken_images() == []
    text = view.text()
    assert "Most similar pairs" in text and top["a"] in text and "not a finding" in text

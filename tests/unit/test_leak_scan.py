"""tests/support/leak_scan.py finds reference code however it is wrapped, and nothing where there is none.

Its planted positive controls: a results.json whose test output carries the reference's own compiled
``CausalAttention.forward`` (marshal, zlib, base85, as a submission's exception message would), the same wrapped once
more (base64 of it), a solution line as gzip+a85, the instructions written into the values of a mismatch table; and
its negative controls: an honest submission's feedback (numbers, pictures, messages) and a blob of someone else's code.
"""
from __future__ import annotations

import base64
import bz2
import gzip
import json
import lzma
import marshal
import opcode
import zlib
from pathlib import Path

import pytest

from tests.support import leak_scan

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def code():
    return leak_scan.ReferenceCode.load(ROOT)


@pytest.fixture(scope="module")
def forward(code):
    """The stand-in CausalAttention.forward, compiled as the grader ships it to a worker."""
    return next(c for name, c in code.codes.items() if name.endswith("CausalAttention: CausalAttention.forward")
                and name.startswith("stand-in"))


def results(tmp_path: Path, name: str, message: str, html: str = "") -> Path:
    folder = tmp_path / name
    folder.mkdir(parents=True)
    test = {"name": "multihead_attention.MultiHeadAttentionWrapper forward: Multi-head wrapper", "score": 0,
            "max_score": 2, "status": "failed", "output": message, "visibility": "visible"}
    (folder / "results.json").write_text(json.dumps({"score": 78, "output": html, "tests": [test]}))
    if html:
        (folder / "feedback.html").write_text(html)
    return folder


def slim(code_object):
    return code_object.replace(co_filename="", co_linetable=b"", co_exceptiontable=b"", co_qualname=code_object.co_name)


def test_marshalled_reference_code_as_zlib_base85_is_found(tmp_path, code, forward):
    blob = base64.b85encode(zlib.compress(marshal.dumps(slim(forward)), 9)).decode()
    results(tmp_path, "planted",
            f"your code raised RuntimeError (multihead_attention.py, line 25) during forward: {blob}")
    found = leak_scan.scan_results(tmp_path, lines=set(), code=code)
    assert list(found) == ["planted"]
    assert any("CausalAttention.forward" in item for item in found["planted"]), found


@pytest.mark.parametrize("wrap", ["b64(b85(zlib))", "hex(lzma)", "a85(bz2) in html", "b64(gzip) of a tuple"])
def test_the_same_code_is_found_in_other_wrappings(tmp_path, code, forward, wrap):
    data = marshal.dumps(slim(forward))
    if wrap == "b64(b85(zlib))":
        text = base64.b64encode(base64.b85encode(zlib.compress(data))).decode()
    elif wrap == "hex(lzma)":
        text = lzma.compress(data).hex()
    elif wrap == "a85(bz2) in html":
        text = ("<pre>" + base64.a85encode(bz2.compress(data)).decode().replace("&", "&amp;").replace("<", "&lt;")
                + "</pre>")
    else:
        text = base64.b64encode(gzip.compress(marshal.dumps(("forward", slim(forward), 1)))).decode()
    assert any("CausalAttention.forward" in item for item in leak_scan.decodable_reference_code(text, code)), wrap


def test_a_solution_line_in_gzip_a85_is_still_found(tmp_path, code):
    line = next(text for text in leak_scan.solution_lines(ROOT) if "masked_fill" in text)
    results(tmp_path, "line", "raised: " + base64.a85encode(gzip.compress(line.encode())).decode())
    assert leak_scan.scan_results(tmp_path, lines={line}, code=code) == {"line": [line]}


def test_instructions_in_the_values_of_a_mismatch_table_are_found(tmp_path, code, forward):
    """As leak_standin_bytecode_values writes them: 3 bytes per value, as integers; the table lists the largest
    first."""
    cache = opcode.opmap["CACHE"]
    ops = bytes(b for i in range(0, len(forward.co_code), 2) if forward.co_code[i] != cache
                for b in forward.co_code[i:i + 2])[40:64]
    values = [1 + int.from_bytes(ops[i:i + 3], "big") for i in range(0, 24, 3)]
    rows = sorted(((v, [0, i // 2, i % 2]) for i, v in enumerate(values)), reverse=True)
    table = "<table class=\"mismatches\"><caption>Largest mismatches</caption>" + "".join(
        f"<tr><td>{idx}</td><td>0.1234</td><td>{v:.4f}</td><td>{v - 0.1234:.4f}</td></tr>"
        for v, idx in rows) + "</table>"
    results(tmp_path, "values", "output: values differ at 8 of 48 entries", html=f"<html><body>{table}</body></html>")
    found = leak_scan.scan_results(tmp_path, lines=set(), code=code)
    assert any("CausalAttention.forward" in item for item in found.get("values", [])), found


def test_an_honest_feedback_page_holds_nothing(tmp_path, code):
    """Negative control: a failing public case's words, numbers and picture, and another function's bytecode."""
    def mine(x):
        total = 0
        for row in x:
            total += sum(v * v for v in row if v > 0) / max(len(row), 1)
        return [total, x, len(x)]

    other = base64.b85encode(zlib.compress(marshal.dumps(slim(mine.__code__)))).decode()
    picture = base64.b64encode(zlib.compress(bytes(range(256)) * 64)).decode()
    table = "<table><tr><td>[1, 5, 1]</td><td>0.3493</td><td>0.7412</td><td>0.3919</td></tr>" \
            "<tr><td>[0, 2, 0]</td><td>-0.6300</td><td>-0.1021</td><td>0.5279</td></tr></table>"
    message = ("multihead_attention.MultiHeadAttentionWrapper [forward] case 'book batch (2, 6, 3)': failed\n"
               "    expected row [1, 5]: [-0.5299, -0.1081, 0.5077, 0.3493]\n"
               "    got      row [1, 5]: [0.1234, 0.5000, 2.0000, 3.0000, 4.0000]\n"
               f"  your code raised RuntimeError: {other}")
    results(tmp_path, "honest", message, html=f'<img src="data:image/png;base64,{picture}">{table}')
    assert leak_scan.scan_results(tmp_path, lines=leak_scan.solution_lines(ROOT), code=code) == {}

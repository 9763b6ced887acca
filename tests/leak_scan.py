"""Find reference solution lines hidden in feedback as encoded blobs (base85, base64, ...; compressed or not).

The redaction in ``autograder/grading/reference_quotes.py`` looks for solution lines as text. A submission that finds the
reference in its worker can raise ``RuntimeError(base64.b85encode(zlib.compress(source)))`` instead: no line is
readable, yet the student decodes it from results.json. ``decodable_solution_lines`` undoes that: every long
token of an encoding's alphabet is decoded (base85, ascii85, base64, urlsafe base64, base32, hex), then read as
is and decompressed (zlib, raw deflate, gzip, bz2, lzma; a damaged stream yields what decodes before the damage),
and the solution lines found in any of that are returned.

``hidden_value_needles`` and ``scan_pages`` look for the other thing a page must never show: a hidden case's
expected values (as a number with six significant digits, the way a scalar is printed, or two neighbours of a
row with four decimals, the way a row is printed), in every results.json, feedback.html and summary.html.

    python -m tests.leak_scan RESULTS_DIR        # every <name>/results.json under RESULTS_DIR
"""
from __future__ import annotations

import base64
import binascii
import bz2
import json
import lzma
import math
import re
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIN_TOKEN = 20  # shorter tokens cannot hold a solution line (16 characters or more) once encoded

_N = "{%d,}" % MIN_TOKEN
_ALPHABETS = {
    "b85": re.compile(r"[0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~]" + _N),
    "a85": re.compile(r"<~[!-uz]" + _N + r"~>|[!-uz]" + _N),
    "b64": re.compile(r"[A-Za-z0-9+/=]" + _N),
    "b64url": re.compile(r"[A-Za-z0-9\-_=]" + _N),
    "b32": re.compile(r"[A-Z2-7=]" + _N),
    "hex": re.compile(r"[0-9a-fA-F]" + _N),
}


def _decode(kind: str, token: str) -> bytes | None:
    try:
        if kind == "b85":
            return base64.b85decode(token)
        if kind == "a85":
            return base64.a85decode(token, adobe=token.startswith("<~"))
        if kind == "b64":
            return base64.b64decode(token + "=" * (-len(token) % 4))
        if kind == "b64url":
            return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        if kind == "b32":
            return base64.b32decode(token + "=" * (-len(token) % 8))
        if kind == "hex":
            return bytes.fromhex(token[: len(token) // 2 * 2])
    except (ValueError, binascii.Error):
        return None
    return None


def _stream(decompressor, data: bytes, step: int = 64) -> bytes:
    """Decompress in small pieces, keeping what came out before the stream turned out damaged or truncated."""
    out = b""
    for i in range(0, len(data), step):
        try:
            out += decompressor.decompress(data[i:i + step])
        except (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError):
            break
    return out


def _unpacked(data: bytes) -> list[bytes]:
    found = [data]
    for make in (lambda: zlib.decompressobj(), lambda: zlib.decompressobj(-15), lambda: zlib.decompressobj(31),
                 bz2.BZ2Decompressor, lzma.LZMADecompressor):
        out = _stream(make(), data)
        if out:
            found.append(out)
    return found


def _norm(text: str) -> str:
    """Whitespace collapsed and quotes unified: ast.unparse (the stand-ins' form) writes 'x' for "x"."""
    return " ".join(text.split()).replace('"', "'")


def decoded_texts(text: str) -> list[str]:
    """Every text that a token of ``text`` decodes (and decompresses) to."""
    texts = []
    seen = set()
    for kind, pattern in _ALPHABETS.items():
        for match in pattern.finditer(text):
            token = match.group(0)
            # a blob may have picked up a character or two of the surrounding text
            for start in range(0, min(4, len(token) - MIN_TOKEN) + 1):
                for end in range(0, min(4, len(token) - start - MIN_TOKEN) + 1):
                    piece = token[start:len(token) - end]
                    if (kind, piece) in seen:
                        continue
                    seen.add((kind, piece))
                    data = _decode(kind, piece)
                    if data:
                        texts += [b.decode("utf-8", "replace") for b in _unpacked(data)]
    return texts


def decodable_solution_lines(text: str, lines) -> list[str]:
    """The solution ``lines`` that some encoded blob in ``text`` holds (as is, or compressed)."""
    wanted = {_norm(line): line for line in lines if line.strip()}
    found = []
    for decoded in decoded_texts(text):
        flat = _norm(decoded)
        found += [line for norm, line in wanted.items() if norm in flat and line not in found]
    return found


def solution_lines(root: Path = ROOT) -> set[str]:
    """Lines between ### BEGIN SOLUTION and ### END SOLUTION in solutions/*.py, stripped, 16 characters or more."""
    lines = set()
    for path in sorted((root / "solutions").glob("*.py")):
        inside = False
        for line in path.read_text().splitlines():
            text = line.strip()
            if text == "### BEGIN SOLUTION":
                inside = True
            elif text == "### END SOLUTION":
                inside = False
            elif inside and len(text) >= 16:
                lines.add(text)
    return lines


def scan_results(results_dir: Path, lines=None) -> dict[str, list[str]]:
    """Submission name -> solution lines decodable from its results.json (outputs of the result and its tests)."""
    lines = solution_lines() if lines is None else lines
    leaks = {}
    for path in sorted(Path(results_dir).glob("*/results.json")):
        result = json.loads(path.read_text())
        texts = [result.get("output", "")] + [t.get("output", "") for t in result.get("tests", [])]
        found = []
        for text in texts:
            found += [line for line in decodable_solution_lines(text or "", lines) if line not in found]
        if found:
            leaks[path.parent.name] = found
    return leaks


_NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d+(?:e[-+]?\d+)?")
_PAIR = re.compile(r"(?=(?<![\w.])(-?\d+\.\d{4}), (-?\d+\.\d{4})(?![\d]))")


def _tensors(answer: dict, limit: int = 100_000):
    """The float tensors of a reference answer (outputs, gradients), skipping the millions of GPT-2's parameters."""
    import torch  # noqa: PLC0415

    def walk(value):
        if isinstance(value, torch.Tensor):
            if value.dtype.is_floating_point and 0 < value.numel() <= limit:
                yield value.detach().double()
        elif isinstance(value, dict):
            for item in value.values():
                yield from walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                yield from walk(item)

    for key in ("output", "input_grads", "param_grads"):
        yield from walk(answer.get(key))


def _singles(t) -> set[str]:
    return {f"{v:.6g}" for v in t.flatten().tolist() if math.isfinite(v) and len(f"{v:.6g}".strip("-0.").replace(".", "")) >= 5}


def _pairs(t) -> set[tuple[str, str]]:
    rows = t.reshape(-1, t.shape[-1]) if t.dim() else t.reshape(1, 1)
    found = set()
    for row in rows.tolist():
        text = [f"{v:.4f}" for v in row]
        found.update(zip(text, text[1:]))
    return found


def hidden_value_needles(root: Path = ROOT) -> dict[str, set]:
    """What a page would show of a hidden case's expected values: {"singles": {...}, "pairs": {...}}, minus
    anything a public case shows the same way (public values may be shown)."""
    from autograder.autograde.session import Grader  # noqa: PLC0415

    grader = Grader(root / "course.yml")
    try:
        grader.warm_cache()  # the reference's answer to every case, hidden ones included, in this process
        hidden, public = {"singles": set(), "pairs": set()}, {"singles": set(), "pairs": set()}
        for (step, count, *_), (case, expected) in grader.cache.items():
            visible = bool(case.get("public")) and grader.course.steps[step].counts[count].visibility == "public"
            for t in _tensors(expected):
                (public if visible else hidden)["singles"].update(_singles(t))
                (public if visible else hidden)["pairs"].update(_pairs(t))
    finally:
        grader.close()
    trivial = {("0.0000", "0.0000"), ("1.0000", "0.0000"), ("0.0000", "1.0000"), ("-0.0000", "0.0000")}
    return {"singles": hidden["singles"] - public["singles"], "pairs": hidden["pairs"] - public["pairs"] - trivial}


def values_in(text: str, needles: dict[str, set]) -> list[str]:
    """The hidden values ``text`` shows."""
    found = [n for n in _NUMBER.findall(text) if n in needles["singles"]]
    found += [f"{a}, {b}" for a, b in _PAIR.findall(text) if (a, b) in needles["pairs"]]
    return found


def scan_pages(results_dir: Path, needles: dict[str, set]) -> dict[str, list[str]]:
    """File (relative to ``results_dir``) -> the hidden expected values it shows; empty when none does."""
    leaks = {}
    files = [*Path(results_dir).glob("*/results.json"), *Path(results_dir).glob("*/feedback.html"),
             *Path(results_dir).glob("summary.*")]
    for path in sorted(files):
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".json":  # results.json: its outputs (JSON escapes would hide nothing, but be exact)
            data = json.loads(text)
            text = "\n".join([str(data.get("output", ""))] + [str(t.get("output", "")) for t in data.get("tests", [])]) \
                if isinstance(data, dict) and "tests" in data else text
        found = values_in(text, needles)
        if found:
            leaks[str(path.relative_to(results_dir))] = found
    return leaks


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    leaks = scan_results(Path(argv[0]))
    for name, found in leaks.items():
        print(f"{name}: {len(found)} solution line(s) decodable from the feedback")
        for line in found:
            print(f"    {line}")
    return 1 if leaks else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

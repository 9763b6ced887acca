"""Find reference solution lines hidden in feedback as encoded blobs (base85, base64, ...; compressed or not).

The redaction in ``autograder/grading/suites/reference_quotes.py`` looks for solution lines as text. A submission that
finds the reference in its worker can raise ``RuntimeError(base64.b85encode(zlib.compress(source)))`` instead: no line
is readable, yet the student decodes it from results.json. ``decodable_solution_lines`` undoes that: every long token of
an encoding's alphabet is decoded (base85, ascii85, base64, urlsafe base64, base32, hex), then read as is and
decompressed (zlib, raw deflate, gzip, bz2, lzma; a damaged stream yields what decodes before the damage), and the
solution lines found in any of that are returned.

Reference *code* can leave without a single line of source: a worker holds the stand-ins as bytecode, and a
submission can raise ``base85(zlib(marshal(CausalAttention.forward.__code__)))`` or write the bytes of its instructions
into the values of a failing public case. ``ReferenceCode`` holds what such a leak would carry (every reference
function's code object, compiled as the grader compiles the stand-ins: its ``co_code``, raw and without the inline
caches, and its names and constants); ``decodable_reference_code`` decodes every blob of a text, recursively a few
layers (encodings of encodings, compressed or not), reads what comes out as text, as marshal data (code objects are
compared with the reference's) and as raw bytes (any 24 bytes of a reference function's instructions), and does the
same with the numbers a page prints (each float as an integer of 1 to 4 bytes, as float32 bits, or as a byte in
1/256ths; the tables of largest mismatches read in index order). ``scan_results`` reports both, for every string of
every results.json (the Gradescope output included) and every feedback.html.

``hidden_value_needles`` and ``scan_pages`` look for the other thing a page must never show: a hidden case's
expected values (as a number with six significant digits, the way a scalar is printed, or two neighbours of a
row with four decimals, the way a row is printed), in every results.json, feedback.html and summary.html.

    python -m tests.support.leak_scan RESULTS_DIR        # every <name>/results.json under RESULTS_DIR
"""
from __future__ import annotations

import base64
import binascii
import bz2
import html
import json
import lzma
import marshal
import math
import opcode
import re
import struct
import sys
import types
import zlib
from pathlib import Path

from autograder.course import load_course

ROOT = Path(__file__).resolve().parents[2]
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


_TAG = re.compile(r"</?[a-z][a-z0-9]*>")


def _tokens(text: str):
    """(kind, piece) for every long token of an encoding's alphabet in ``text``, with a few characters trimmed off
    either end (a blob may have picked up a character or two of the surrounding text)."""
    seen = set()
    for kind, pattern in _ALPHABETS.items():
        for match in pattern.finditer(text):
            # base85 and ascii85 blobs take in the HTML tags around them (< and > are in their alphabets)
            parts = {match.group(0), *(p for p in _TAG.split(match.group(0)) if len(p) >= MIN_TOKEN)}
            for token in parts:
                for start in range(0, min(4, len(token) - MIN_TOKEN) + 1):
                    for end in range(0, min(4, len(token) - start - MIN_TOKEN) + 1):
                        piece = token[start:len(token) - end]
                        if (kind, piece) not in seen:
                            seen.add((kind, piece))
                            yield kind, piece


def _printable(data: bytes) -> str | None:
    """``data`` as text when it mostly is text (a further layer of encoding may hide in it), else None."""
    if len(data) < MIN_TOKEN:
        return None
    text = data.decode("utf-8", "replace")
    good = sum(ch.isprintable() or ch in "\n\r\t" for ch in text)
    return text if good >= 0.95 * len(text) else None


def decoded_blobs(text: str, depth: int = 3, _seen: set | None = None) -> list[bytes]:
    """Every byte string that a token of ``text`` decodes (and decompresses) to, and, while ``depth`` lasts, what
    tokens of those decode to in turn (base64 of base85 of zlib...)."""
    seen = set() if _seen is None else _seen
    found = []
    for kind, piece in _tokens(text):
        data = _decode(kind, piece)
        if not data:
            continue
        for blob in _unpacked(data):
            if blob in seen:
                continue
            seen.add(blob)
            found.append(blob)
            inner = _printable(blob) if depth > 1 else None
            if inner is not None and inner != text:
                found += decoded_blobs(inner, depth - 1, seen)
    return found


def decoded_texts(text: str) -> list[str]:
    """Every text that a token of ``text`` decodes (and decompresses) to."""
    return [b.decode("utf-8", "replace") for b in decoded_blobs(text)]


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


# ------------------------------------------------------------------------------------------- reference bytecode
WINDOW = 24  # bytes of a reference function's instructions that count as its code (never all alike: see _windows)


def _all_codes(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _all_codes(const)


def _without_caches(co_code: bytes) -> bytes:
    """The instructions without Python 3.11+'s inline CACHE entries (zeros, and what a leak would drop first)."""
    cache = opcode.opmap.get("CACHE")
    return bytes(b for i in range(0, len(co_code), 2) if co_code[i] != cache for b in co_code[i:i + 2])


def _windows(data: bytes, size: int = WINDOW) -> set[bytes]:
    """Every ``size`` bytes of ``data`` with at least 10 different values: runs of caches or of one instruction say
    nothing about whose code it is."""
    return {data[i:i + size] for i in range(0, max(len(data) - size + 1, 0)) if len(set(data[i:i + size])) >= 10}


class ReferenceCode:
    """What a leak of the reference's compiled code would carry: each function of each stand-in as the grader compiles
    it (``reference.standin_code``), and of each solution module as Python compiles it."""

    def __init__(self, codes: dict[str, types.CodeType]):
        self.codes = {}  # name -> code object: every function with instructions worth the name
        self.by_code: dict[bytes, str] = {}
        self.by_names: dict[tuple, str] = {}
        self.windows: dict[bytes, str] = {}
        for origin, top in codes.items():
            for code in _all_codes(top):
                if code.co_name.startswith("<") or len(_without_caches(code.co_code)) < WINDOW:
                    continue
                name = f"{origin}: {code.co_qualname}"
                self.codes[name] = code
                self.by_code.setdefault(code.co_code, name)
                if len(code.co_names) >= 5:
                    self.by_names.setdefault((code.co_names, code.co_consts), name)
                for window in _windows(code.co_code) | _windows(_without_caches(code.co_code)):
                    self.windows.setdefault(window, name)

    @classmethod
    def load(cls, root: Path = ROOT) -> "ReferenceCode":
        sys.path.insert(0, str(root)) if str(root) not in sys.path else None
        from autograder.grading.suites.reference import Reference  # noqa: PLC0415 - imported on first use: torch is slow to load

        course = load_course(root / "course.yml")
        modules = sorted({step.split(".", 1)[0] for step in course.steps})
        reference = Reference(root / "solutions", modules, list(course.steps))
        # each step's code as the grader once shipped it to workers (compiled from its stripped source), and the
        # solution modules as files: what a leak would carry
        codes = {f"stand-in {step}": compile(src, f"<stand-in {step}>", "exec")
                 for step, src in reference.standin_sources().items()}
        for path in sorted((root / "solutions").glob("*.py")):
            codes[f"solutions/{path.name}"] = compile(path.read_text(), str(path), "exec")
        return cls(codes)

    def _in_object(self, value, found: list[str], depth: int = 0) -> None:
        if depth > 6:
            return
        if isinstance(value, types.CodeType):
            for code in _all_codes(value):
                name = self.by_code.get(code.co_code) or self.by_names.get((code.co_names, code.co_consts))
                if name is None:
                    name = self.in_bytes(code.co_code)
                if name and name not in found:
                    found.append(name)
        elif isinstance(value, (bytes, bytearray)):
            name = self.in_bytes(bytes(value))
            if name and name not in found:
                found.append(name)
        elif isinstance(value, (tuple, list, set, frozenset)):
            if tuple(value) in {names for names, _ in self.by_names}:
                name = next(n for (names, _), n in self.by_names.items() if names == tuple(value))
                if name not in found:
                    found.append(name)
            for item in value:
                self._in_object(item, found, depth + 1)
        elif isinstance(value, dict):
            for key, item in value.items():
                self._in_object(key, found, depth + 1)
                self._in_object(item, found, depth + 1)

    def in_bytes(self, data: bytes) -> str | None:
        """The reference function whose instructions (24 bytes of them at least) ``data`` holds, if any."""
        for i in range(0, len(data) - WINDOW + 1):
            name = self.windows.get(data[i:i + WINDOW])
            if name:
                return name
        return None

    def in_blob(self, data: bytes) -> list[str]:
        """The reference functions a decoded blob holds: as marshal data (code objects, their co_code, co_names and
        co_consts, in tuples, lists or dicts) or anywhere in its bytes."""
        found: list[str] = []
        if _marshal_like(data):
            try:
                self._in_object(marshal.loads(data), found)
            except (ValueError, EOFError, TypeError):
                pass
        name = self.in_bytes(data)
        if name and name not in found:
            found.append(name)
        return found


def _marshal_like(data: bytes) -> bool:
    """Whether ``data`` starts as marshal writes a code object, a tuple, list, dict or set, with a plausible size:
    marshal.loads of any bytes may allocate what a made-up count asks for."""
    if len(data) < 8 or len(data) > 1 << 20:
        return False
    kind = chr(data[0] & 0x7F)
    if kind in "c{)":
        return True
    if kind in "([<>":
        return int.from_bytes(data[1:5], "little") <= len(data)
    return False


_FLOAT = r"-?(?:\d+\.\d*|\d+)(?:e[-+]?\d+)?|-?nan|-?inf"
_TABLE_ROW = re.compile(r"<tr><td>\[([\d, ]+)\]</td><td>(" + _FLOAT + r")</td><td>(" + _FLOAT + r")</td>")
_LIST = re.compile(r"\[((?:\s*" + _FLOAT + r"\s*,){3,}\s*(?:" + _FLOAT + r")\s*)\]")


def printed_numbers(text: str) -> list[list[float]]:
    """Runs of numbers a page prints: each table of largest mismatches ("yours", in index order, as a student would
    sort them to read a message), each bracketed list ("got row [1, 5]: [...]"), and all of them, in order."""
    runs = []
    tables = re.split(r"<table", text)
    for table in tables[1:]:
        rows = [(tuple(int(i) for i in idx.split(",")), float(yours)) for idx, _exp, yours in _TABLE_ROW.findall(table)]
        if rows:
            runs.append([v for _, v in sorted(rows)])
    for match in _LIST.finditer(text):
        runs.append([float(v) for v in re.findall(_FLOAT, match.group(1))])
    if len(runs) > 1:
        runs.append([v for run in runs for v in run])
    return runs


def numbers_as_bytes(values: list[float]) -> list[bytes]:
    """What a run of printed numbers could carry: each as an integer of 1 to 4 bytes (big or little endian, as is or
    less an offset of 1), as float32 bits, or as a byte in 1/256ths."""
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < 4:
        return []
    out = []
    if all(v == int(v) for v in finite):
        for offset in (0, 1):
            ints = [int(v) - offset for v in finite]
            for width in (1, 2, 3, 4):
                if all(0 <= n < 256 ** width for n in ints):
                    for order in ("big", "little"):
                        out.append(b"".join(n.to_bytes(width, order) for n in ints))
    for fmt in (">f", "<f"):
        try:
            out.append(b"".join(struct.pack(fmt, v) for v in finite))
        except (OverflowError, struct.error):
            pass
    scaled = [round(v * 256) for v in finite]
    if all(0 <= n < 256 and abs(n / 256 - v) < 1e-4 for n, v in zip(scaled, finite)):
        out.append(bytes(scaled))
    return out


def _without_pictures(text: str) -> str:
    """The page without its inline PNGs: pictures drawn by the grader, whose base64 is megabytes of no one's code."""
    return re.sub(r"data:image/[a-z+]+;base64,[A-Za-z0-9+/=\s]+", "data:image", text)


def decodable_reference_code(text: str, code: ReferenceCode, lines=(), wanted: dict[str, str] | None = None
                             ) -> list[str]:
    """What of the reference ``text`` lets a student decode: solution lines (as text in any blob) and reference
    functions (as marshal data or instructions in any blob, or in the numbers it prints), each named once.
    ``wanted``: ``lines`` as ``_wanted`` gives them, for a caller that scans many texts for the same lines."""
    text = _without_pictures(html.unescape(text))
    wanted = _wanted(lines) if wanted is None else wanted
    found: list[str] = []
    blobs = decoded_blobs(text)
    for run in printed_numbers(text):
        for data in numbers_as_bytes(run):
            blobs += [data, *[b for b in _unpacked(data)[1:]]]
    for blob in blobs:
        for name in code.in_blob(blob):
            if f"bytecode of {name}" not in found:
                found.append(f"bytecode of {name}")
        if wanted:
            flat = _norm(blob.decode("utf-8", "replace"))
            found += [line for norm, line in wanted.items() if norm in flat and line not in found]
    return found


def _wanted(lines) -> dict[str, str]:
    """The solution lines to look for, each as it reads with whitespace and quotes made alike (``_norm``)."""
    return {_norm(line): line for line in lines if line.strip()}


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def scan_results(results_dir: Path, lines=None, code: ReferenceCode | None = None) -> dict[str, list[str]]:
    """Submission name -> what of the reference decodes from its results.json (every string: each test's output, the
    Gradescope HTML output, extra_data) and its feedback.html: solution lines, and reference functions' bytecode."""
    lines = solution_lines() if lines is None else lines
    code = ReferenceCode.load() if code is None else code
    wanted = _wanted(lines)
    # what each text holds, by its text: most strings recur (a count's output in results.json, its Gradescope HTML
    # and the page; the same message in many submissions), and a text's answer does not depend on where it is
    said: dict[str, list[str]] = {}
    leaks = {}
    folders = sorted({p.parent for p in [*Path(results_dir).glob("*/results.json"),
                                         *Path(results_dir).glob("*/feedback.html")]})
    for folder in folders:
        texts = []
        if (folder / "results.json").is_file():
            texts += list(_strings(json.loads((folder / "results.json").read_text())))
        if (folder / "feedback.html").is_file():
            texts.append((folder / "feedback.html").read_text(encoding="utf-8", errors="replace"))
        found = []
        for text in texts:
            if text not in said:
                said[text] = decodable_reference_code(text or "", code, wanted=wanted)
            found += [item for item in said[text] if item not in found]
        if found:
            leaks[folder.name] = found
    return leaks


_NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d+(?:e[-+]?\d+)?")
_PAIR = re.compile(r"(?=(?<![\w.])(-?\d+\.\d{4}), (-?\d+\.\d{4})(?![\d]))")


def _tensors(answer: dict, limit: int = 100_000):
    """The float tensors of a reference answer (outputs, gradients), skipping the millions of GPT-2's parameters."""
    import torch  # noqa: PLC0415 - imported on first use: torch is slow to load

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
    return {f"{v:.6g}" for v in t.flatten().tolist()
            if math.isfinite(v) and len(f"{v:.6g}".strip("-0.").replace(".", "")) >= 5}


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
    from autograder.grading.suites.session import Grader  # noqa: PLC0415 - imported on first use: torch is slow to load

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
            text = "\n".join([str(data.get("output", ""))]
                             + [str(t.get("output", "")) for t in data.get("tests", [])]) \
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
        print(f"{name}: {len(found)} piece(s) of the reference decodable from the feedback")
        for line in found:
            print(f"    {line}")
    return 1 if leaks else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

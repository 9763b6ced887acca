"""Load course.yml and say, on error, which key on which line is wrong."""
from __future__ import annotations

import difflib
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError

from autograder.text_files import read_user_text

from .schema import Course


class CourseError(Exception):
    """course.yml is unreadable or invalid; the message names the file, the line and the key."""


def _key_lines(node, path=()) -> dict[tuple, int]:
    """Map each key path in the YAML document to its 1-based line."""
    lines: dict[tuple, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            lines[path + (key,)] = key_node.start_mark.line + 1
            lines.update(_key_lines(value_node, path + (key,)))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[path + (i,)] = item.start_mark.line + 1
            lines.update(_key_lines(item, path + (i,)))
    return lines


def _line_for(loc: tuple, lines: dict[tuple, int]) -> int | None:
    loc = tuple(str(p) if not isinstance(p, int) else p for p in loc)
    while loc:
        if loc in lines:
            return lines[loc]
        loc = loc[:-1]
    return None


def _allowed_keys(loc: tuple) -> list[str]:
    """The keys the schema allows at the mapping that holds ``loc``'s last key (for 'did you mean')."""
    model: type[BaseModel] | None = Course
    for part in loc[:-1]:
        if model is None:
            return []
        field = model.model_fields.get(str(part))
        if field is None:
            continue  # a dict key such as a step id
        annotation = field.annotation
        args = getattr(annotation, "__args__", ())
        candidates = [annotation, *args]
        model = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if model is None and args:
            model = next((a for a in getattr(args[-1], "__args__", (args[-1],))
                          if isinstance(a, type) and issubclass(a, BaseModel)), None)
    return list(model.model_fields) if model else []


#: libyaml's parser where PyYAML has it (a tenth of the pure-Python parser's time), with PyYAML's own safe types
_FAST = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parse(text: str):
    """The YAML document's data; a broken document is said in the words of PyYAML's own parser, as it always was."""
    try:
        return yaml.load(text, Loader=_FAST)
    except yaml.YAMLError:
        pass
    return yaml.safe_load(text)


def load_course(path: Path | str) -> Course:
    path = Path(path)
    text = read_user_text(path, CourseError, missing=" (the course definition is needed to grade)")
    try:
        data = _parse(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise CourseError(f"{path}{where}: not valid YAML: {problem}") from None
    if not isinstance(data, dict):
        raise CourseError(f"{path}: expected a mapping of keys (unit, title, steps, ...) at the top level")
    try:
        return Course.model_validate(data)
    except ValidationError as exc:
        lines = _key_lines(yaml.compose(text))
        messages = []
        for err in exc.errors():
            loc = err["loc"]
            # pydantic appends a type tag to union locations (e.g. 'Count'); drop such parts
            loc = tuple(p for p in loc if isinstance(p, int) or not str(p)[:1].isupper() or "." in str(p))
            line = _line_for(loc, lines)
            key = ".".join(str(p) for p in loc) or "(top level)"
            msg = err["msg"]
            if err["type"] == "extra_forbidden":
                msg = f"unknown key {loc[-1]!r}"
                close = difflib.get_close_matches(str(loc[-1]), _allowed_keys(loc), n=1)
                if close:
                    msg += f" (did you mean {close[0]!r}?)"
            elif err["type"] == "missing":
                msg = "required key is missing"
            elif err["type"] == "timezone_aware":
                got = err.get("input")
                got = got.isoformat() if hasattr(got, "isoformat") else got
                msg = f"needs a UTC offset, as in 2025-03-14T23:59:00+01:00 (got {got})"
            else:
                msg += f" (got {err.get('input')!r})"
            messages.append(f"{path}, line {line}: {key}: {msg}" if line else f"{path}: {key}: {msg}")
        raise CourseError("\n".join(messages)) from None

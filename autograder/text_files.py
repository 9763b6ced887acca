"""Reading a text file a user gave (course.yml, a roster, a times CSV), with an error that says what is wrong."""
from __future__ import annotations

from pathlib import Path


def read_user_text(path: Path, error: type[Exception], *, encoding: str = "utf-8", missing: str = "",
                   not_utf8: str = "") -> str:
    """The text of ``path``; else ``error("<path>: file not found<missing>")`` or ``"...: not UTF-8 text ..."``."""
    try:
        return Path(path).read_text(encoding=encoding)
    except FileNotFoundError:
        raise error(f"{path}: file not found{missing}") from None
    except IsADirectoryError:
        raise error(f"{path}: a folder, not a file") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}){not_utf8}") from None
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror})") from None

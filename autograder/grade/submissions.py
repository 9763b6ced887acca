"""Find the submissions named on the command line: submission folders, or folders of them."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Submission:
    name: str
    folder: Path


def looks_like_submission(folder: Path, modules: list[str]) -> bool:
    return any((folder / f"{m}.py").exists() for m in modules) or (folder / "__init__.py").exists()


def discover(paths: list[Path], modules: list[str]) -> tuple[list[Submission], list[str]]:
    """Expand ``paths`` into submissions; return them and a problem per path that is none."""
    found: list[Submission] = []
    problems: list[str] = []
    for path in paths:
        path = Path(path)
        if not path.exists():
            problems.append(f"{path}: no such file or folder")
        elif path.is_dir() and looks_like_submission(path, modules):
            found.append(Submission(path.resolve().name, path.resolve()))
        elif path.is_dir():
            inner = [p for p in sorted(path.iterdir()) if p.is_dir() and not p.name.startswith(".")]
            subs = [p for p in inner if looks_like_submission(p, modules)]
            if not subs:
                problems.append(f"{path}: neither a submission (no {modules[0]}.py ...) nor a folder of submissions")
            for p in inner:
                if p in subs:
                    found.append(Submission(p.name, p.resolve()))
                else:
                    problems.append(f"{p}: not a submission (none of {', '.join(m + '.py' for m in modules)})")
        else:
            problems.append(f"{path}: expected a submission folder")
    names = [s.name for s in found]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        problems.append(f"several submissions share a name, so their results would overwrite each other: {', '.join(sorted(dupes))}")
        found = [s for s in found if s.name not in dupes]
    return found, problems

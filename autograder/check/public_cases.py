"""The public cases: the documents' inputs with their expected answers, recorded from the reference.

Stored as ``public_cases.json`` (cases, steps, points, tolerances; tensors as references) and
``public_cases.safetensors`` (the tensors). No hidden case and no solution code is in either.

Torch (safetensors, the wire) is imported where the cases are read or written: what they were recorded from is read
without it (assign/recorded_from.py), so a verb refuses stale cases before it loads torch.
"""
from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
JSON_FILE = "public_cases.json"
TENSOR_FILE = "public_cases.safetensors"


#: how far two recordings of the same cases may differ and still be the same cases: another CPU's rounding of the
#: float32 arithmetic they pass through (an AMD EPYC moves 465 of 888 tensors by up to 9.5e-7, an AVX-512 Xeon the
#: book's float64 cases, which are its float32 scores cast, by up to 2.4e-7); a changed solution moves them further
ROUNDING = {"rtol": 1e-5, "atol": 2e-6}


def save(data: dict, folder: Path = HERE) -> None:
    """Write ``data`` as the public cases of ``folder``, unless the cases there are the same but for another CPU's
    rounding (``same``): those are kept, byte for byte, so that `grade assign` on another machine changes no file."""
    try:
        kept = load(folder)
        # what they were recorded from: grade assign stamps it apart (assign/recorded_from.py)
        kept.pop("recorded_from", None)
        if same(kept, data):
            return
    except (OSError, ValueError, KeyError):  # none there yet, or unreadable: written afresh
        pass
    from safetensors.torch import save_file

    from autograder.worker import wire

    tensors: dict = {}
    encoded = wire.encode(data, tensors)
    (folder / JSON_FILE).write_text(json.dumps(encoded, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    save_file(tensors, str(folder / TENSOR_FILE), metadata={"format": "pt"})
    (folder / TENSOR_FILE).chmod(0o644)


def load(folder: Path = HERE) -> dict:
    json_path, tensor_path = folder / JSON_FILE, folder / TENSOR_FILE
    if not json_path.is_file() or not tensor_path.is_file():
        raise FileNotFoundError(f"the public checks are missing ({json_path.name}, {tensor_path.name} in {folder}); "
                                "reinstall the exercise kit, or ask your instructor")
    from safetensors.torch import load_file

    from autograder.worker import wire

    return wire.decode(json.loads(json_path.read_text(encoding="utf-8")), load_file(str(tensor_path)))


def same(kept, recorded) -> bool:
    """Whether two recordings of the public cases are the same cases: the same structure, names and exact values
    everywhere but in floating-point tensors and numbers, which may differ by ``ROUNDING``."""
    return not differences(kept, recorded, lambda dtype: ROUNDING)


def differences(kept, recorded, tolerance, where: str = "cases") -> list[str]:
    """Where two recordings of the public cases differ: in structure, names, or values, floating-point ones beyond
    ``tolerance(dtype)`` (``{"rtol": ..., "atol": ...}``; dtype ``None`` for a Python float)."""
    import math

    import torch

    if isinstance(kept, torch.Tensor) or isinstance(recorded, torch.Tensor):
        if not (isinstance(kept, torch.Tensor) and isinstance(recorded, torch.Tensor)):
            return [f"{where}: a tensor on one side only"]
        if kept.shape != recorded.shape or kept.dtype != recorded.dtype:
            return [f"{where}: {tuple(kept.shape)} {kept.dtype} vs {tuple(recorded.shape)} {recorded.dtype}"]
        if kept.is_floating_point():
            alike = torch.allclose(kept, recorded, equal_nan=True, **tolerance(kept.dtype))
        else:
            alike = torch.equal(kept, recorded)
        return [] if alike else [f"{where}: values differ beyond the tolerance"]
    if isinstance(kept, dict) and isinstance(recorded, dict):
        if kept.keys() != recorded.keys():
            return [f"{where}: keys {sorted(kept.keys() ^ recorded.keys())} on one side only"]
        return [d for k in kept for d in differences(kept[k], recorded[k], tolerance, f"{where}.{k}")]
    if isinstance(kept, (list, tuple)) and isinstance(recorded, (list, tuple)):
        if type(kept) is not type(recorded) or len(kept) != len(recorded):
            return [f"{where}: {type(kept).__name__} of {len(kept)} vs {type(recorded).__name__} of {len(recorded)}"]
        return [d for i, (a, b) in enumerate(zip(kept, recorded))
                for d in differences(a, b, tolerance, f"{where}[{i}]")]
    if type(kept) is float and type(recorded) is float:
        close = math.isclose(kept, recorded, rel_tol=tolerance(None)["rtol"], abs_tol=tolerance(None)["atol"])
        return [] if close or (math.isnan(kept) and math.isnan(recorded)) else [f"{where}: {kept} vs {recorded}"]
    return [] if type(kept) is type(recorded) and kept == recorded else [f"{where}: {kept!r} vs {recorded!r}"]

"""The public cases: the documents' inputs with their expected answers, recorded from the reference.

Stored as ``public_cases.json`` (cases, steps, points, tolerances; tensors as references) and
``public_cases.safetensors`` (the tensors). No hidden case and no solution code is in either.
"""
from __future__ import annotations

import json
from pathlib import Path

from safetensors.torch import load_file, save_file

from autograder.worker import wire

HERE = Path(__file__).resolve().parent
JSON_FILE = "public_cases.json"
TENSOR_FILE = "public_cases.safetensors"


def save(data: dict, folder: Path = HERE) -> None:
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
    return wire.decode(json.loads(json_path.read_text(encoding="utf-8")), load_file(str(tensor_path)))

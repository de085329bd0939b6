"""Finished steps of a probe kept in a folder, so that a run stopped part-way resumes where it stopped
(theory: docs/theory/probes.md §6).

Each step's result (nested dicts, lists and tuples of arrays, numbers and text) is written, once finished,
as one ``.npz`` file (its arrays) holding a JSON description of its structure, under a temporary name
renamed into place: a file is there whole or not at all. The folder is keyed by a digest of everything
the results depend on — the model's weights, the sentences, the settings, the library's version: a
folder made for other inputs is emptied of its steps before any is used, so a resumed probe never mixes
steps of two inputs. Nothing is pickled: loading a step runs no code.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from attnphys._paths import write_bytes_atomic
from attnphys.errors import OutputError

KEY_FILE = "probe-steps.json"
"""The file naming what a steps folder was made for (its digest and a readable copy of the inputs)."""


def model_digest(model) -> str:
    """SHA-256 over the names, shapes, dtypes and bytes of every parameter and buffer of a torch module
    (its state dict): two models with the same digest compute the same probe."""
    import torch

    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        a = t.detach().cpu().contiguous()
        h.update(f"{name} {tuple(a.shape)} {a.dtype}\0".encode())
        h.update(a.view(-1).view(dtype=torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _encode(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(value, dict):
        return {"dict": [[str(k), _encode(v, arrays)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return {"tuple" if isinstance(value, tuple) else "list": [_encode(v, arrays) for v in value]}
    if isinstance(value, np.ndarray) and value.dtype != object:
        key = f"a{len(arrays)}"
        arrays[key] = value
        return {"array": key}
    if isinstance(value, np.ndarray):  # of objects: text, numbers or None, kept as JSON
        return {"objects": _encode(value.tolist(), arrays), "shape": list(value.shape)}
    if isinstance(value, np.generic):
        return {"scalar": value.item(), "dtype": value.dtype.str}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    raise TypeError(f"a probe step's result holds a {type(value).__name__}, which cannot be kept")


def _decode(node: Any, arrays) -> Any:
    if "dict" in node:
        return {k: _decode(v, arrays) for k, v in node["dict"]}
    if "tuple" in node:
        return tuple(_decode(v, arrays) for v in node["tuple"])
    if "list" in node:
        return [_decode(v, arrays) for v in node["list"]]
    if "array" in node:
        return arrays[node["array"]]
    if "objects" in node:
        out = np.empty(len(_flat := _flatten(_decode(node["objects"], arrays))), dtype=object)
        out[:] = _flat
        return out.reshape(node["shape"])
    if "scalar" in node:
        return np.dtype(node["dtype"]).type(node["scalar"])
    return node["value"]


def _flatten(x: Any) -> list:
    return [y for v in x for y in _flatten(v)] if isinstance(x, list) else [x]


class StepStore:
    """The finished steps of one probe run in ``folder``, for the inputs described by ``inputs`` (a
    JSON-able mapping: it is digested, and a folder made for other inputs has its steps removed).

    Raises:
        OutputError: ``folder`` exists and holds files that are not a probe's steps (they are never
            removed).
    """

    def __init__(self, folder: str | os.PathLike, inputs: dict[str, Any]):
        self.folder = Path(folder)
        text = json.dumps(inputs, sort_keys=True, default=str)
        self.key = hashlib.sha256(text.encode()).hexdigest()
        if self.folder.exists():
            if not self.folder.is_dir():
                raise OutputError(f"{self.folder} exists and is not a folder of probe steps; choose another path")
            foreign = [p.name for p in self.folder.iterdir() if p.name != KEY_FILE and p.suffix != ".npz"]
            if foreign:
                raise OutputError(
                    f"{self.folder} holds files that are not a probe's steps ({', '.join(sorted(foreign)[:3])}); "
                    "choose another path"
                )
            try:
                made_for = json.loads((self.folder / KEY_FILE).read_text()).get("key")
            except (OSError, ValueError, AttributeError):
                made_for = None
            if made_for != self.key:  # other inputs (or unreadable): their steps must not be used
                for p in self.folder.glob("*.npz"):
                    p.unlink()
        self.folder.mkdir(parents=True, exist_ok=True)
        self._write(KEY_FILE, json.dumps({"key": self.key, "inputs": json.loads(text)}, indent=1).encode())

    def _write(self, name: str, data: bytes) -> None:
        write_bytes_atomic(self.folder / name, data)

    def _path(self, name: str) -> Path:
        return self.folder / (hashlib.sha256(name.encode()).hexdigest()[:16] + ".npz")

    def get(self, name: str) -> Any | None:
        """The kept result of step ``name``, or None when it is not kept (or not readable whole)."""
        path = self._path(name)
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
            meta = json.loads(bytes(arrays.pop("__meta__")).decode())
            if meta.get("key") != self.key or meta.get("step") != name:
                return None
            return _decode(meta["tree"], arrays)
        except Exception:  # noqa: BLE001 - a step that cannot be read is computed again
            return None

    def put(self, name: str, value: Any) -> Any:
        """Keep ``value`` as the result of step ``name``; returns it."""
        import io

        arrays: dict[str, np.ndarray] = {}
        tree = _encode(value, arrays)
        meta = json.dumps({"key": self.key, "step": name, "tree": tree}).encode()
        buf = io.BytesIO()
        np.savez(buf, **{"__meta__": np.frombuffer(meta, np.uint8), **arrays})
        self._write(self._path(name).name, buf.getvalue())
        return value

    def step(self, name: str, compute) -> Any:
        """The kept result of step ``name``, else ``compute()`` kept."""
        kept = self.get(name)
        return kept if kept is not None else self.put(name, compute())

    def remove(self) -> None:
        """Remove the steps and the folder (after the probe's outputs are written)."""
        for p in self.folder.glob("*.npz"):
            p.unlink()
        (self.folder / KEY_FILE).unlink(missing_ok=True)
        try:
            self.folder.rmdir()
        except OSError:
            pass


class NoSteps:
    """Nothing kept: every step is computed."""

    def step(self, name: str, compute) -> Any:
        return compute()

    def remove(self) -> None:
        pass


__all__ = ["KEY_FILE", "NoSteps", "StepStore", "model_digest"]

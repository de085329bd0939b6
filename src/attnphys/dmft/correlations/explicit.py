"""Explicit ±1 weights from a file (theory: docs/theory/dmft.md §4.4)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from attnphys.dmft.correlations._base import AbstractCorrelations
from attnphys.dmft.correlations._moments import FAMILIES, Correlations

MAX_WEIGHTS_BYTES = 256 << 20
"""Largest weights file read, and most bytes an ``.npz`` of weights may unpack to (256 MiB: four ±1
matrices of 2,000 × 4,000 in float64)."""


def read_weights(path: str | Path) -> np.ndarray:
    """(4, M, N) ±1 weights from ``.npz`` or ``.json`` with keys ``Wo``, ``Wv``, ``Wq``, ``Wk`` (each
    (M, N): semantic columns first, then the P positional columns), or one key ``W`` of shape (4, M, N).

    Read by the one reader of input files (:mod:`attnphys._files`): a regular file of at most
    :data:`MAX_WEIGHTS_BYTES`, an archive unpacking to no more, a key given twice refused.

    Raises:
        InputError: (a ValueError) naming the file and what is wrong with it.
    """
    from attnphys._files import parse_mapping, read_input, read_npz
    from attnphys.errors import InputError

    try:
        path, raw = read_input(path, "weights", "a weights file", MAX_WEIGHTS_BYTES)
        if path.suffix == ".npz":
            data = read_npz(raw, path, "weights", MAX_WEIGHTS_BYTES)
        else:
            data = parse_mapping(raw, path, "weights", "a weights file")
    except InputError as e:  # without a field: the configuration's field (or the option) names it
        raise InputError(f"weights file {e.detail}") from None
    if not isinstance(data, dict):
        raise ValueError(f"weights file {path} must hold a mapping with Wo, Wv, Wq, Wk (or W)")

    def numbers(key: str) -> np.ndarray:
        a = np.asarray(data[key]) if not isinstance(data[key], np.ndarray) else data[key]
        if a.dtype.kind not in "iuf":
            raise ValueError(
                f"weights file {path}: {key} must be a rectangular array of ±1 numbers (got {a.dtype.kind!r} data)"
            )
        return a.astype(np.float64)

    if "W" in data:
        W = _rectangular(data, "W", path, numbers)
    else:
        missing = [f"W{x}" for x in FAMILIES if f"W{x}" not in data]
        if missing:
            raise ValueError(f"weights file {path} lacks {missing}")
        parts = [_rectangular(data, f"W{x}", path, numbers) for x in FAMILIES]
        shapes = {f"W{x}": a.shape for x, a in zip(FAMILIES, parts)}
        if len(set(shapes.values())) > 1:
            raise ValueError(f"weights file {path}: Wo, Wv, Wq, Wk must have one shape (M, N), got {shapes}")
        W = np.stack(parts)
    if W.ndim != 3 or W.shape[0] != 4:
        raise ValueError(f"weights in {path} must have shape (4, M, N), got {W.shape}")
    if not np.all(np.abs(W) == 1):
        raise ValueError(f"weights in {path} must all be +1 or -1")
    return W


def _rectangular(data: dict, key: str, path: Path, numbers) -> np.ndarray:
    """``data[key]`` as floats, with a message naming the file and key for ragged rows or non-numbers."""
    try:
        return numbers(key)
    except (TypeError, ValueError) as e:
        if str(e).startswith("weights file"):
            raise
        raise ValueError(f"weights file {path}: {key} must be a rectangular array of ±1 numbers") from None


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes (recorded so that a changed file is noticed)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class ExplicitWeights(AbstractCorrelations):
    """Hand-set ±1 weight matrices read from a file (the reference's hand-set-weights mode)
    (theory: docs/theory/dmft.md §4.4). The file's SHA-256 is recorded; a changed file is refused."""

    kind: Literal["weights"] = "weights"
    path: str = Field(description="file with Wo, Wv, Wq, Wk (each M × (N_se + P)), .npz or .json")
    sha256: str = Field(default="", description="SHA-256 of the file (filled in when the file is read)")

    @model_validator(mode="after")
    def _hash(self):
        from attnphys._files import check_input_file
        from attnphys.errors import InputError

        try:  # a regular file (a folder, a pipe, a device named as such) of at most MAX_WEIGHTS_BYTES
            p = check_input_file(self.path, "weights", "a weights file")
        except InputError as e:
            raise InputError(f"weights file {e.detail}") from None
        if p.stat().st_size > MAX_WEIGHTS_BYTES:
            raise InputError(
                f"weights file {p} is larger than {MAX_WEIGHTS_BYTES >> 20} MiB; that is not a weights file"
            )
        digest = file_sha256(p)
        if self.sha256 and self.sha256 != digest:
            raise ValueError(
                f"weights file {self.path} changed since it was recorded (sha256 {self.sha256[:12]}… "
                f"now {digest[:12]}…)"
            )
        object.__setattr__(self, "sha256", digest)
        return self

    def check(self, M: int, n_se: int, P: int) -> None:
        W = read_weights(self.path)
        if W.shape[1:] != (M, n_se + P):
            raise ValueError(
                f"weights in {self.path} have shape {W.shape[1:]}, the configuration needs "
                f"(M, n_se + P) = ({M}, {n_se + P})"
            )

    def build(self, M: int, n_se: int, P: int) -> Correlations:
        self.check(M, n_se, P)
        return Correlations.from_weights(read_weights(self.path), n_se, source=f"weights({Path(self.path).name})")

    @classmethod
    def example(cls, M: int = 3, n_se: int = 40, P: int = 2) -> ExplicitWeights:
        """Random ±1 weights written to a temporary file."""
        import tempfile

        from attnphys.dmft.correlations.random import random_weights

        W = random_weights(7, M, n_se, P)
        path = Path(tempfile.mkdtemp(prefix="attnphys-weights-")) / "weights.npz"
        np.savez(path, **{f"W{x}": W[i] for i, x in enumerate(FAMILIES)})
        return cls(path=str(path))

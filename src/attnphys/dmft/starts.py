"""Initial conditions as data: the typed starts of the DMFT map, read from the command line, options files
and stored sweep definitions (theory: docs/theory/dmft.md §3.5, §5.2).

A start is a small frozen pydantic model (``token``, ``checkpoint``, a window ``file``, an explicit
``window``, a ``prerun``); :mod:`attnphys.dmft.initial` turns one into a context window. This module is
light (no JAX): the command line reads starts without loading the numerical engine.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from attnphys.dmft._window_files import read_start_bytes, read_window_file


class _Start(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TokenStart(_Start):
    """From the first token x₀ = row ``row`` of W^o, positional bits −1 (theory: docs/theory/dmft.md §3.5)."""

    kind: Literal["token"] = "token"
    row: int = Field(default=0, ge=0, description="row of W^o used as the first token")

    def describe(self) -> str:
        return "token" if self.row == 0 else f"token(row={self.row})"


class CheckpointStart(_Start):
    """From the published β_o = 3 context window (theory: docs/theory/dmft.md §3.5, §8)."""

    kind: Literal["checkpoint"] = "checkpoint"

    def describe(self) -> str:
        return "checkpoint"


NAMED_STARTS = ("token", "pattern:<index>", "checkpoint")
"""The starts named by a word (every other text is the path of a window file)."""


def _did_you_mean(text: str) -> str:
    import difflib

    words = [w.partition(":")[0] for w in NAMED_STARTS]
    close = difflib.get_close_matches(str(text).strip(), words, n=1, cutoff=0.7)
    return f" (did you mean {close[0]}?)" if close else ""


class FileStart(_Start):
    """From a window file, JSON or the reference's ``.npz`` (theory: docs/theory/dmft.md §3.5)."""

    kind: Literal["file"] = "file"
    path: str = Field(description="absolute path of the window file")
    sha256: str = Field(default="", description="SHA-256 of the file's bytes when it was first read")

    @model_validator(mode="after")
    def _read(self):
        from attnphys.io import local_path

        p = local_path(self.path, "--start")
        if not p.exists():
            raise ValueError(
                f"initial-condition file {self.path} does not exist; a start is one of {', '.join(NAMED_STARTS)} "
                f"or the path of a window file{_did_you_mean(self.path)}"
            )
        if not p.is_file():
            raise ValueError(f"initial-condition file {self.path} is not a file")
        digest = hashlib.sha256(read_start_bytes(p)).hexdigest()
        if self.sha256 and self.sha256 != digest:
            raise ValueError(
                f"initial-condition file {self.path} changed since this run was defined (sha256 "
                f"{self.sha256[:12]}… now {digest[:12]}…); restore it or start a new run"
            )
        object.__setattr__(self, "path", str(p.resolve()))
        object.__setattr__(self, "sha256", digest)
        read_window_file(p)  # refuse unreadable content now, before anything runs
        return self

    def describe(self) -> str:
        return f"file {self.path} (sha256 {self.sha256[:12]}…)"


class WindowStart(_Start):
    """From an explicit window (theory: docs/theory/dmft.md §3.3)."""

    kind: Literal["window"] = "window"
    att_window: tuple[tuple[float, ...], ...] = Field(description="(L, M) attention outputs, newest first")
    pe_window: tuple[tuple[float, ...], ...] = Field(description="(L, P) positional codes")
    n: int | None = Field(default=None, ge=1, description="filled rows (default: all)")
    cache: dict[str, tuple[tuple[float, ...], ...]] | None = Field(
        default=None,
        description="the engine's cached overlaps (mv, mk, m0, se0) of the state the window was saved from",
    )

    def describe(self) -> str:
        return "window"


class PatternStart(_Start):
    """From pattern ``index`` of W^o itself: a window of one entry A₀ = C^v_{{index},·}, at full weight and
    without positional share (the reference's start under hand-set correlations; theory:
    docs/theory/dmft.md §3.5)."""

    kind: Literal["pattern"] = "pattern"
    index: int = Field(default=0, ge=0, description="the pattern (row of W^o) the window starts from")

    def describe(self) -> str:
        return f"pattern({self.index})"


BaseStart = Annotated[
    TokenStart | PatternStart | CheckpointStart | FileStart | WindowStart, Field(discriminator="kind")
]


class PrerunStart(_Start):
    """From the final state of a pre-run: ``steps`` steps at ``beta_o`` (the configuration's other
    parameters) from ``start``. The 2024 recipe for diagrams: every β started from the final context of a
    token run at the highest β (theory: docs/theory/dmft.md §5.2)."""

    kind: Literal["prerun"] = "prerun"
    start: BaseStart = Field(default_factory=TokenStart, description="initial condition of the pre-run")
    beta_o: float = Field(ge=0, allow_inf_nan=False, description="β_o of the pre-run")
    steps: int = Field(ge=1, description="steps of the pre-run")

    def describe(self) -> str:
        return f"prerun(beta_o={self.beta_o:g}, steps={self.steps}, from {self.start.describe()})"


Start = Annotated[
    TokenStart | PatternStart | CheckpointStart | FileStart | WindowStart | PrerunStart, Field(discriminator="kind")
]


def parse_start(v: Any) -> Any:
    """A start from the command line or a definition: ``token``, ``pattern:<index>``, ``checkpoint``, a file
    path, a window (or an engine state), or a mapping with a ``kind``."""
    if isinstance(v, (TokenStart, PatternStart, CheckpointStart, FileStart, WindowStart, PrerunStart)):
        return v
    if hasattr(v, "A") and hasattr(v, "pe") and hasattr(v, "n"):  # a Window or an engine State
        return window_start(v)
    if isinstance(v, Path):
        v = str(v)
    if isinstance(v, str):
        text = v.strip()
        if text == "token":
            return {"kind": "token"}
        if text == "checkpoint":
            return {"kind": "checkpoint"}
        if text == "pattern" or text.startswith("pattern:"):
            index = text.partition(":")[2].strip() or "0"
            if not index.isdigit():
                raise ValueError(f"give pattern:<index> with an integer index >= 0, got {text!r}")
            return {"kind": "pattern", "index": int(index)}
        if not text:
            raise ValueError("give token, pattern:<index>, checkpoint or a window file")
        return {"kind": "file", "path": text}
    return v


StartSpec = Annotated[Start, BeforeValidator(parse_start)]
"""Field type of a start: accepts ``"token"``, ``"checkpoint"``, a path, a Window or a mapping."""


def as_start(v: Any) -> Start:
    """A typed start (:data:`Start`) from anything :func:`parse_start` reads.

    Raises:
        pydantic.ValidationError: a mapping that is not a start.
    """
    from pydantic import TypeAdapter

    v = parse_start(v)
    return TypeAdapter(Start).validate_python(v) if isinstance(v, dict) else v


CACHE_KEYS: tuple[str, ...] = ("mv", "mk", "m0", "se0")
"""The cached overlaps of an engine :class:`State` (theory: docs/theory/dmft.md §3.7)."""


def _nested(a) -> tuple:
    return tuple(map(tuple, np.asarray(a, dtype=np.float64).tolist()))


def window_start(win) -> WindowStart:
    """An explicit start from a window, or from an engine state (then with its cached overlaps, so that a
    run continued from it at the same parameters is bitwise the uninterrupted one)."""
    cache = {k: _nested(getattr(win, k)) for k in CACHE_KEYS} if all(hasattr(win, k) for k in CACHE_KEYS) else None
    return WindowStart(att_window=_nested(win.A), pe_window=_nested(win.pe), n=int(np.asarray(win.n)), cache=cache)


def start_cache(start) -> dict[str, np.ndarray] | None:
    """The cached overlaps a start carries (explicit windows and files written from a state), or None."""
    start = parse_start(start)
    if isinstance(start, WindowStart) and start.cache:
        return {k: np.asarray(start.cache[k]) for k in CACHE_KEYS}
    if isinstance(start, FileStart):
        data = read_window_file(start.path)
        if all(f"cache_{k}" in data for k in CACHE_KEYS):
            return {k: np.asarray(data[f"cache_{k}"], dtype=np.float64) for k in CACHE_KEYS}
    return None


def keep_start_cache(st, start):
    """The batched engine state ``st`` (B, …) with the cached overlaps the start carries kept where they are
    this point's (every cached overlap within 1e-12 of the freshly filled one: same β_o, ε), so that a
    continuation is bitwise the uninterrupted run; elsewhere, and for a start without a cache, the freshly
    filled ones (theory: docs/theory/dmft.md §3.7)."""
    import jax.numpy as jnp

    cache = start_cache(start)
    if cache is None:
        return st
    same = np.ones(int(np.shape(st.A)[0]), bool)
    for k in CACHE_KEYS:
        same &= np.all(np.abs(np.asarray(getattr(st, k)) - cache[k][None]) <= 1e-12, axis=(-2, -1))
    keep = jnp.asarray(same)
    return st._replace(
        **{
            k: jnp.where(keep.reshape((-1,) + (1,) * cache[k].ndim), jnp.asarray(cache[k])[None], getattr(st, k))
            for k in CACHE_KEYS
        }
    )


def split_starts(start: Any) -> tuple[Any, tuple[Any, ...]]:
    """(the start of a run, its per-point starts) from a ``start`` argument: one start (``"token"``, a path,
    a :class:`Window`, …; no per-point starts), or a list of one start per point (the first, and all).

    Raises:
        InputError: an empty list, naming ``start``.
    """
    if isinstance(start, (list, tuple)) and not hasattr(start, "pe"):  # not a Window or an engine State
        if not start:
            from attnphys.errors import InputError

            raise InputError("an empty list; give one start, or a list of one start per point", "start")
        return start[0], tuple(start)
    return start, ()

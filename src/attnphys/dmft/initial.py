"""Initial conditions of the mean-field map (theory: docs/theory/dmft.md §3.5, §5.2).

A start is one typed value, parsed once (at the command line, or from a stored definition) and never
re-interpreted from a string deeper down:

* :class:`TokenStart` — the first token x₀ = row ``row`` of W^o with its positional bits set to −1;
* :class:`CheckpointStart` — the published β_o = 3 context window (shipped with the package);
* :class:`FileStart` — a window file: JSON (``att_window``, ``pe_window``, optional ``n``) or the
  reference's ``.npz`` checkpoints; its SHA-256 is recorded, so a file changed between an interrupted
  run and its resumption is refused;
* :class:`WindowStart` — an explicit window.

Windows are validated against the configuration: shapes, attention entries in [−1, 1] (overlaps cannot
leave it), positional rows ±1 and consecutive positions (row d one position before row d − 1).
"""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax.numpy as jnp
import numpy as np

from attnphys import _deprecated
from attnphys.dmft._window_files import read_window_file
from attnphys.dmft.config import DMFTConfig
from attnphys.dmft.correlations import Correlations
from attnphys.dmft.meanfield import State, Window
from attnphys.dmft.starts import (
    CACHE_KEYS,
    CheckpointStart,
    FileStart,
    PatternStart,
    PrerunStart,
    Start,
    TokenStart,
    parse_start,
)
from attnphys.errors import InputError, short_repr
from attnphys.io import local_path, staged

# -- positions and tokens ------------------------------------------------------------------------------


def position_code(p: int, P: int) -> np.ndarray:
    """π(p): the P-bit binary expansion of p, most significant bit first, 0 ↦ −1, 1 ↦ +1
    (theory: docs/theory/dmft.md §1.1)."""
    return np.array([1.0 if (p >> (P - 1 - j)) & 1 else -1.0 for j in range(P)], dtype=np.float64)


def position_of(code: np.ndarray) -> int:
    """The position p with π(p) = code (inverse of :func:`position_code`)."""
    bits = (np.asarray(code) > 0).astype(int)
    return int(sum(b << (len(bits) - 1 - j) for j, b in enumerate(bits)))


def token_positions(L: int, P: int) -> np.ndarray:
    """Positional window after a token start: row d = π((−d) mod L), shape (L, P) (theory:
    docs/theory/dmft.md §3.5)."""
    return np.stack([position_code((-d) % L, P) for d in range(L)]) if P else np.zeros((L, 0))


def token_overlap(corr: Correlations, epsilon: float, row: int = 0) -> np.ndarray:
    """m^α(x₀) for x₀ = row ``row`` of W^o with positional bits −1, shape (4, M) (theory:
    docs/theory/dmft.md §3.5). The semantic part is (1-ε) C^α_{{row},·}: the overlap of a W^o row with W^α
    is a pair moment."""
    return token_semantic(corr, epsilon, row) + token_positional(corr, epsilon)


def token_semantic(corr: Correlations, epsilon: float, row: int = 0) -> np.ndarray:
    """(1-ε) C^α_{{row},·}: the semantic part of m^α(x₀), shape (4, M) (the token's own overlaps
    ``corr.token_pair`` where the correlations carry them)."""
    if not 0 <= row < corr.M:
        raise ValueError(f"token row must be in [0, {corr.M - 1}], got {row}")
    pair = corr.pair if corr.token_pair is None else corr.token_pair
    return (1.0 - epsilon) * pair[:, row, :]


def token_positional(corr: Correlations, epsilon: float) -> np.ndarray:
    """(ε'/P) W^{α,pe}·(−1, …, −1): the positional part of m^α(x₀) at position 0, shape (4, M)."""
    P = corr.P
    return (1.0 - (1.0 - epsilon)) / P * corr.W_pe.sum(axis=2) * -1.0 if P else np.zeros((4, corr.M))


def from_token(
    cfg: DMFTConfig, corr: Correlations | None = None, *, row: int = 0, epsilon: float | None = None
) -> Window:
    """Window after the token start (the head era): A_0 = [m^v(x_0)], n_0 = 1, pe rows π((−d) mod L)
    (theory: docs/theory/dmft.md §3.5)."""
    corr = corr if corr is not None else cfg.build_correlations()
    eps = cfg.epsilon if epsilon is None else epsilon
    A = np.zeros((cfg.L, cfg.M))
    A[0] = token_overlap(corr, eps, row)[1]
    return Window(A=jnp.asarray(A), pe=jnp.asarray(token_positions(cfg.L, cfg.P)), n=jnp.asarray(1, jnp.int32))


def from_pattern(cfg: DMFTConfig, corr: Correlations | None = None, *, index: int = 0) -> Window:
    """Window of the pattern start: A_0 = [C^v_{{index},·}], n_0 = 1, pe rows π((−d) mod L) (theory:
    docs/theory/dmft.md §3.5). The overlaps of W^v with pattern ``index`` of W^o at full weight, with no ε
    share and no positional part: the reference's start from a pattern index under hand-set correlations."""
    corr = corr if corr is not None else cfg.build_correlations()
    if not 0 <= index < corr.M:
        raise ValueError(f"pattern index must be in [0, {corr.M - 1}], got {index}")
    A = np.zeros((cfg.L, cfg.M))
    A[0] = corr.pair[1, index, :]
    return Window(A=jnp.asarray(A), pe=jnp.asarray(token_positions(cfg.L, cfg.P)), n=jnp.asarray(1, jnp.int32))


# -- windows -------------------------------------------------------------------------------------------


def check_window(
    cfg: DMFTConfig, A, pe, n: int | None = None, where: str = "window"
) -> tuple[np.ndarray, np.ndarray, int]:
    """Validate a window against the configuration (theory: docs/theory/dmft.md §3.3, §3.5).

    ``A`` holds L rows, or a context of 1 ≤ n < L rows (newest first, as the reference's
    ``simulate(context_att, context_pe)`` takes it): it is padded with zero rows to (L, M) and its row count
    is the fill count n (a given ``n`` must equal it). ``pe`` always holds the L positional rows.

    Returns:
        (A (L, M), pe (L, P), n) as float arrays and an int.

    Raises:
        ValueError: naming the array and the rule it breaks.
    """
    A = _numbers(A, "att_window", where)
    pe = _numbers(pe, "pe_window", where)
    if cfg.P == 0 and pe.size == 0:
        pe = pe.reshape(cfg.L, 0)
    if A.ndim == 2 and A.shape[1] == cfg.M and 1 <= A.shape[0] < cfg.L:  # a context shorter than L
        rows = A.shape[0]
        if n is not None and int(n) != rows:
            raise ValueError(
                f"{where}: att_window holds a context of {rows} rows but the fill count n is {n}; give n = {rows} "
                f"or the full (L, M) = ({cfg.L}, {cfg.M}) window"
            )
        A, n = np.vstack([A, np.zeros((cfg.L - rows, cfg.M))]), rows
    if A.shape != (cfg.L, cfg.M):
        raise ValueError(
            f"{where}: att_window must have shape (L, M) = ({cfg.L}, {cfg.M}) (or (n, {cfg.M}) for a context of "
            f"n < L rows), got {A.shape}"
        )
    if pe.shape != (cfg.L, cfg.P):
        raise ValueError(f"{where}: pe_window must have shape (L, P) = ({cfg.L}, {cfg.P}), got {pe.shape}")
    n = cfg.L if n is None else int(n)
    if not 1 <= n <= cfg.L:
        raise ValueError(f"{where}: the fill count n must be in [1, L = {cfg.L}], got {n}")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{where}: att_window contains non-finite values")
    if np.any(np.abs(A[:n]) > 1.0 + 1e-12):
        raise ValueError(
            f"{where}: att_window entries must lie in [-1, 1] (attention outputs are averages of "
            f"overlaps); max |entry| = {np.max(np.abs(A[:n])):.6g}"
        )
    if not np.all(np.abs(pe) == 1):
        raise ValueError(f"{where}: pe_window entries must be ±1")
    if cfg.P:
        pos = [position_of(row) for row in pe]
        if any(p >= cfg.L for p in pos):
            raise ValueError(f"{where}: pe_window codes positions {pos}, but positions run over 0..L-1 = {cfg.L - 1}")
        expected = [(pos[0] - d) % cfg.L for d in range(cfg.L)]
        if pos != expected:
            raise ValueError(
                f"{where}: pe_window rows must be consecutive positions, newest first "
                f"(row d = position of row 0 minus d, mod L): got {pos}, expected {expected}"
            )
    return A, pe, n


def _numbers(a, name: str, where: str) -> np.ndarray:
    """``a`` as a float array, refusing what is not real numbers: booleans, strings, complex numbers
    (their imaginary part would be dropped) and ragged rows."""
    if isinstance(a, np.ndarray):
        if a.dtype.kind not in "iuf":
            kind = {"b": "booleans", "c": "complex numbers", "U": "text", "S": "text", "O": "objects"}.get(
                a.dtype.kind, str(a.dtype)
            )
            raise ValueError(f"{where}: {name} must hold real numbers, not {kind}")
        return a.astype(np.float64)
    stack = [a]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise ValueError(
                f"{where}: {name} must be a rectangular array of numbers, not {type(v).__name__} {v!r:.40}"
            )
    try:
        return np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {name} must be a rectangular array of numbers") from None


def from_window(cfg: DMFTConfig, att_window, pe_window, n: int | None = None) -> Window:
    """An explicit context window, validated against the configuration (full unless ``n`` is given)."""
    A, pe, n = check_window(cfg, att_window, pe_window, n)
    return Window(A=jnp.asarray(A), pe=jnp.asarray(pe), n=jnp.asarray(n, jnp.int32))


def check_cache(cfg: DMFTConfig, data: dict, where: str) -> dict[str, np.ndarray] | None:
    """The cached overlaps of a window file (``cache_mv``, ``cache_mk``, ``cache_m0``, ``cache_se0``),
    validated: all four or none, real finite numbers, of the shapes of an engine state of ``cfg``
    (theory: docs/theory/dmft.md §3.7).

    Raises:
        ValueError: naming the key, the expected and the given shape.
    """
    keys = [f"cache_{k}" for k in CACHE_KEYS]
    present = [k for k in keys if k in data]
    if not present:
        return None
    if len(present) != len(keys):
        raise ValueError(
            f"{where}: the cached overlaps come together ({', '.join(keys)}); missing {sorted(set(keys) - set(present))}"
        )
    L, M = cfg.L, cfg.M
    expected = {"mv": (L, M), "mk": (L, M), "m0": (4, M), "se0": (4, M)}  # meanfield.State
    out = {}
    for k in CACHE_KEYS:
        a = _numbers(data[f"cache_{k}"], f"cache_{k}", where)
        if a.shape != expected[k]:
            raise ValueError(f"{where}: cache_{k} must have shape {expected[k]}, got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{where}: cache_{k} contains non-finite values")
        out[k] = a
    return out


def from_file(cfg: DMFTConfig, path: str | Path) -> Window:
    """Window stored in a file (JSON or the reference's ``.npz``), validated against the configuration."""
    data = read_window_file(path)
    n = data.get("n")
    if n is not None:
        try:
            if isinstance(n, (bool, str)) or np.asarray(n).dtype.kind not in "iuf":
                raise TypeError
            n_float = float(np.asarray(n))
        except (TypeError, ValueError):
            n_float = math.nan
        if not n_float.is_integer():
            raise ValueError(f"{path}: the fill count n must be an integer, got {n!r}")
        n = int(n_float)
    A, pe, n = check_window(cfg, data["att_window"], data["pe_window"], n, where=str(path))
    check_cache(cfg, data, str(path))
    return Window(A=jnp.asarray(A), pe=jnp.asarray(pe), n=jnp.asarray(n, jnp.int32))


from_json = from_file


def paper_checkpoint_path() -> Path:
    """Path of the published β_o = 3 checkpoint shipped inside the package (theory: docs/theory/dmft.md §8)."""
    return Path(str(resources.files("attnphys") / "data" / "dmft-paper-checkpoint-beta3.json"))


def paper_checkpoint(cfg: DMFTConfig) -> Window:
    """The published β_o = 3 context window, the initial condition of the paper's diagrams."""
    if (cfg.M, cfg.L, cfg.P) != (3, 4, 2):
        raise ValueError(
            f"the paper checkpoint has M=3, L=4, P=2; the configuration has M={cfg.M}, L={cfg.L}, "
            f"P={cfg.P} (give a window file with --start)"
        )
    return from_file(cfg, paper_checkpoint_path())


def save_window(
    win: Window | State, path: str | Path, *, mv=None, mk=None, mq=None, mo=None, overwrite: bool = False, **extra
) -> Path:
    """Save a window so that it can be a later ``--start FILE``: ``.npz`` in the reference's checkpoint
    format (``att_window``, ``pe_window``, ``mo/mv/mq/mk_window`` where given, ``beta``), else JSON. A
    window that is not yet full is saved with its fill count ``n``; an engine state also saves its cached
    overlaps (``cache_mv``, …), so that a continuation at the same parameters is exact.

    The output rules of every result apply: an existing file is replaced only with ``overwrite``, and
    only when it is a window file (nothing else is ever overwritten); the file is written whole or not at
    all.

    Raises:
        InputError: ``win`` is not a window or state, an overlap or ``extra`` value is not numbers.
        OutputError: naming ``path``: it exists (without ``overwrite``) or holds something else.
    """
    from attnphys.errors import OutputError
    from attnphys.io import check_plain_file

    if not isinstance(win, (Window, State)):
        raise InputError(
            f"must be a Window or an engine State (e.g. one of final_windows(ds)), got {type(win).__name__}", "win"
        )
    if not isinstance(path, (str, Path)):
        raise InputError(f"must be a file path (.json or .npz), got {type(path).__name__}", "path")
    try:
        check_plain_file(path, "path", suffixes=(".json", ".npz"), overwrite=overwrite)
    except OutputError as e:  # the rules of every output, worded for this function's arguments
        raise OutputError(str(e).replace("pass --overwrite", "pass overwrite=True")) from None
    path = local_path(path, "path")
    if path.exists():
        try:
            read_window_file(path)
        except ValueError:
            raise OutputError(f"path {path} exists and is not a window file; refusing to replace it") from None
    for name, v in (("mo", mo), ("mv", mv), ("mq", mq), ("mk", mk)):
        if v is not None and np.asarray(v).dtype.kind not in "iuf":
            raise InputError(f"must be an array of numbers, got {short_repr(v)}", name)
    try:
        json.dumps(extra, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InputError(
            f"the extra values must be plain finite numbers or text ({e})", next(iter(extra), "extra")
        ) from None
    n = int(np.asarray(win.n))
    A, pe = np.asarray(win.A), np.asarray(win.pe)
    cache = {f"cache_{k}": np.asarray(getattr(win, k)) for k in CACHE_KEYS} if isinstance(win, State) else {}
    with staged(path) as tmp:  # written whole or not at all; missing folders are created
        if path.suffix == ".npz":
            arrays = {"att_window": A, "pe_window": pe, "n": np.asarray(n), **cache}
            for name, v in (("mo_window", mo), ("mv_window", mv), ("mq_window", mq), ("mk_window", mk)):
                if v is not None:
                    arrays[name] = np.asarray(v)
            if "beta_o" in extra:
                arrays["beta"] = np.asarray(extra["beta_o"], dtype=np.float64)
            with open(tmp, "wb") as f:
                np.savez(f, **arrays)  # pyright: ignore[reportArgumentType]  (no array is named allow_pickle)
        else:
            tmp.write_text(
                json.dumps(
                    {
                        "att_window": A.tolist(),
                        "pe_window": pe.tolist(),
                        "n": n,
                        **{k: v.tolist() for k, v in cache.items()},
                        **extra,
                    },
                    indent=1,
                )
            )
    return path


window_to_json = save_window


def start_window(cfg: DMFTConfig, start: Any, corr: Correlations | None = None, epsilon: float | None = None) -> Window:
    """The window of a start (a token start depends on ε; theory: docs/theory/dmft.md §3.5)."""
    start = parse_start(start)
    if isinstance(start, dict):
        from pydantic import TypeAdapter

        start = TypeAdapter(Start).validate_python(start)
    if isinstance(start, TokenStart):
        return from_token(cfg, corr, row=start.row, epsilon=epsilon)
    if isinstance(start, PatternStart):
        return from_pattern(cfg, corr, index=start.index)
    if isinstance(start, CheckpointStart):
        return paper_checkpoint(cfg)
    if isinstance(start, FileStart):
        FileStart(path=start.path, sha256=start.sha256)  # the file must still be the recorded one
        return from_file(cfg, start.path)
    if isinstance(start, PrerunStart):
        raise TypeError("a pre-run start needs the engine: use DMFTModel.initial_states")
    if start.cache:
        check_cache(cfg, {f"cache_{k}": v for k, v in start.cache.items()}, "window")
    return from_window(cfg, start.att_window, start.pe_window, start.n)


initial_window = start_window

if not TYPE_CHECKING:  # the names of 0.2.0 that moved, with a deprecation warning
    __getattr__ = _deprecated.module_getattr(__name__)

"""Initial conditions of the mean-field map (spec ``dmft.md`` §3.5, §4.4).

* :func:`from_token` — the window after the first token x_0 = row ``row`` of W^o, its positional
  bits set to −1 (position 0).
* :func:`from_window` — an explicit context window (A, pe), e.g. a saved checkpoint.
* :func:`from_json` / :func:`paper_checkpoint` — a window stored as JSON with ``att_window`` (L×M)
  and ``pe_window`` (L×P), newest row first; the published β_o = 3 checkpoint ships with the package.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from attnphys.dmft.config import DMFTConfig
from attnphys.dmft.correlations import Correlations
from attnphys.dmft.meanfield import Window


def position_code(p: int, P: int) -> np.ndarray:
    """π(p): the P-bit binary expansion of p, most significant bit first, 0 ↦ −1, 1 ↦ +1 (spec §2.1)."""
    return np.array([1.0 if (p >> (P - 1 - j)) & 1 else -1.0 for j in range(P)], dtype=np.float64)


def token_positions(L: int, P: int) -> np.ndarray:
    """Positional window after a token start: row d = π((−d) mod L), shape (L, P) (spec §3.5)."""
    return np.stack([position_code((-d) % L, P) for d in range(L)]) if P else np.zeros((L, 0))


def token_overlap(corr: Correlations, epsilon: float, row: int = 0) -> np.ndarray:
    """m^α(x_0) for x_0 = row ``row`` of W^o with positional bits −1 (spec §3.5), shape (4, M).

    The semantic part is (1-ε) C^α_{{row},·}: the overlap of a W^o row with W^α is a pair moment.
    """
    if not 0 <= row < corr.M:
        raise ValueError(f"token row must be in [0, {corr.M - 1}], got {row}")
    P = corr.P
    se = (1.0 - epsilon) * corr.pair[:, row, :]
    pe = (1.0 - (1.0 - epsilon)) / P * corr.W_pe.sum(axis=2) * -1.0 if P else 0.0
    return se + pe


def from_token(cfg: DMFTConfig, corr: Correlations | None = None, *, row: int = 0, epsilon: float | None = None) -> Window:
    """Window after the token start: A_0 = [m^v(x_0)], n_0 = 1, pe rows π((−d) mod L) (spec §3.5)."""
    corr = corr if corr is not None else cfg.build_correlations()
    eps = cfg.epsilon if epsilon is None else epsilon
    A = np.zeros((cfg.L, cfg.M))
    A[0] = token_overlap(corr, eps, row)[1]
    return Window(A=jnp.asarray(A), pe=jnp.asarray(token_positions(cfg.L, cfg.P)), n=jnp.asarray(1, jnp.int32))


def from_window(cfg: DMFTConfig, att_window, pe_window) -> Window:
    """A full explicit context window (n = L), validated against the configuration."""
    A = np.asarray(att_window, dtype=np.float64)
    pe = np.asarray(pe_window, dtype=np.float64).reshape(len(A), -1) if cfg.P == 0 else np.asarray(pe_window, dtype=np.float64)
    if A.shape != (cfg.L, cfg.M):
        raise ValueError(f"att_window must have shape (L, M) = ({cfg.L}, {cfg.M}), got {A.shape}")
    if pe.shape != (cfg.L, cfg.P):
        raise ValueError(f"pe_window must have shape (L, P) = ({cfg.L}, {cfg.P}), got {pe.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError("att_window contains non-finite values")
    if not np.all(np.abs(pe) == 1):
        raise ValueError("pe_window entries must be ±1")
    return Window(A=jnp.asarray(A), pe=jnp.asarray(pe), n=jnp.asarray(cfg.L, jnp.int32))


def read_window_json(path: str | Path) -> dict:
    """Read a window file: a JSON object with ``att_window`` and ``pe_window`` (and optional ``beta_o``)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"initial-condition file {path} does not exist") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"initial-condition file {path} is not valid JSON: {e}") from None
    missing = {"att_window", "pe_window"} - set(data)
    if missing:
        raise ValueError(f"initial-condition file {path} lacks {sorted(missing)}")
    return data


def from_json(cfg: DMFTConfig, path: str | Path) -> Window:
    """Window stored as JSON (format of the published checkpoint)."""
    data = read_window_json(path)
    return from_window(cfg, data["att_window"], data["pe_window"])


def paper_checkpoint_path() -> Path:
    """Path of the published β_o = 3 checkpoint (spec §4.4) shipped inside the package."""
    return Path(str(resources.files("attnphys") / "data" / "dmft-paper-checkpoint-beta3.json"))


def paper_checkpoint(cfg: DMFTConfig) -> Window:
    """The published β_o = 3 context window, the initial condition of the paper's diagrams."""
    if (cfg.M, cfg.L, cfg.P) != (3, 4, 2):
        raise ValueError(f"the paper checkpoint has M=3, L=4, P=2; the configuration has M={cfg.M}, L={cfg.L}, P={cfg.P}")
    return from_json(cfg, paper_checkpoint_path())


def window_to_json(win: Window, path: str | Path, **extra) -> None:
    """Save a (full) window in the checkpoint format so that it can be a later ``--start FILE.json``."""
    n = int(win.n)
    A = np.asarray(win.A)[:n]
    Path(path).write_text(json.dumps({"att_window": A.tolist(), "pe_window": np.asarray(win.pe).tolist(), **extra}, indent=1))


def initial_window(cfg: DMFTConfig, start: str, corr: Correlations | None = None) -> Window:
    """Resolve a start specification: ``token``, ``checkpoint`` or a path to a JSON window."""
    if start == "token":
        return from_token(cfg, corr)
    if start == "checkpoint":
        return paper_checkpoint(cfg)
    return from_json(cfg, start)

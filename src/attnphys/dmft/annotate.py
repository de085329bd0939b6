"""What a DMFT result says about itself beyond its numbers: coordinate labels, and warnings about how it
was made (theory: docs/theory/dmft.md §8.2).

Two situations give results that are correct but easy to misread, and are flagged:

* **a start made for another network** — the published β_o = 3 checkpoint is a context window of the
  paper's network (segment correlations, seed 1, 3 segments, N_se = 99). Any other network (another
  correlation seed, as in a sweep over ``seed``) can start from it, but its first steps then carry the
  paper network's state: a warning says so;
* **identical overlaps** — when two rows of the semantic output weights W^{o,se} are equal (or opposite),
  the corresponding components of ``mo_se`` are identical (or opposite) at every step, so a zero-plane
  section of one at the other's zero is degenerate (seed 4 of the paper set-up: rows 0 and 2 are equal,
  ``mo_se[0] ≡ mo_se[2]``).

:func:`annotate` issues each warning once with Python's :mod:`warnings` (category :class:`ResultWarning`)
and records it in the dataset's ``warnings`` attribute (one line each), and gives every swept coordinate
a CF ``long_name``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import xarray as xr

from attnphys.dmft._variant import AbstractConfig
from attnphys.dmft.config import DMFTConfig

PAPER_NETWORK = {"kind": "segments", "seed": 1, "n_segments": 3}
"""The correlations of the network the published checkpoint was made with (with N_se = 99)."""

COORD_LONG_NAMES = {
    "seed": "seed of the correlations (network weights)",
    "n": "network size N (semantic bits)",
    "direction": "continuation direction",
}
"""long_name of the swept coordinates that are not configuration fields (those take the field's
description, e.g. ``output inverse temperature β_o``)."""


class ResultWarning(UserWarning):
    """A result is valid but easy to misread (theory: docs/theory/dmft.md §8.2)."""


def coord_long_name(name: str, cfg: Any = None) -> str | None:
    """CF long_name of a swept coordinate: the field's description in ``cfg``'s configuration class (default
    :class:`~attnphys.dmft.DMFTConfig`), or :data:`COORD_LONG_NAMES` (theory: docs/theory/dmft.md §8.2)."""
    field = type(cfg).model_fields.get(name) if cfg is not None else DMFTConfig.model_fields.get(name)
    if field is not None and field.description:
        return field.description
    return COORD_LONG_NAMES.get(name)


def checkpoint_caveat(cfg: DMFTConfig, start: Any, seeds=None) -> str | None:
    """The warning for a start from the published checkpoint on a network it was not made for, or None
    (theory: docs/theory/dmft.md §8.2).

    Args:
        cfg: the configuration. start: the start (a string, or a start model with ``kind``). seeds: the
            correlation seeds of a sweep over ``seed`` (None: the configuration's).
    """
    kind = start if isinstance(start, str) else getattr(start, "kind", None)
    if kind != "checkpoint":
        return None
    corr = cfg.correlations.model_dump()
    seeds = [corr.get("seed")] if seeds is None else [int(s) for s in np.atleast_1d(seeds)]
    other = {k: v for k, v in corr.items() if k != "seed"} != {k: v for k, v in PAPER_NETWORK.items() if k != "seed"}
    foreign = [s for s in seeds if s != PAPER_NETWORK["seed"]]
    if not other and not foreign and cfg.n_se == 99:
        return None
    what = f"correlation seed {', '.join(map(str, foreign))}" if foreign and not other else "this network"
    return (
        f"start 'checkpoint' is the published beta_o = 3 context window of the paper network (segments, seed 1, "
        f"N_se = 99); {what} starts from that network's state, not from one of its own"
    )


def identical_overlaps(cfg: DMFTConfig) -> list[tuple[int, int, int]]:
    """Pairs (i, j, sign) of mo_se components with mo_se[i] ≡ sign·mo_se[j] at every step: equal (sign +1)
    or opposite (−1) rows of the semantic output weights W^{o,se}; without explicit weights, equal rows of
    the moments C^o (theory: docs/theory/dmft.md §8.2)."""
    corr = cfg.build_correlations()
    if corr.weights is not None:
        rows = np.asarray(corr.weights)[0][:, : cfg.n_se]
        out = []
        for i in range(cfg.M):
            for j in range(i + 1, cfg.M):
                if np.array_equal(rows[i], rows[j]):
                    out.append((i, j, 1))
                elif np.array_equal(rows[i], -rows[j]):
                    out.append((i, j, -1))
        return out
    C = np.asarray(corr.C)[0]
    return [(i, j, 1) for i in range(cfg.M) for j in range(i + 1, cfg.M) if np.array_equal(C[:, i], C[:, j])]


def overlap_caveat(cfg: DMFTConfig, seeds=None) -> str | None:
    """The warning for networks with identical (or opposite) mo_se components, or None (theory:
    docs/theory/dmft.md §8.2). ``seeds``: the correlation seeds of a sweep over ``seed``."""
    cfgs = [cfg] if seeds is None else [cfg.with_field("seed", int(s)) for s in np.atleast_1d(seeds)]
    notes = []
    for c in cfgs:
        pairs = identical_overlaps(c)
        if pairs:
            rel = ", ".join(f"mo_se[{i}] {'≡ ' if s > 0 else '≡ −'}mo_se[{j}]" for i, j, s in pairs)
            where = f"seed {c.correlations.model_dump().get('seed')}: " if seeds is not None else ""
            notes.append(where + rel)
    if not notes:
        return None
    return (
        "rows of the semantic output weights coincide, so overlaps are identical at every step ("
        + "; ".join(notes)
        + "): zero-plane sections between them are degenerate"
    )


def caveats(cfg: AbstractConfig, start: Any = None, seeds=None) -> list[str]:
    """Every warning that applies to a result of ``cfg`` started from ``start`` (theory: docs/theory/dmft.md §8.2);
    none for another model variant (a designed model has neither the checkpoint nor random correlations)."""
    if not isinstance(cfg, DMFTConfig):
        return []
    return [m for m in (checkpoint_caveat(cfg, start, seeds), overlap_caveat(cfg, seeds)) if m]


def record_warnings(ds: xr.Dataset, messages: list[str], stacklevel: int = 2) -> xr.Dataset:
    """Issue each message as a :class:`ResultWarning` and add it to ``ds.attrs["warnings"]`` (one line per
    warning, no repeats) (theory: docs/theory/dmft.md §8.2). Returns ``ds`` (changed in place)."""
    have = [w for w in str(ds.attrs.get("warnings", "")).split("\n") if w]
    for m in messages:
        warnings.warn(m, ResultWarning, stacklevel=stacklevel + 1)
        if m not in have:
            have.append(m)
    if have:
        ds.attrs["warnings"] = "\n".join(have)
    return ds


def label_coords(ds: xr.Dataset, cfg: Any = None) -> xr.Dataset:
    """Give every coordinate that lacks one a CF ``long_name`` (:func:`coord_long_name`) (theory:
    docs/theory/dmft.md §8.2). Returns ``ds`` (changed in place)."""
    for name in ds.coords:
        text = coord_long_name(str(name), cfg)
        if text and "long_name" not in ds[name].attrs:
            ds[name].attrs["long_name"] = text
    return ds


def annotate(ds: xr.Dataset, cfg: AbstractConfig, start: Any = None) -> xr.Dataset:
    """:func:`label_coords` and :func:`record_warnings` of :func:`caveats` for a result of ``cfg`` from
    ``start`` (a sweep over ``seed`` is read from the ``seed`` coordinate) (theory: docs/theory/dmft.md §8.2)."""
    seeds = ds["seed"].values if "seed" in ds.coords else None
    label_coords(ds, cfg)
    return record_warnings(ds, caveats(cfg, start, seeds), stacklevel=3)


__all__ = [
    "ResultWarning",
    "annotate",
    "caveats",
    "checkpoint_caveat",
    "coord_long_name",
    "identical_overlaps",
    "label_coords",
    "overlap_caveat",
    "record_warnings",
]

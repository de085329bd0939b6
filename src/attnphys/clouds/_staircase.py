"""Staircase energy and merge order of a clustering flow (theory: docs/theory/particles.md §10).

On a metastable plateau of K clusters with token fractions m_a and directions z_a, the interaction energy
of §3 is E = (1/(2β)) Σ_{a,b} m_a m_b e^{β⟨z_a, z_b⟩} up to the spread inside the clusters; at a merge it jumps
by the change of this sum. Neighbouring clusters at cosine c interact with weight e^{−β(1−c)} relative to a
cluster's self-interaction, so the pair of largest cosine merges first, on the time scale e^{β(1−c)}.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import xarray as xr

from attnphys._checks import check_array
from attnphys.clouds._inputs import choice, count, fits_blaming, flag, number, precision_noted
from attnphys.clouds._inputs import seed as check_seed
from attnphys.errors import InputError


def cluster_labels(X: np.ndarray, delta: float) -> np.ndarray:
    """(N,) cluster labels of a cloud X (N, D): connected components of cos > 1 − δ
    (:func:`scipy.sparse.csgraph.connected_components`) (theory: docs/theory/particles.md §10)."""
    from scipy.sparse.csgraph import connected_components

    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    return connected_components(U @ U.T > 1 - delta, directed=False)[1]


def cluster_energy(X: np.ndarray, labels: np.ndarray, beta: float) -> tuple[float, np.ndarray, np.ndarray]:
    """The plateau energy (1/(2β)) Σ_{a,b} m_a m_b e^{β⟨z_a, z_b⟩} of the clusters ``labels`` of X, their
    fractions m (K,) and unit directions z (K, D) (theory: docs/theory/particles.md §10.1).

    Raises:
        InputError: ``X`` not a finite (N, D) array with N ≥ 1, ``labels`` not N integers that number the
            clusters 0 … K − 1 (each used), ``beta`` not a finite number > 0."""
    N, _ = check_array(X, "X", ndim=2, what="tokens × dimensions (N, D)", finite=True)
    if N < 1:
        raise InputError("must hold at least one token", "X")
    lab = np.asarray(labels) if not isinstance(labels, (str, bytes)) else np.asarray([labels])
    if lab.shape != (N,) or lab.dtype.kind not in "iu":
        raise InputError(
            f"must be ({N},) integer labels, one per token, got {lab.dtype} of shape {lab.shape}", "labels"
        )
    K = int(lab.max()) + 1 if N else 0
    if lab.min() < 0 or np.unique(lab).size != K:
        raise InputError(
            f"must number the clusters 0 … K − 1, each used; got the labels {sorted(set(lab.tolist()))!r:.80}", "labels"
        )
    beta = number(beta, "beta", low=0.0, low_open=True)
    X, labels = np.asarray(X, dtype=float), lab
    m = np.bincount(labels, minlength=K) / len(labels)
    z = np.stack([X[labels == a].sum(0) for a in range(K)])
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    return float(m @ np.exp(beta * z @ z.T) @ m / (2 * beta)), m, z


def staircase(
    beta: float,
    *,
    tokens: int = 32,
    dim: int = 2,
    dynamics: Literal["sa", "usa"] = "sa",
    t_max: float = 300.0,
    saves: int = 601,
    cluster_delta: float = 1e-3,
    min_length: float = 5.0,
    seed: int = 0,
    progress: bool = False,
) -> xr.Dataset:
    """Metastable plateaus (constant cluster count held at least ``min_length``) of one flow from a uniform
    start, with the measured and predicted energy of each and, between consecutive ones, whether the pair of
    largest cosine merged (theory: docs/theory/particles.md §10).

    Returns:
        Dataset over ``plateau``: ``clusters``, ``start``, ``length``, ``energy`` (measured, at the
        plateau's middle), ``energy_predicted`` (cluster formula), ``closest_cosine`` (largest cosine
        between two clusters), ``timescale`` e^{β(1 − closest_cosine)}, ``closest_merged`` (1 if the next
        merge joins that pair, 0 if another, −1 at the last plateau or when several clusters merge at once).

    Raises:
        InputError: an argument of a wrong type or out of range, naming it; no plateau (naming ``t_max``).
            ResourceError: the saved flow does not fit, naming the size to blame.
    """
    import jax
    import jax.numpy as jnp

    from attnphys.clouds.attention import ATTENTIONS
    from attnphys.clouds.flow import solve_flow, uniform_sphere
    from attnphys.clouds.observables import plateaus
    from attnphys.metadata import base_attrs

    beta = number(beta, "beta", low=0.0, low_open=True)
    tokens, dim, saves = count(tokens, "tokens", 2), count(dim, "dim", 2), count(saves, "saves", 2)
    choice(dynamics, ("sa", "usa"), "dynamics")
    t_max = number(t_max, "t_max", low=0.0, low_open=True)
    cluster_delta = number(cluster_delta, "cluster_delta", low=0.0, high=2.0, low_open=True, high_open=True)
    min_length = number(min_length, "min_length", low=0.0)
    seed, progress = check_seed(seed), flag(progress, "progress")
    fits_blaming(  # the saved flow, the tokens × tokens cosines of one saved state at a time, the solver's
        lambda v: 8.0 * (2 * v["saves"] * v["tokens"] * v["dim"] + 40 * v["tokens"] ** 2 + 30 * v["tokens"] * v["dim"]),
        {"tokens": tokens, "dim": dim, "saves": saves},
        {"tokens": 32, "dim": 2, "saves": 601},
        {
            "tokens": f"the flow of {tokens} tokens",
            "dim": f"{tokens} tokens in {dim} dimensions",
            "saves": f"{saves} saved times of {tokens}×{dim} tokens",
        },
        least={"tokens": 2, "dim": 2, "saves": 2},
    )
    X0 = uniform_sphere(jax.random.PRNGKey(seed), tokens, dim)
    ts = np.linspace(0.0, t_max, saves)
    attn = ATTENTIONS[dynamics](beta=jnp.asarray(float(beta)))
    with precision_noted("staircase (a diffrax solve)"):
        sol = solve_flow(attn, X0, ts, solver="tsit5", progress=progress)
    xs = np.asarray(sol.xs)
    labels = [cluster_labels(X, cluster_delta) for X in xs]
    counts = np.array([lab.max() + 1 for lab in labels])
    pl = [p for p in plateaus(ts, counts) if p.length >= min_length]
    rows = []
    for i, p in enumerate(pl):
        t_mid = 0.5 * (p.start + min(p.end, t_max))
        k = int(np.argmin(np.abs(ts - t_mid)))
        X, lab = xs[k], labels[k]
        E_pred, _, z = cluster_energy(X, lab, beta)
        E_meas = float(np.sum(np.exp(beta * X @ X.T)) / (2 * beta * tokens**2))
        C = z @ z.T - 2 * np.eye(len(z))
        a, b = np.unravel_index(np.argmax(C), C.shape) if len(z) > 1 else (0, 0)
        closest = float(C[a, b]) if len(z) > 1 else np.nan
        merged = -1
        if i + 1 < len(pl) and len(z) > 1 and pl[i + 1].clusters == p.clusters - 1:
            nxt = labels[int(np.searchsorted(ts, pl[i + 1].start))]  # single merge: one fewer cluster
            ia, ib = np.flatnonzero(lab == a)[0], np.flatnonzero(lab == b)[0]
            merged = int(nxt[ia] == nxt[ib])
        rows.append((p.clusters, p.start, p.length, E_meas, E_pred, closest, merged))
    if not rows:
        raise InputError(f"no plateau of length >= {min_length} up to t = {t_max}; lengthen t_max", "t_max")
    cl, st, ln, em, ep, cc, mg = (np.array(c) for c in zip(*rows))
    ds = xr.Dataset(
        {
            "clusters": (("plateau",), cl.astype(np.int64)),
            "start": (("plateau",), st),
            "length": (("plateau",), ln),
            "energy": (("plateau",), em),
            "energy_predicted": (("plateau",), ep),
            "closest_cosine": (("plateau",), cc),
            "timescale": (("plateau",), np.exp(beta * (1 - cc))),
            "closest_merged": (("plateau",), mg.astype(np.int64)),
        },
        coords={"plateau": np.arange(len(rows))},
    )
    for k, text, unit in (
        ("plateau", "index of the plateau of the cluster count", None),
        ("clusters", "cluster count on the plateau", None),
        ("start", "first saved time of the plateau", "1"),
        ("length", "duration of the plateau (a lower bound for the last)", "1"),
        ("energy", "interaction energy E_beta at the middle of the plateau (measured)", None),
        ("energy_predicted", "(1/2beta) sum_ab m_a m_b exp(beta <z_a, z_b>) of the clusters", None),
        ("closest_cosine", "largest cosine between two cluster directions", None),
        ("timescale", "exp(beta (1 - closest cosine)): predicted time scale of the next merge", "1"),
        ("closest_merged", "1: the next merge joins the closest pair; 0: another pair; -1: none or several", None),
    ):
        ds[k].attrs["long_name"] = text
        if unit:
            ds[k].attrs["units"] = unit
    ds.attrs.update(
        base_attrs(
            None, beta=float(beta), tokens=tokens, dim=dim, dynamics=dynamics, t_max=t_max, saves=saves,
            cluster_delta=cluster_delta, min_length=min_length, seed=seed,
        )
    )  # fmt: skip
    return ds


__all__ = ["cluster_energy", "cluster_labels", "staircase"]

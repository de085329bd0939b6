"""The (β, t) clustering phase diagram on the sweep engine (theory: docs/theory/particles.md §5).

Per value of β, ``samples`` clouds of uniform starts on the sphere flow under the chosen attention;
at every saved time the task records the fraction of clustered pairs and the cluster count, averaged
over the samples, and the fraction of samples already in one cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import Field

from attnphys.clouds._analysis_options import ClusteringPoint
from attnphys.clouds.attention import ATTENTIONS
from attnphys.clouds.flow import solve_many
from attnphys.clouds.observables import clustered_pairs
from attnphys.clouds.stats import cluster_components
from attnphys.progress import report_fraction
from attnphys.sweeps.grid import Grid, point_seed
from attnphys.sweeps.task import AbstractTask, VarSpec, options_task, register_task


@jax.jit
def _cluster_series(xs, pair_tol, delta):
    """(S, T, N, D) → clustered pairs and cluster counts (S, T)."""

    def one(X):
        U = X / jnp.linalg.norm(X, axis=-1, keepdims=True)
        return clustered_pairs(X, pair_tol), cluster_components(U @ U.T > 1 - delta)

    return jax.vmap(jax.vmap(one))(xs)


if TYPE_CHECKING:  # the fields a type checker sees: the options' (built at run time by options_task)

    class _ClusteringFields(AbstractTask, ClusteringPoint): ...
else:
    _ClusteringFields = options_task(ClusteringPoint, exclude=("seed",))


@register_task
class ClusteringTask(_ClusteringFields):
    """Per β: clustering of uniform starts on the sphere over time (theory: docs/theory/particles.md §5).
    The grid has one axis, ``beta`` (β ≥ 0). Its fields are those of
    :class:`~attnphys.clouds._analysis_options.ClusteringPoint` (declared there once), but ``seed``: a point's
    seed is the sweep's, from its index."""

    kind: Literal["clouds-clustering"] = "clouds-clustering"
    max_steps: int = Field(default=1_000_000, ge=1)

    def check_grid(self, grid: Grid) -> None:
        for ax in grid.axes:
            if ax.name != "beta":
                raise ValueError(f"unknown sweep field {ax.name!r}; the clustering diagram sweeps beta only")
            if min(float(v) for v in ax.values) < 0:
                raise ValueError(f"axis beta: values must be >= 0, got {min(ax.values)}")

    def times(self) -> np.ndarray:
        return np.linspace(0.0, self.t_max, self.saves)

    @classmethod
    def example(cls):
        from attnphys.sweeps import Axis

        return (
            cls(dim=3, tokens=12, t_max=4.0, saves=5, samples=2),  # pyright: ignore[reportCallIssue]
            Grid(axes=(Axis(name="beta", values=(0.5, 1.0, 4.0)),), chunk=2),
        )

    def schema(self, grid: Grid) -> dict[str, VarSpec]:
        T = self.saves
        return {
            "clustered_pairs": VarSpec(
                ("time",), (T,), np.float64, np.nan, "fraction of clustered token pairs, mean over the samples"
            ),
            "clustered_pairs_std": VarSpec(
                ("time",), (T,), np.float64, np.nan, "standard deviation of the clustered fraction over the samples"
            ),
            "clusters": VarSpec(("time",), (T,), np.float64, np.nan, "cluster count, mean over the samples"),
            "one_cluster": VarSpec(("time",), (T,), np.float64, np.nan, "fraction of samples in a single cluster"),
            "clustering_time": VarSpec(
                (),
                (),
                np.float64,
                np.nan,
                "first saved time with every sample in one cluster (NaN if never)",
                units="1",
            ),
            "failed": VarSpec((), (), np.int64, -1, "samples whose integration failed (NaN results)"),
        }

    def coords(self, grid: Grid):
        return {"time": (("time",), self.times(), {"long_name": "time of the continuous-time dynamics", "units": "1"})}

    def attrs(self) -> dict:
        return {
            "dynamics": self.dynamics,
            "dim": self.dim,
            "tokens": self.tokens,
            "samples": self.samples,
            "rtol": self.rtol,
            "atol": self.atol,
            "solver": self.solver,
            "pair_tol": self.pair_tol,
            "cluster_delta": self.cluster_delta,
            "start": "uniform on the unit sphere",
        }

    def compute(self, grid: Grid, lo: int, hi: int, base_seed: int = 0) -> dict[str, np.ndarray]:
        flat = grid.points(lo, hi)["beta"]
        seeds = point_seed(base_seed, range(lo, hi))
        ts = jnp.asarray(self.times())
        out = {
            k: []
            for k in ("clustered_pairs", "clustered_pairs_std", "clusters", "one_cluster", "clustering_time", "failed")
        }
        for i, (beta, seed) in enumerate(zip(flat, seeds)):
            report_fraction(i, len(flat))
            key = jax.random.PRNGKey(int(seed))
            X0 = jax.random.normal(key, (self.samples, self.tokens, self.dim))
            X0 = X0 / jnp.linalg.norm(X0, axis=-1, keepdims=True)
            attn = ATTENTIONS[self.dynamics](beta=jnp.asarray(float(beta)))
            ys, _, ok = solve_many(attn, X0, ts, True, True, self.rtol, self.atol, self.solver, self.max_steps)
            ok = np.asarray(ok) & np.isfinite(np.asarray(ys)).reshape(self.samples, -1).all(1)
            frac, count = (np.array(a, float) for a in _cluster_series(ys, self.pair_tol, self.cluster_delta))
            frac[~ok], count[~ok] = np.nan, np.nan
            one = np.mean(count == 1, axis=0)
            hit = np.flatnonzero(np.all(count == 1, axis=0))
            out["clustered_pairs"].append(np.nanmean(frac, 0) if ok.any() else np.full(self.saves, np.nan))
            out["clustered_pairs_std"].append(np.nanstd(frac, 0) if ok.any() else np.full(self.saves, np.nan))
            out["clusters"].append(np.nanmean(count, 0) if ok.any() else np.full(self.saves, np.nan))
            out["one_cluster"].append(one)
            out["clustering_time"].append(float(self.times()[hit[0]]) if hit.size and ok.all() else np.nan)
            out["failed"].append(int((~ok).sum()))
        return {k: np.asarray(v) for k, v in out.items()}


__all__ = ["ClusteringTask"]

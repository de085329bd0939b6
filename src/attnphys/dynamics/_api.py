"""The dynamics toolkit's analyses as functions returning labelled ``xarray.Dataset``: Lyapunov spectra and the
continuation of a periodic orbit of any map (theory: docs/theory/dynamics.md §2, §6). The census and the
tracks (:func:`~attnphys.dynamics.census`, :func:`~attnphys.dynamics.tracks`) return datasets already;
:mod:`attnphys.dynamics` re-exports all four."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import jax
import numpy as np
import xarray as xr

from attnphys import _deprecated
from attnphys._arguments import checked
from attnphys.dynamics._lyapunov import EVIDENCE, lyapunov, sorted_evidence
from attnphys.dynamics.checks import is_traced, memory_of, state_dim
from attnphys.dynamics.maps import AbstractMap
from attnphys.errors import InputError
from attnphys.runtime import shard_batch


@checked(
    memory=lambda a: (
        None
        if not a["history_every"]
        else memory_of(
            8 * 2 * (a["steps"] // a["history_every"] + 1) * state_dim(a["m"], None, a["x0"]),
            "the history",
            "use a larger history_every",
            a,
            "steps",
        )
    )
)
def lyapunov_spectrum(
    m: AbstractMap,
    x0,
    aux0,
    params,
    *,
    steps: int,
    exponents: int | None = None,
    align: int = 0,
    reortho_every: int = 1,
    history_every: int = 0,
    init: Literal["random", "identity"] = "random",
    batch: bool = False,
    values: Sequence[float] | None = None,
    name: str = "param",
) -> xr.Dataset:
    """The leading Lyapunov exponents λ_i = (1/T) Σ_t log|R_t[i, i]| of a map by Benettin's QR method over
    ``steps`` steps (after ``align`` steps that turn the tangent vectors into place), sorted descending, with
    the evidence of every exponent (theory: docs/theory/dynamics.md §2.1–2.3).

    Args:
        m: the map; x0: (D,) state, or (B, D) with ``batch``; aux0: its auxiliary state; params: the
            parameters (batched along a leading axis with ``batch``).
        exponents: how many (default: all D).
        reortho_every: steps between QR re-orthonormalisations (the columns are rescaled every step).
        history_every: keep the running estimates every this many steps (0: none).
        batch: ``x0``, ``aux0`` and ``params`` carry a leading batch axis: one spectrum per row, along a
            dimension ``name`` with coordinate ``values`` (default: the row index).

    Returns:
        Dataset with ``exponents`` ([name,] exponent) and their evidence ``roundoff_fraction``,
        ``below_roundoff``, ``zero_hits``, ``parallel_fraction``, ``unreliable``; with ``history_every``,
        ``history`` ([name,] checkpoint, qr_column).

    Raises:
        InputError: naming the argument: ``m`` not a map, ``x0``, ``aux0`` or ``params`` of the wrong type
            or of batches of different sizes, ``exponents`` out of [1, D], or ``values`` of another length
            than the batch; called under a JAX transformation (``jax.vmap``, ``jax.jit``): a Dataset cannot be
            traced, so the error says what to use instead (``batch=True``, or :func:`~attnphys.dynamics.orbit`).
        NonFiniteError: the state or a tangent vector became non-finite (naming the step and the parameters).
    """
    from attnphys.dynamics.orbits import check_map_call

    if is_traced((x0, aux0, params)):
        raise InputError(
            "is traced (inside jax.vmap, jax.jit or another transformation): lyapunov_spectrum returns a "
            "labelled xarray.Dataset, which a transformation cannot carry; give the rows at once with "
            "batch=True (one spectrum per row, split over the devices), or transform "
            "attnphys.dynamics.orbit with OrbitSpec(k=...), which returns arrays",
            "x0",
        )
    D = int(check_map_call(m, x0, aux0, params, batch=bool(batch))[-1])
    k = D if exponents is None else int(exponents)
    if not 1 <= k <= D:
        raise InputError(f"must be in [1, D = {D}], got {k}", "exponents")

    def one(x, aux, p, check=True):
        return lyapunov(
            m,
            x,
            aux,
            p,
            steps=steps,
            k=k,
            reortho_every=reortho_every,
            align=align,
            history_every=history_every,
            init=init,
            check=check,
        )

    if batch:
        B = int(np.shape(x0)[0])
        # the rows split over the devices (every core), each device's share one vectorised program
        res = shard_batch(jax.vmap(lambda x, a, p: one(x, a, p, check=False)), (x0, aux0, params), B)
        coord = np.arange(B) if values is None else np.asarray(values)
        if coord.shape != (B,):
            raise InputError(f"needs one value per row ({B}), got {coord.shape}", "values")
        dims: tuple[str, ...] = (name, "exponent")
        coords = {name: coord, "exponent": np.arange(k)}
    else:
        res = one(x0, aux0, params)
        dims, coords = ("exponent",), {"exponent": np.arange(k)}
    ev = sorted_evidence(res.exponents, res.roundoff, res.zero_hits, res.parallel)
    data: dict[str, tuple] = {v: (dims, np.asarray(ev[v]).astype(EVIDENCE[v][0]), EVIDENCE[v][2]) for v in EVIDENCE}
    if history_every:
        n_hist = np.shape(res.history)[-2]
        coords["checkpoint"] = history_every * np.arange(1, n_hist + 1)
        data["history"] = (
            dims[:-1] + ("checkpoint", "qr_column"),
            np.asarray(res.history),
            {"long_name": "running exponent estimates (QR order)", "units": "1/step"},
        )
    return xr.Dataset(
        data,
        coords=coords,
        attrs={"steps": steps, "align": align, "reortho_every": reortho_every, "init": init, "map": type(m).__name__},
    )


def _is_chain_call(m=None, x0=None, *args: Any, **kwargs: Any) -> bool:
    from attnphys.dynamics.orbits import OrbitSpec

    return isinstance(x0, OrbitSpec)


@_deprecated.accepts_old_call(
    _is_chain_call,
    "attnphys.dynamics.continuation(m, spec, x0, aux0, path)",
    "attnphys.dynamics.orbits:continuation_chains",
    "attnphys.dynamics.continuation_chains",
)
def continuation(
    m: AbstractMap,
    x0,
    aux0,
    params_of: Callable[[Any], Any],
    start_value: float,
    stop_value: float,
    *,
    period: int,
    step: float = 1e-3,
    max_step: float = 1e-2,
    max_points: int = 2000,
    past_folds: bool = False,
    name: str = "param",
    **options: Any,
) -> xr.Dataset:
    """Continue the period-``period`` orbit through ``x0`` at s = ``start_value`` towards ``stop_value`` by
    pseudo-arclength continuation of F^p(x; s) = x, with its Floquet multipliers and the folds, flips and
    Neimark–Sacker points located on the way (theory: docs/theory/dynamics.md §6).

    Args:
        m: the map; x0, aux0: a point of the orbit (refined first); params_of: s ↦ the map's parameters,
            traceable; period: the orbit's period.
        step, max_step: the initial and largest arclength steps; max_points: most continuation points.
        past_folds: continue past a fold (the branch turns back) instead of stopping there.
        name: the parameter's name in the dataset; options: further options of
            :func:`~attnphys.dynamics.continue_orbit`.

    Returns:
        Dataset over the branch points (``s``, the orbit point ``x``, ``multiplier_abs``/``multiplier_angle``,
        ``stable``) and the events (``event_kind``, ``event_s``, …); attributes ``period`` and ``status``.
    """
    from attnphys.dynamics.bifurcations import check_continuation, continue_orbit

    start_value, stop_value = check_continuation(start_value, stop_value, step, max_step, max_points)
    branch = continue_orbit(
        m,
        x0,
        aux0,
        params_of,
        start_value,
        stop_value,
        period=period,
        ds=step,
        ds_max=max_step,
        max_steps=max_points,
        past_folds=past_folds,
        **options,
    )
    return branch.to_dataset(name)

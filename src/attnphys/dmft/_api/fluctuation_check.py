"""Prediction against measurement: the finite network over many paths beside the system-size expansion
(theory: docs/theory/fluctuations.md §4)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys._options import takes
from attnphys.dmft._analysis_options import CompareFluctuationsOptions
from attnphys.dmft._api.fluctuations import check_inputs, fluctuations, linear_noise_setup, predicted_horizon
from attnphys.errors import InputError


def _period(y: np.ndarray, L: int, tol: float) -> int:
    """The smallest multiple p of L such that the records y (T, F) repeat after p steps over the whole window
    (T when none does: no averaging over cycles)."""
    T = y.shape[0]
    for p in range(L, T // 2 + 1, L):
        if np.max(np.abs(y[p:] - y[:-p])) <= tol:
            return p
    return T


@partial(jax.jit, static_argnames=("L", "length", "convention", "record"))
def _simulate_from(net, sc, s0, keys, *, L: int, length: int, convention, record):
    """Paths of ``length`` finite-network steps from the state s0, one per key (compiled once per shape)."""
    from attnphys.dmft.finite import finite_step

    def one(key):
        def body(s, t):
            return finite_step(net, sc, s, jax.random.fold_in(key, t), L, False, convention, record)

        return jax.lax.scan(body, s0, s0.t + jnp.arange(length))[1]

    return jax.vmap(one)(keys)


def _paths_from(cfg, n: int, *, start_step: int, steps: int, paths: int, seed: int, record) -> dict[str, np.ndarray]:
    """Finite-N paths started at loop step ``start_step`` from the mean-field state there (theory:
    docs/theory/fluctuations.md §4), stepped by the finite network's own step
    (:func:`~attnphys.dmft.finite.finite_step`, one binomial per weight class); path p uses the key
    fold_in(PRNGKey(seed), p). Returns name → (paths, steps − start_step, M)."""
    from attnphys.dmft import _linear_noise as ln
    from attnphys.dmft.finite import FiniteState, repeated_network
    from attnphys.errors import NonFiniteError

    model, sc, lnet = linear_noise_setup(cfg)
    L, M = cfg.L, cfg.M
    x = ln.orbit(lnet, sc, ln.initial(lnet, sc, L, M), steps=start_step, L=L, M=M)[-1]
    A, mv, mk, _ = ln.unpack(jnp.asarray(x), L, M)
    s0 = FiniteState(mv, mk, jnp.asarray(L, jnp.int32), A, jnp.asarray(start_step, jnp.int32))
    keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.PRNGKey(seed), i))(jnp.arange(paths))
    recs = _simulate_from(
        repeated_network(cfg, n),
        sc,
        s0,
        keys,
        L=L,
        length=steps - start_step,
        convention=model.convention,
        record=tuple(record),
    )
    out = {k: np.asarray(v) for k, v in recs.items()}
    for k, v in out.items():
        if not np.all(np.isfinite(v)):
            step = start_step + int(np.argmax(~np.isfinite(v).any(axis=(0, 2))))
            raise NonFiniteError(step=step, params={"beta_o": float(cfg.beta_o), "n": n}, what=f"finite-network {k}")
    return out


@takes(CompareFluctuationsOptions)
def compare_fluctuations(cfg, sizes: Sequence[int], *, options: CompareFluctuationsOptions) -> xr.Dataset:
    """The predicted fluctuations (:func:`fluctuations`, paths from the first token) beside the finite
    network's (:func:`~attnphys.dmft.finite_trajectories`, ``paths`` paths at every size), over the steps
    ``transient`` … ``steps`` − 1 (theory: docs/theory/fluctuations.md §5). With ``start_step`` > 0 both start at
    that loop step from the mean-field state there (on the attractor after a transient), the paths stepped by
    the finite network's own step, and the window begins at max(``transient``, ``start_step``).

    Per observable ``x``, size ``n``, step and feature: ``x_std_predicted`` = √(var/N) and ``x_std_measured``
    (over paths); ``x_mean_predicted`` = mean field + bias/N and ``x_mean_measured`` with its standard error
    ``x_mean_se``; the mean field ``x`` (step, feature). Summaries over the window:

    * ``x_std_ratio`` (n, feature): √(V/V̂) with V the measured variance averaged over the window's steps and
      V̂ the predicted one; its interval (``_ci_low``, ``_ci_high``) from the spread over paths of each path's
      mean square deviation q_j (paths are independent: V = mean_j q_j, se = sd_j(q_j)/√P, normal quantile);
    * ``x_error_mean_field``, ``x_error_corrected`` (n,): the path-averaged error of the mean field and of the
      bias-corrected prediction — the measured mean minus the prediction, averaged over the paths and over the
      window's steps of each phase of the mean-field cycle (period ``period`` attribute: the smallest multiple
      of L after which the mean-field records repeat within ``tol`` over the window; the window's length where
      they do not), then |·| averaged over phases and features; ``x_error_noise`` (n,) the
      sampling error of those phase means (same average of sd_j/√P);
    * ``separation`` (n, path): the first step at which a path's largest deviation from the mean field over
      the observables and features reaches ``threshold`` (NaN: never), and ``horizon`` (n,) the predicted one
      (:func:`predicted_horizon`).

    Attributes ``prediction_seconds`` and ``simulation_seconds`` (per size, JSON list) give the cost of each.

    Raises:
        InputError: naming the argument.
    """
    import json
    import time

    import scipy.stats

    from attnphys.dmft._api.finite import finite_trajectories
    from attnphys.dmft.finite import network_size

    o = options
    paths, steps, transient, start_step, record, seed = o.paths, o.steps, o.transient, o.start_step, o.record, o.seed
    threshold, tol, level, progress = o.threshold, o.tol, o.level, o.progress
    names = check_inputs(cfg, steps, transient, record)
    ns = [int(n) for n in sizes]
    if not ns or len(set(ns)) != len(ns):
        raise InputError(f"give distinct network sizes, got {ns}", "sizes")
    for n in ns:
        network_size(cfg, n)
    t0 = time.perf_counter()
    pred = fluctuations(cfg, steps=steps, transient=transient, record=names, start_step=start_step)
    t_pred = time.perf_counter() - t0
    M = cfg.M
    first = max(transient, start_step)
    T = steps - first
    z = float(scipy.stats.norm.ppf(0.5 + level / 2))
    mf = {k: pred[k].values for k in names}
    p = _period(np.concatenate([mf[k] for k in names], axis=1), cfg.L, tol)
    phase = np.arange(T) % p
    out: dict[str, list] = {}
    t_sim = []

    def put(key, value):
        out.setdefault(key, []).append(value)

    for n in ns:
        t0 = time.perf_counter()
        if start_step:
            fin = _paths_from(cfg, n, start_step=start_step, steps=steps, paths=paths, seed=seed, record=names)
            fin = {k: v[:, first - start_step :] for k, v in fin.items()}
        else:
            ds_n = finite_trajectories(
                cfg, n, paths=paths, steps=steps, transient=transient, seed=seed, record=names, progress=progress
            )
            fin = {k: ds_n[k].values for k in names}
        t_sim.append(time.perf_counter() - t0)
        dev_max = np.zeros((paths, T))
        for k in names:
            y = fin[k]  # (P, T, M)
            var_p = pred[f"{k}_var"].values / n
            mean_p = mf[k] + pred[f"{k}_bias"].values / n
            put(f"{k}_std_predicted", np.sqrt(var_p))
            put(f"{k}_std_measured", y.std(0, ddof=1))
            put(f"{k}_mean_measured", y.mean(0))
            put(f"{k}_mean_se", y.std(0, ddof=1) / np.sqrt(paths))
            put(f"{k}_mean_predicted", mean_p)
            q = np.mean((y - y.mean(0)) ** 2, axis=1) * paths / (paths - 1)  # (P, M)
            V, se, Vp = q.mean(0), q.std(0, ddof=1) / np.sqrt(paths), var_p.mean(0)
            put(f"{k}_std_ratio", np.sqrt(V / Vp))
            put(f"{k}_std_ratio_ci_low", np.sqrt(np.maximum(V - z * se, 0.0) / Vp))
            put(f"{k}_std_ratio_ci_high", np.sqrt((V + z * se) / Vp))
            e_mf, e_bc, e_nz = [], [], []
            for ph in range(p):
                sel = phase == ph
                r_mf = (y[:, sel] - mf[k][sel]).mean(1)  # (P, M): each path's mean deviation at this phase
                r_bc = (y[:, sel] - mean_p[sel]).mean(1)
                e_mf.append(np.abs(r_mf.mean(0)))
                e_bc.append(np.abs(r_bc.mean(0)))
                e_nz.append(r_bc.std(0, ddof=1) / np.sqrt(paths))
            put(f"{k}_error_mean_field", float(np.mean(e_mf)))
            put(f"{k}_error_corrected", float(np.mean(e_bc)))
            put(f"{k}_error_noise", float(np.mean(e_nz)))
            dev_max = np.maximum(dev_max, np.max(np.abs(y - mf[k]), axis=2))
        hit = dev_max >= threshold
        put("separation", np.where(hit.any(1), first + np.argmax(hit, axis=1), np.nan).astype(float))
        put("horizon", predicted_horizon(pred, n, threshold))
    dims = {
        "std_predicted": ("n", "step", "feature"),
        "std_measured": ("n", "step", "feature"),
        "mean_measured": ("n", "step", "feature"),
        "mean_se": ("n", "step", "feature"),
        "mean_predicted": ("n", "step", "feature"),
        "std_ratio": ("n", "feature"),
        "std_ratio_ci_low": ("n", "feature"),
        "std_ratio_ci_high": ("n", "feature"),
        "error_mean_field": ("n",),
        "error_corrected": ("n",),
        "error_noise": ("n",),
    }
    long = {
        "std_predicted": "predicted standard deviation",
        "std_measured": "standard deviation over the finite network's paths",
        "mean_measured": "mean over the finite network's paths",
        "mean_se": "standard error of the mean over paths",
        "mean_predicted": "mean field + predicted O(1/N) bias",
        "std_ratio": "measured / predicted standard deviation over the window",
        "std_ratio_ci_low": f"measured / predicted standard deviation, lower end of the {level:.0%} interval",
        "std_ratio_ci_high": f"measured / predicted standard deviation, upper end of the {level:.0%} interval",
        "error_mean_field": "path-averaged |measured mean - mean field| per phase, averaged",
        "error_corrected": "path-averaged |measured mean - (mean field + bias/N)| per phase, averaged",
        "error_noise": "sampling error of the path-averaged phase means",
    }
    data: dict = {}
    for k in names:
        data[k] = (("step", "feature"), mf[k], {"long_name": f"{k}: mean-field value"})
        for suffix, d in dims.items():
            data[f"{k}_{suffix}"] = (d, np.asarray(out[f"{k}_{suffix}"]), {"long_name": f"{k}: {long[suffix]}"})
    data["separation"] = (
        ("n", "path"),
        np.asarray(out["separation"]),
        {"long_name": f"first step with a deviation from the mean field >= {threshold}"},
    )
    data["horizon"] = (
        ("n",),
        np.asarray(out["horizon"]),
        {"long_name": f"predicted horizon (spread/sqrt(N) >= {threshold})"},
    )
    attrs = {k: v for k, v in pred.attrs.items() if k not in ("prediction", "mode", "analysis")}
    attrs.update(
        analysis="fluctuations-comparison",
        paths=int(paths),
        seed=int(seed),
        threshold=float(threshold),
        start_step=int(start_step),
        period=int(p),
        prediction_seconds=float(t_pred),
        simulation_seconds=json.dumps([float(s) for s in t_sim]),
    )
    return xr.Dataset(
        data,
        coords={
            "n": ("n", np.asarray(ns), {"long_name": "network size N (semantic bits)"}),
            "step": ("step", np.arange(first, steps)),
            "feature": ("feature", np.arange(M)),
            "path": ("path", np.arange(paths)),
        },
        attrs=attrs,
    )

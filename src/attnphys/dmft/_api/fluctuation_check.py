"""Prediction against measurement: the finite network over many paths beside the system-size expansion
(theory: docs/theory/fluctuations.md §4–§5)."""

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

FALSE_ALARM = 1e-6
"""The largest chance, per network size, that a run whose every path follows the predicted Gaussian has a
step of a path flagged beyond k predicted standard deviations (:func:`outlier_sigmas`; theory:
docs/theory/fluctuations.md §5)."""

WINDOW_TOKENS = 4
"""A path has left the attractor when it is beyond k predicted standard deviations on more than half of
``WINDOW_TOKENS`` × L consecutive steps (L: the attention window; :func:`left_steps`)."""

ROUNDOFF = 1e-12
"""Deviations up to this size count as none: a record the expansion predicts deterministic (variance 0)
agrees with the finite network's only to round-off."""


def outlier_sigmas(checks: int, false_alarm: float = FALSE_ALARM) -> float:
    """The k with ``checks`` · P(|Z| > k) = ``false_alarm`` for a standard normal Z (theory:
    docs/theory/fluctuations.md §5). By the union bound, the chance that any of ``checks`` Gaussian deviations
    (paths × steps × recorded features, however correlated) exceeds k of its standard deviations is at most
    ``false_alarm``."""
    import scipy.stats

    return float(scipy.stats.norm.isf(false_alarm / (2.0 * max(int(checks), 1))))


def left_steps(beyond: np.ndarray, window: int) -> np.ndarray:
    """(P,) the index (into the window of steps) at which each path left the attractor, −1 where it did not
    (theory: docs/theory/fluctuations.md §5).

    ``beyond`` (P, T) marks the steps at which a path is beyond k predicted standard deviations. A path has
    left when some ``window`` consecutive steps (all T when fewer) hold more than ``window``/2 such steps; it
    left at its first step beyond k at or after the start of the first such run. Briefer excursions (one
    unusual token, gone from the attention window after L steps) do not count."""
    P, T = beyond.shape
    W = max(1, min(int(window), T))
    c = np.concatenate([np.zeros((P, 1), np.int64), np.cumsum(beyond, axis=1)], axis=1)
    off = (c[:, W:] - c[:, :-W]) > W / 2  # (P, T - W + 1): window [s, s + W) mostly beyond
    start = np.argmax(off, axis=1)
    idx = np.arange(T)
    first = np.where(beyond & (idx[None, :] >= start[:, None]), idx[None, :], T).min(axis=1)
    return np.where(off.any(axis=1), first, -1)


def _beyond(fin: dict[str, np.ndarray], centre: dict, sd: dict, k: float) -> np.ndarray:
    """(P, T): whether a path is beyond k predicted standard deviations of the predicted mean at a step, in
    any record and feature (a non-finite predicted deviation, past the horizon, flags nothing)."""
    out = None
    for name, y in fin.items():
        with np.errstate(invalid="ignore"):
            b = (np.abs(y - centre[name]) > k * sd[name] + ROUNDOFF).any(axis=2)
        out = b if out is None else out | b
    assert out is not None
    return out


def _path_list(idx: np.ndarray, steps: np.ndarray, most: int = 8) -> str:
    """``path 669 at step 9``, ``paths 3 (step 40), 8 (step 12) and 5 more``."""
    pairs = [f"{int(i)} (step {int(s)})" for i, s in zip(idx[:most], steps[:most], strict=True)]
    if idx.size == 1:
        return f"path {int(idx[0])} at step {int(steps[0])}"
    more = f" and {idx.size - most} more" if idx.size > most else ""
    return "paths " + ", ".join(pairs) + more


def validity_line(
    *, paths: int, left: np.ndarray, left_at: np.ndarray, excursions: int, k: float, window: int, horizon: float
) -> tuple[bool, str]:
    """Whether the expansion describes the run at one size, and the sentence that says so (theory:
    docs/theory/fluctuations.md §5): it holds when no path left the attractor and the predicted spread stays
    below the threshold over the window (no horizon within it)."""
    s = int(left.size)
    rest = paths - s
    parts = []
    if s:
        head = f"does not hold for {s} of {paths} paths" if rest >= 2 else f"does not hold: {s} of {paths} paths"
        parts.append(
            f"{head}, which left the attractor (beyond {k:.2f} predicted std on more than half of {window} "
            f"consecutive steps): {_path_list(left, left_at)}; "
            + (f"compared on the other {rest}" if rest >= 2 else "too few paths remain to compare")
        )
    if np.isfinite(horizon):
        reach = (
            f"the predicted spread reaches the threshold at step {horizon:g}, past which no single path is described"
        )
        parts.append(("and " if s else "does not hold: ") + reach)
    holds = not parts
    if holds:
        parts.append("holds" + ("" if excursions else f": every path within {k:.2f} predicted std at every step"))
    if excursions:
        parts.append(f"{excursions} paths made brief excursions beyond {k:.2f} predicted std and are kept")
    return holds, "; ".join(parts)


def _attribute_int(v: int) -> int | float:
    """An integer attribute as the NetCDF-3 format can hold it: int32 where it fits, float64 otherwise (exact
    below 2^53: a seed up to 2^32 − 1)."""
    return int(v) if -(2**31) <= int(v) < 2**31 else float(v)


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


def _compare_size(
    pred: xr.Dataset,
    fin: dict[str, np.ndarray],
    n: int,
    *,
    period: int,
    z: float,
    k: float,
    window: int,
    threshold: float,
) -> dict:
    """The comparison at one size N = ``n`` (theory: docs/theory/fluctuations.md §5): the paths ``fin``
    (name → (P, T, M), the window's steps) against the prediction ``pred`` (:func:`fluctuations` over the same
    steps). Paths that left the attractor (:func:`left_steps`, beyond ``k`` predicted standard deviations of
    the predicted mean, mean field + bias/N, judged at the steps before the predicted horizon) are reported
    apart and every summary is over the others. Returns
    key → value, the keys of :func:`compare_fluctuations`'s variables without the size axis."""
    names = list(fin)
    steps = pred["step"].values
    P, T = next(iter(fin.values())).shape[:2]
    mf = {x: pred[x].values for x in names}
    var_p = {x: pred[f"{x}_var"].values / n for x in names}
    mean_p = {x: mf[x] + pred[f"{x}_bias"].values / n for x in names}
    with np.errstate(invalid="ignore"):
        sd_p = {x: np.sqrt(var_p[x]) for x in names}
    horizon = predicted_horizon(pred, n, threshold)
    beyond = _beyond(fin, mean_p, sd_p, k)
    beyond[:, steps >= horizon] = False  # past the horizon the expansion describes no single path (§4)
    left = left_steps(beyond, window)
    keep = left < 0
    kept = int(keep.sum())
    out: dict = {
        "left_step": np.where(keep, np.nan, steps[np.maximum(left, 0)]).astype(float),
        "excursion_step": np.where(beyond.any(1), steps[np.argmax(beyond, axis=1)], np.nan).astype(float),
        "paths_compared": kept,
    }
    phase = np.arange(T) % period
    with np.errstate(invalid="ignore", divide="ignore"):
        dev_max = np.zeros((P, T))
        for x in names:
            dev_max = np.maximum(dev_max, np.max(np.abs(fin[x] - mf[x]), axis=2))
            y = fin[x][keep] if kept >= 2 else np.full((2, *fin[x].shape[1:]), np.nan)  # (P', T, M)
            Pk = y.shape[0]
            out[f"{x}_std_predicted"] = sd_p[x]
            out[f"{x}_std_measured"] = y.std(0, ddof=1)
            out[f"{x}_mean_measured"] = y.mean(0)
            out[f"{x}_mean_se"] = y.std(0, ddof=1) / np.sqrt(Pk)
            out[f"{x}_mean_predicted"] = mean_p[x]
            q = np.mean((y - y.mean(0)) ** 2, axis=1) * Pk / (Pk - 1)  # (P', M): each path's mean square
            V, se, Vp = q.mean(0), q.std(0, ddof=1) / np.sqrt(Pk), var_p[x].mean(0)
            out[f"{x}_std_ratio"] = np.sqrt(V / Vp)
            out[f"{x}_std_ratio_ci_low"] = np.sqrt(np.maximum(V - z * se, 0.0) / Vp)
            out[f"{x}_std_ratio_ci_high"] = np.sqrt((V + z * se) / Vp)
            e_mf, e_bc, e_nz = [], [], []
            for ph in range(period):
                sel = phase == ph
                r_mf = (y[:, sel] - mf[x][sel]).mean(1)  # (P', M): each path's mean deviation at this phase
                r_bc = (y[:, sel] - mean_p[x][sel]).mean(1)
                e_mf.append(np.abs(r_mf.mean(0)))
                e_bc.append(np.abs(r_bc.mean(0)))
                e_nz.append(r_bc.std(0, ddof=1) / np.sqrt(Pk))
            out[f"{x}_error_mean_field"] = float(np.mean(e_mf))
            out[f"{x}_error_corrected"] = float(np.mean(e_bc))
            out[f"{x}_error_noise"] = float(np.mean(e_nz))
    hit = dev_max >= threshold
    out["separation"] = np.where(hit.any(1), steps[np.argmax(hit, axis=1)], np.nan).astype(float)
    out["horizon"] = horizon
    gone = np.flatnonzero(~keep)
    holds, line = validity_line(
        paths=P,
        left=gone,
        left_at=steps[left[gone]],
        excursions=int((beyond.any(1) & keep).sum()),
        k=k,
        window=window,
        horizon=out["horizon"],
    )
    out["expansion_holds"] = holds
    out["validity"] = line
    return out


def _sizes(sizes) -> list[int]:
    """The sizes of :func:`compare_fluctuations`, checked as the argument ``sizes``: distinct integers."""
    try:
        ns = list(sizes)
    except TypeError:
        raise InputError(f"give a sequence of network sizes, got {sizes!r}", "sizes") from None
    bad = [n for n in ns if isinstance(n, bool) or not isinstance(n, (int, np.integer))]
    if bad:
        raise InputError(f"network sizes are integers, got {bad[0]!r}", "sizes")
    ns = [int(n) for n in ns]
    if not ns or len(set(ns)) != len(ns):
        raise InputError(f"give distinct network sizes, got {ns}", "sizes")
    return ns


@takes(CompareFluctuationsOptions)
def compare_fluctuations(cfg, sizes: Sequence[int], *, options: CompareFluctuationsOptions) -> xr.Dataset:
    """The predicted fluctuations (:func:`fluctuations`, paths from the first token) beside the finite
    network's (:func:`~attnphys.dmft.finite_trajectories`, ``paths`` paths at every size), over the steps
    ``transient`` … ``steps`` − 1 (theory: docs/theory/fluctuations.md §5). With ``start_step`` > 0 both start at
    that loop step from the mean-field state there (on the attractor after a transient), the paths stepped by
    the finite network's own step, and the window begins at max(``transient``, ``start_step``).

    **Paths that left the attractor** are reported apart and left out of every summary: a path is off when it
    is beyond k predicted standard deviations of the predicted mean (mean field + bias/N) in some record and
    feature on more than half of 4L consecutive steps before the predicted horizon, with k such that
    P·T·F·P(|Z| > k) = 10⁻⁶ (P paths, T steps, F recorded features: at most that chance, per size, of
    flagging anything in a run of Gaussian paths). ``left_step`` (n, path) is the step it left (NaN: it did
    not), ``excursion_step`` (n, path) its first step beyond k (briefer excursions are kept);
    ``paths_compared`` (n,) the paths the summaries use; ``expansion_holds`` (n,) whether no path left and
    the predicted spread stays below ``threshold`` over the window, and ``validity`` (n,) the sentence that
    says so. Attributes ``outlier_sigmas`` (k), ``outlier_window`` (4L) and ``outlier_false_alarm``.

    Per observable ``x``, size ``n``, step and feature: ``x_std_predicted`` = √(var/N) and ``x_std_measured``
    (over the paths compared); ``x_mean_predicted`` = mean field + bias/N and ``x_mean_measured`` with its
    standard error ``x_mean_se``; the mean field ``x`` (step, feature). Summaries over the window:

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
      the observables and features reaches ``threshold`` (NaN: never; every path), and ``horizon`` (n,) the
      predicted one (:func:`predicted_horizon`; NaN: not within the window).

    Fewer than two paths left to compare at a size leave its summaries NaN. Attributes
    ``prediction_seconds`` and ``simulation_seconds`` (per size, JSON list) give the cost of each.

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
    ns = _sizes(sizes)
    for n in ns:
        try:
            network_size(cfg, n)
        except InputError as e:  # the check names the command's option; a library call names its argument
            raise InputError(e.detail, "sizes") from None
    t0 = time.perf_counter()
    pred = fluctuations(cfg, steps=steps, transient=transient, record=names, start_step=start_step)
    t_pred = time.perf_counter() - t0
    M = cfg.M
    first = max(transient, start_step)
    T = steps - first
    z = float(scipy.stats.norm.ppf(0.5 + level / 2))
    p = _period(np.concatenate([pred[x].values for x in names], axis=1), cfg.L, tol)
    k = outlier_sigmas(paths * T * len(names) * M)
    window = WINDOW_TOKENS * cfg.L
    out: dict[str, list] = {}
    t_sim = []
    for n in ns:
        t0 = time.perf_counter()
        if start_step:
            fin = _paths_from(cfg, n, start_step=start_step, steps=steps, paths=paths, seed=seed, record=names)
            fin = {x: v[:, first - start_step :] for x, v in fin.items()}
        else:
            ds_n = finite_trajectories(
                cfg, n, paths=paths, steps=steps, transient=transient, seed=seed, record=names, progress=progress
            )
            fin = {x: ds_n[x].values for x in names}
        t_sim.append(time.perf_counter() - t0)
        for key, value in _compare_size(pred, fin, n, period=p, z=z, k=k, window=window, threshold=threshold).items():
            out.setdefault(key, []).append(value)
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
        "std_measured": "standard deviation over the finite network's paths compared",
        "mean_measured": "mean over the finite network's paths compared",
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
    for x in names:
        data[x] = (("step", "feature"), pred[x].values, {"long_name": f"{x}: mean-field value"})
        for suffix, d in dims.items():
            data[f"{x}_{suffix}"] = (d, np.asarray(out[f"{x}_{suffix}"]), {"long_name": f"{x}: {long[suffix]}"})
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
    data["left_step"] = (
        ("n", "path"),
        np.asarray(out["left_step"]),
        {"long_name": f"step the path left the attractor (beyond {k:.2f} predicted std on most of {window} steps)"},
    )
    data["excursion_step"] = (
        ("n", "path"),
        np.asarray(out["excursion_step"]),
        {"long_name": f"first step beyond {k:.2f} predicted std of the predicted mean"},
    )
    data["paths_compared"] = (
        ("n",),
        np.asarray(out["paths_compared"], np.int32),
        {"long_name": "paths the summaries use (those that stayed on the attractor)"},
    )
    data["expansion_holds"] = (
        ("n",),
        np.asarray(out["expansion_holds"], bool),
        {"long_name": "no path left the attractor and no predicted horizon within the window"},
    )
    data["validity"] = (("n",), np.asarray(out["validity"], dtype=str), {"long_name": "validity of the expansion"})
    attrs = {x: v for x, v in pred.attrs.items() if x not in ("prediction", "mode", "analysis")}
    attrs.update(
        analysis="fluctuations-comparison",
        paths=int(paths),
        seed=_attribute_int(seed),
        threshold=float(threshold),
        start_step=int(start_step),
        period=int(p),
        outlier_sigmas=float(k),
        outlier_window=int(window),
        outlier_false_alarm=float(FALSE_ALARM),
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

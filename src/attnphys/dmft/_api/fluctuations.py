"""The finite-size theory of the network: its predicted fluctuations around the mean field, and the same
measured on the finite network (theory: docs/theory/fluctuations.md)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys._options import takes
from attnphys.dmft._analysis_options import FluctuationsOptions
from attnphys.errors import InputError

LONG = {
    "mean": "mean-field value",
    "bias": "N x the O(1/N) bias of the mean (predicted)",
    "var": "N x the variance (predicted)",
    "cov": "N x the covariance between features (predicted)",
}


def check_inputs(cfg, steps: int, transient: int, record):
    from attnphys.dmft.finite import check_finite_model, check_finite_record, finite_observables

    try:
        check_finite_model(cfg)
    except ValueError as e:
        raise InputError(str(e), "cfg") from None
    if not isinstance(transient, (int, np.integer)) or not 0 <= transient < steps:
        raise InputError(f"must be an integer in [0, steps) = [0, {steps}), got {transient!r}", "transient")
    try:
        return tuple(finite_observables() if record is None else check_finite_record(tuple(record)))
    except ValueError as e:
        raise InputError(str(e), "record") from None


def check_moments_fit(cfg, steps: int, names: tuple[str, ...]) -> None:
    """Refuse a path prediction whose kept moments cannot fit in memory (:func:`attnphys.errors.check_fits`,
    naming ``steps``): per step the mean and the bias of the K·M recorded features, their (K·M)² covariance
    and the D = M(2L + 5) state, in float64, twice over (the computed blocks and their concatenation)
    (theory: docs/theory/fluctuations.md §2)."""
    from attnphys.errors import check_fits

    F = len(names) * cfg.M
    need = 2.0 * 8.0 * steps * (2 * F + F * F + cfg.M * (2 * cfg.L + 5))
    check_fits(need, f"the predicted moments of {steps:,} steps", "lower `steps`", "steps")


def linear_noise_setup(cfg):

    from attnphys.dmft import _linear_noise as ln
    from attnphys.dmft.finite import repeated_network
    from attnphys.dmft.model import DMFTModel

    try:
        net = repeated_network(cfg, cfg.n_se)
    except ValueError as e:  # correlations without explicit weights have no finite network
        raise InputError(str(e), "cfg") from None
    model = DMFTModel.of(cfg)
    sc = jax.tree_util.tree_map(lambda a: a[0], model.scalars(n=1))
    return model, sc, ln.network_of(net)


@takes(FluctuationsOptions)
def fluctuations(cfg, *, options: FluctuationsOptions) -> xr.Dataset:
    """The predicted mean, O(1/N) bias and covariance of the finite network's records, from the system-size
    (linear-noise) expansion around the mean-field orbit (theory: docs/theory/fluctuations.md §1–§3)::

        Σ_{t+1} = J_t Σ_t J_tᵀ + B_t D(A_t) B_tᵀ,   β_{t+1} = J_t β_t + ½ ∂²_x F : Σ_t + ½ ∂²_ξ F : D(A_t),

    for the state x of the finite network (attention output, the window's value and key overlaps, the newest
    token's semantic overlaps), with D(A) the exact per-step covariance of the binomial class sums. The
    covariance of a record at size N is ``var``/N (``cov``/N between features), its mean ``mean`` + ``bias``/N.
    Every number is N-free: one prediction serves every size.

    Two modes:

    * ``stationary=False`` (paths): the expansion along the run from the first token (the finite network's
      start), steps ``transient`` … ``steps`` − 1 kept. In a chaotic regime the variance grows like
      e^{2λ₁t}: the prediction holds while the standard deviation is small against the attractor
      (:func:`predicted_horizon`). With ``start_step`` > 0 the paths start at loop step ``start_step`` from the
      mean-field state there (Σ = 0, e.g. on the attractor) instead of the first token; records are kept from
      max(``transient``, ``start_step``);
    * ``stationary=True``: the mean-field orbit after ``transient`` steps must be periodic (a fixed point is a
      cycle of period L, the positional code's); the stationary covariance and bias on the cycle, phase by
      phase, from the discrete Lyapunov equation on its monodromy (§3). ``step`` then holds one period.

    Args:
        cfg: a configuration of the paper's network (:class:`~attnphys.dmft.DMFTConfig` with explicit weights:
            segments or random correlations). record: observables (default: all the finite network has).
        tol: largest difference of the state after one period for the orbit to count as periodic.
        max_period: the longest period looked for (stationary mode).

    Returns:
        Dataset over (step, feature[, feature_b]) with, per observable ``x``: ``x`` (the mean field),
        ``x_bias``, ``x_var``, ``x_cov``; ``spread`` (step) the largest predicted standard deviation times √N;
        attributes ``prediction`` (``paths`` or ``stationary``; named so that no NetCDF writer's own name is
        shadowed), in stationary mode ``period`` and ``spectral_radius`` (of the monodromy), and
        ``first_nonfinite_step`` where the covariance overflowed (a chaotic orbit, long past the horizon).

    Raises:
        InputError: naming the argument (a configuration without a finite network, bad steps, an observable the
            finite network lacks, no periodic orbit in stationary mode).
    """
    from attnphys.progress import step_bar

    names = check_inputs(cfg, options.steps, options.transient, options.record)
    if not options.stationary:
        check_moments_fit(cfg, options.steps, names)
    with step_bar(1.0, "expansion", enabled=options.progress):
        return _fluctuations(cfg, names, options)


def _fluctuations(cfg, names: tuple[str, ...], o: FluctuationsOptions) -> xr.Dataset:
    """:func:`fluctuations` for checked inputs (``names``: the observables predicted)."""
    from attnphys.dmft import _linear_noise as ln
    from attnphys.metadata import base_attrs

    steps, transient, stationary, start_step = o.steps, o.transient, o.stationary, o.start_step
    tol, max_period = o.tol, o.max_period

    model, sc, net = linear_noise_setup(cfg)
    L, M = cfg.L, cfg.M
    x0 = ln.initial(net, sc, L, M)
    extra: dict = {}
    if not isinstance(start_step, (int, np.integer)) or not 0 <= start_step < steps:
        raise InputError(f"must be an integer in [0, steps) = [0, {steps}), got {start_step!r}", "start_step")
    start_step = int(start_step)
    if not (isinstance(max_period, (int, np.integer)) and max_period >= cfg.L):
        raise InputError(f"must be an integer >= L = {cfg.L}, got {max_period!r}", "max_period")
    if stationary and start_step:
        raise InputError("a stationary prediction has no start; give start_step=0 or stationary=False", "start_step")
    if not stationary:
        if start_step:
            x0 = jnp.asarray(ln.orbit(net, sc, x0, steps=start_step, L=L, M=M)[-1])
        out = ln.run(
            net, sc, x0, steps=steps - start_step, L=L, M=M, names=names, convention=model.convention, t0=start_step
        )
        first = max(transient, start_step)
        mean, bias, cov = (np.asarray(out[k])[first - start_step :] for k in ("mean", "bias", "cov"))
        ts = np.arange(first, steps)
        extra = {"start_step": int(start_step)}
    else:
        xs = np.asarray(ln.orbit(net, sc, x0, steps=transient + 2 * max_period + 1, L=L, M=M))
        late = xs[transient:]
        p = next(
            (q for q in range(L, max_period + 1, L) if np.max(np.abs(late[q : 2 * q + 1] - late[: q + 1])) <= tol),
            None,
        )
        if p is None:
            raise InputError(
                f"the mean-field orbit is not periodic (period <= {max_period}, multiple of L = {L}, tolerance "
                f"{tol}) after {transient} steps: use a longer transient, or stationary=False",
                "stationary",
            )
        ts = np.arange(transient, transient + p)
        ms = ln.cycle_moments(net, sc, jnp.asarray(xs[ts - 1]), jnp.asarray(ts), L=L, M=M)
        try:
            Sig = ln.stationary_covariance(ms.J, ms.Q)
        except ValueError as e:
            raise InputError(str(e), "stationary") from None
        r = np.asarray(
            ln.cycle_curvature(net, sc, jnp.asarray(xs[ts - 1]), jnp.asarray(ts), jnp.asarray(Sig[:-1]), L=L, M=M)
        )
        bet = ln.stationary_bias(ms.J, r + np.asarray(ms.s_xi))
        rm = [
            ln.record_moments(
                net,
                sc,
                jnp.asarray(xs[t]),
                jnp.asarray(Sig[k + 1]),
                jnp.asarray(bet[k + 1]),
                jnp.asarray(t),
                L,
                M,
                names,
                model.convention,
            )
            for k, t in enumerate(ts)
        ]
        mean, bias, cov = (np.stack([np.asarray(r[i]) for r in rm]) for i in range(3))
        Phi = ln.monodromy(ms.J)
        extra = dict(period=int(p), spectral_radius=float(np.max(np.abs(np.linalg.eigvals(Phi)))))
    K = len(names)
    T = ts.size
    cov = cov.reshape(T, K, M, K, M)
    data = {}
    for i, k in enumerate(names):
        data[k] = (("step", "feature"), mean[:, i], {"long_name": f"{k}: {LONG['mean']}"})
        data[f"{k}_bias"] = (("step", "feature"), bias[:, i], {"long_name": f"{k}: {LONG['bias']}"})
        c = cov[:, i, :, i, :]
        data[f"{k}_var"] = (("step", "feature"), np.diagonal(c, axis1=1, axis2=2), {"long_name": f"{k}: {LONG['var']}"})
        data[f"{k}_cov"] = (("step", "feature", "feature_b"), c, {"long_name": f"{k}: {LONG['cov']}"})
    var_all = np.diagonal(cov.reshape(T, K * M, K * M), axis1=1, axis2=2)
    with np.errstate(over="ignore", invalid="ignore"):
        data["spread"] = (
            ("step",),
            np.sqrt(np.max(var_all, axis=1)),
            {"long_name": "largest predicted standard deviation of a record, times sqrt(N)"},
        )
    bad = ~np.all(np.isfinite(var_all), axis=1)
    if bad.any():  # a chaotic orbit's covariance overflows long after the expansion stopped holding
        extra["first_nonfinite_step"] = int(ts[np.argmax(bad)])
    return xr.Dataset(
        data,
        coords={"step": ("step", ts), "feature": ("feature", np.arange(M)), "feature_b": ("feature_b", np.arange(M))},
        attrs=base_attrs(
            cfg,
            analysis="fluctuations",
            prediction="stationary" if stationary else "paths",
            start="token",
            mo_se_convention=model.convention,
            **extra,
        ),
    )


def predicted_horizon(ds: xr.Dataset, n: int, threshold: float = 0.1) -> float:
    """The first step at which the largest predicted standard deviation of a record, ``spread``/√N, reaches
    ``threshold``: where the expansion stops describing single paths (theory: docs/theory/fluctuations.md §4).
    With growth at the leading exponent λ₁ it is ≈ (log N + 2 log threshold − log c)/(2λ₁). NaN if never
    reached within the dataset's steps."""
    s = ds["spread"].values / np.sqrt(float(n))
    hit = np.flatnonzero(~(s < threshold))
    return float(ds["step"].values[hit[0]]) if hit.size else float("nan")


def rms_prefactor(cfg, *, horizon: int, observable: str = "mo_se") -> float:
    """The predicted prefactor c of the convergence law rms_deviation ≈ c N^{-1/2} of
    :func:`~attnphys.dmft.converge` (theory: docs/theory/fluctuations.md §5): c² is the predicted variance
    (times N) of ``observable`` averaged over the first ``horizon`` steps and the features; the bias adds only
    O(1/N²) to the mean square. Beyond the validity horizon (chaotic regimes) c keeps growing with the horizon
    and no longer describes the paths."""
    pred = fluctuations(cfg, steps=horizon, record=(observable,))
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.sqrt(np.mean(pred[f"{observable}_var"].values)))


def with_rms_prefactor(ds: xr.Dataset, cfg, *, horizon: int, observable: str) -> xr.Dataset:
    """A convergence dataset with ``rms_prefactor_predicted`` (sweep…) from :func:`rms_prefactor` at every grid
    point and ``rms_predicted`` (sweep…, n) = prefactor/√N beside the measured ``rms_deviation`` (theory:
    docs/theory/fluctuations.md §5)."""
    import itertools

    others = [d for d in ds.rms_deviation.dims if d != "n"]
    shape = [ds.sizes[d] for d in others]
    c = np.empty(shape if shape else ())
    for idx in itertools.product(*(range(s) for s in shape)):
        point = cfg
        for d, i in zip(others, idx, strict=True):
            v = ds[d].values[i]
            point = point.with_field(d, v.item() if hasattr(v, "item") else v)
        c[idx] = rms_prefactor(point, horizon=horizon, observable=observable)
    ds["rms_prefactor_predicted"] = (
        others,
        c,
        {
            "long_name": f"predicted prefactor c of rms_deviation = c N^-1/2 (system-size expansion, first {horizon} steps)"
        },
    )
    ds["rms_predicted"] = (
        others + ["n"],
        c[..., None] / np.sqrt(ds["n"].values.astype(float)),
        {"long_name": "predicted rms_deviation, c N^-1/2"},
    )
    return ds

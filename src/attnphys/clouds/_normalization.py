"""Normalization placements as a change of speed of the same flow, on an equiangular cloud (theory:
docs/theory/particles.md §11).

Tokens x_i = r u_i (u_i unit, pairwise cosine ρ, common norm r by symmetry); A is SA or USA with identity
weights evaluated on the directions u. The placements:

* ``post``: the tokens stay on the sphere, ẋ_i = Π_i A_i (r ≡ 1): ρ' = F(ρ);
* ``pre``: the residual stream is not normalized, ẋ_i = A_i: ρ' = F(ρ)/r, r' = ⟨u_i, A_i⟩;
* ``peri``: the sublayer output is normalized too, ẋ_i = A_i/‖A_i‖: ρ' = F(ρ)/(r a), r' = ⟨u_i, A_i⟩/a;
* ``ngpt``: on the sphere, moved toward the normalized output with a step α, ẋ_i = α Π_i A_i/‖A_i‖:
  ρ' = α F(ρ)/a, r ≡ 1;
* ``mix``: ``post`` until the switch time t_s, ``pre`` afterwards (Mix-LN: Post-LN in the first layers);
* ``sqrt``: ``pre`` with the update scaled by 1/√(1 + t) (the residual branch damped with depth):
  ρ' = F(ρ)/(r √(1 + t)), r' = ⟨u_i, A_i⟩/√(1 + t),

with F(ρ) = 2p(1 − ρ)(1 + (n − 1)ρ) (§8.1) and a = ‖A_i‖. Near collapse r grows linearly for ``pre``,
``peri`` and ``mix``, so 1 − ρ decays as the power t^{−2} instead of the exponential e^{−2t} of ``post`` (SA);
``ngpt`` decays as e^{−2αt} for SA and USA alike; ``sqrt`` grows r as 2√t, so 1 − ρ decays as t^{−1}.
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys.clouds._inputs import choice, count, fits_blaming, flag, number, precision_noted, tolerances
from attnphys.errors import InputError

PLACEMENTS = ("post", "pre", "peri", "ngpt", "mix", "sqrt")
"""The normalization placements of §11: on the sphere (Post-LN), before the sublayer only (Pre-LN), before
and after it (Peri-LN), on the sphere with a normalized step (nGPT-style), Post-LN then Pre-LN (Mix-LN), and
Pre-LN with the update damped by 1/√(1 + t) (√-scaling)."""

Placement = Literal["post", "pre", "peri", "ngpt", "mix", "sqrt"]


def _weights(rho, beta, n, dynamics):
    if dynamics == "sa":
        q = 1.0 / (1.0 + (n - 1) * jnp.exp(-beta * (1.0 - rho)))
        return q, q * jnp.exp(-beta * (1.0 - rho))
    return jnp.exp(beta) / n, jnp.exp(beta * rho) / n


def reduced_field(y, beta, n: int, placement: str, dynamics: str, t=0.0, alpha: float = 1.0, switch: float = 2.0):
    """(g', r') of the equiangular cloud y = (g, r), g = 1 − ρ, under a placement at time t (theory:
    docs/theory/particles.md §11.1); the state is the gap, so that the solver's relative tolerance holds for
    it down to the smallest gaps. ``alpha``: the step of ``ngpt``; ``switch``: t_s of ``mix``."""
    g, r = y[0], y[1]
    rho = 1.0 - g
    q, p = _weights(rho, beta, n, dynamics)
    F = -2 * p * g * (1 + (n - 1) * rho)
    radial = q + (n - 1) * p * rho  # ⟨u_i, A_i⟩
    zero = jnp.zeros_like(r)
    if placement == "post":
        return jnp.stack([F, zero])
    if placement == "pre":
        return jnp.stack([F / r, radial])
    if placement == "mix":
        after = t >= switch
        return jnp.stack([jnp.where(after, F / r, F), jnp.where(after, radial, zero)])
    if placement == "sqrt":
        damp = 1.0 / jnp.sqrt(1.0 + t)
        return jnp.stack([damp * F / r, damp * radial])
    a = jnp.sqrt(q**2 + 2 * q * (n - 1) * p * rho + (n - 1) * p**2 * (1 + (n - 2) * rho))
    if placement == "ngpt":
        return jnp.stack([alpha * F / a, zero])
    return jnp.stack([F / (r * a), radial / a])


def placed_velocity(attn, X: jax.Array, placement: str, t=0.0, alpha: float = 1.0, switch: float = 2.0) -> jax.Array:
    """ẋ of the n-token flow under a placement at time t (theory: docs/theory/particles.md §11.1): A evaluated
    on the directions X/‖X‖; ``post`` projects on the sphere, ``pre`` adds A, ``peri`` adds A/‖A‖ (per token),
    ``ngpt`` projects α A/‖A‖ on the sphere, ``mix`` is ``post`` before ``switch`` and ``pre`` after, ``sqrt``
    adds A/√(1 + t).

    Args:
        attn: the attention operator. X: (N, D) tokens.
    """
    U = X / jnp.linalg.norm(X, axis=-1, keepdims=True)
    A = attn(U)

    def project(V):
        return V - jnp.sum(V * X, -1, keepdims=True) / jnp.sum(X * X, -1, keepdims=True) * X

    if placement == "post":
        return project(A)
    if placement == "pre":
        return A
    if placement == "mix":
        return jnp.where(t >= switch, A, project(A))
    if placement == "sqrt":
        return A / jnp.sqrt(1.0 + t)
    An = A / jnp.linalg.norm(A, axis=-1, keepdims=True)
    return alpha * project(An) if placement == "ngpt" else An


def _solve(field, y0, ts, args, rtol, atol):
    import diffrax

    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(field),
        diffrax.Tsit5(),
        float(ts[0]),
        float(ts[-1]),
        None,
        y0,
        args=args,
        saveat=diffrax.SaveAt(ts=jnp.asarray(ts)),
        stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
        max_steps=1_000_000,
    )
    return np.asarray(sol.ys)


def fit_decay(t: np.ndarray, gap: np.ndarray, law: str) -> tuple[float, float]:
    """Least-squares slope of log(1 − ρ) against t (``exponential``: the rate) or log t (``power``: the
    exponent), negated, with the half-width of its 95 % interval (theory: docs/theory/particles.md §11.2),
    by :func:`scipy.stats.linregress`."""
    from scipy.stats import linregress
    from scipy.stats import t as student

    x = t if law == "exponential" else np.log(t)
    fit = linregress(x, np.log(gap))
    half = float(student.ppf(0.975, len(x) - 2) * fit.stderr)  # pyright: ignore[reportAttributeAccessIssue]
    return -float(fit.slope), half  # pyright: ignore[reportAttributeAccessIssue]


LAWS = {"post": "exponential", "pre": "power", "peri": "power", "ngpt": "exponential", "mix": "power", "sqrt": "power"}
"""The decay law of 1 − ρ near collapse, per placement."""


def predicted_decay(placement: str, beta: float, dynamics: str = "sa", alpha: float = 1.0) -> float:
    """The predicted rate (exponential laws) or exponent (power laws) of 1 − ρ near collapse (theory:
    docs/theory/particles.md §11.2): ``post`` 2 (SA) or 2e^β (USA); ``ngpt`` 2α; ``pre``, ``peri``, ``mix`` 2;
    ``sqrt`` 1."""
    if placement == "post":
        return 2.0 if dynamics == "sa" else 2.0 * float(np.exp(beta))
    if placement == "ngpt":
        return 2.0 * alpha
    return 1.0 if placement == "sqrt" else 2.0


def normalization_decay(
    beta: float = 1.0,
    *,
    tokens: int = 6,
    rho0: float = 0.0,
    t_max: float = 200.0,
    saves: int = 401,
    dynamics: Literal["sa", "usa"] = "sa",
    fit_range: tuple[float, float] = (1e-10, 1e-3),
    alpha: float = 1.0,
    switch: float = 2.0,
    spacing: Literal["linear", "log"] = "linear",
    simulate: bool = True,
    rtol: float = 1e-10,
    atol: float = 1e-14,
) -> xr.Dataset:
    """The collapse 1 − ρ(t) of an equiangular cloud under each normalization placement (``post``, ``pre``,
    ``peri``; theory: docs/theory/particles.md §11), from the reduced (ρ, r) equations, optionally checked
    against the n-token flow (d = n), with the fitted decay law over the saved times where 1 − ρ lies in
    ``fit_range`` (exponential rate for ``post``, power-law exponent for the others) and its 95 % interval. Predicted:
    rate 2 (SA) or 2e^β (USA) for ``post``, 2α for ``ngpt`` (SA and USA); exponent 2 for ``pre``, ``peri`` and
    ``mix`` (``switch``: the time t_s at which it leaves the sphere), 1 for ``sqrt``. ``spacing``: saved times
    equally spaced, or ``log`` (0 and then geometric from 0.01), which resolves an exponential and a t^{−1} law
    with one grid.

    Returns:
        Dataset over (placement, time): ``gap`` = 1 − ρ, ``norm`` r; over placement: ``predicted``,
        ``fitted``, ``fitted_halfwidth``, ``deviation`` (flow against the reduced equations, with simulate;
        ~rtol in float64, round-off-bound with a PrecisionWarning in float32).

    Raises:
        InputError: an argument of a wrong type or out of range, naming it; a fit window with fewer than five
            saved times (naming ``t_max``). ResourceError: the n-token flows do not fit, naming ``tokens`` or
            ``saves``.
    """
    from attnphys.clouds._equiangular import check_equiangular, equiangular_start
    from attnphys.clouds.attention import ATTENTIONS
    from attnphys.metadata import base_attrs

    beta = number(beta, "beta", low=0.0)
    check_equiangular(beta, tokens, rho0, dynamics)
    t_max = number(t_max, "t_max", low=0.0, low_open=True)
    alpha = number(alpha, "alpha", low=0.0, low_open=True)
    switch = number(switch, "switch", low=0.0)
    if not switch < t_max:
        raise InputError(f"must lie in [0, t_max) = [0, {t_max:g}), got {switch!r}", "switch")
    try:
        lo, hi = (number(v, "fit_range") for v in fit_range)
    except (TypeError, ValueError):
        raise InputError(f"must be two numbers 0 < lo < hi < 1, got {fit_range!r:.80}", "fit_range") from None
    if not (0 < lo < hi < 1):
        raise InputError(f"must be two numbers 0 < lo < hi < 1, got {fit_range!r:.80}", "fit_range")
    saves = count(saves, "saves", 5)
    choice(spacing, ("linear", "log"), "spacing")
    simulate = flag(simulate, "simulate")
    rtol, atol = tolerances(rtol, atol)
    fits_blaming(  # the reduced equations: (saves, 2); the n-token flows: saved states and Gram matrices
        lambda v: (
            8.0 * 16 * v["saves"]
            + (8.0 * (4.0 * v["saves"] * v["tokens"] ** 2 + 40.0 * v["tokens"] ** 2) if simulate else 0.0)
        ),
        {"tokens": tokens, "saves": saves},
        {"tokens": 6, "saves": 401},
        {
            "tokens": f"the {tokens}-token flows in {tokens} dimensions",
            "saves": f"{saves} saved times" + (f" of {tokens}×{tokens} states" if simulate else ""),
        },
        least={"tokens": 2, "saves": 5},
    )
    if spacing == "linear":
        ts = np.linspace(0.0, float(t_max), saves)
    else:  # geometric from 0.01: resolves the fast exponential and the slow power laws in one grid
        ts = np.concatenate([[0.0], np.geomspace(min(1e-2, t_max / 2), float(t_max), saves - 1)])
    n = tokens
    gaps, norms, fitted, half, pred, dev = [], [], [], [], [], []
    with precision_noted(f"normalization_decay (diffrax solves at rtol = {rtol:g})"):
        for pl in PLACEMENTS:
            y = _solve(
                lambda t, y, b, pl=pl: reduced_field(y, b, n, pl, dynamics, t, alpha, switch),
                jnp.asarray([1.0 - rho0, 1.0]),
                ts,
                jnp.asarray(float(beta)),
                rtol,
                atol,
            )
            gap = y[:, 0]
            gaps.append(gap)
            norms.append(y[:, 1])
            late = (gap > lo) & (gap < hi) & (ts > (switch if pl == "mix" else 0.0))  # mix: after leaving the sphere
            if late.sum() < 5:
                raise InputError(
                    f"{pl}: fewer than 5 saved times with 1 - rho in {fit_range}; change t_max or saves", "t_max"
                )
            f, h = fit_decay(ts[late], gap[late], LAWS[pl])
            fitted.append(f)
            half.append(h)
            pred.append(predicted_decay(pl, beta, dynamics, alpha))
            if simulate:
                attn = ATTENTIONS[dynamics](beta=jnp.asarray(float(beta)))
                xs = _solve(
                    lambda t, X, a, pl=pl: placed_velocity(a, X, pl, t, alpha, switch),
                    jnp.asarray(equiangular_start(n, rho0)),
                    ts,
                    attn,
                    rtol,
                    atol,
                )
                r = np.linalg.norm(xs, axis=-1)
                U = xs / r[..., None]
                G = np.einsum("tid,tjd->tij", U, U)[:, ~np.eye(n, dtype=bool)]
                # relative to the gap: the law is about 1 − ρ, which becomes small
                ok = gap > 1e-6  # relative to the gap, while the flow's cosines resolve it (errors ~ rtol)
                rel = np.abs((1 - G[ok]) / gap[ok, None] - 1)
                dev.append(max(float(np.max(rel)), float(np.max(np.abs(r / y[:, 1:2] - 1)))))
    ds = xr.Dataset(
        {
            "gap": (("placement", "time"), np.array(gaps)),
            "norm": (("placement", "time"), np.array(norms)),
            "predicted": (("placement",), np.array(pred)),
            "fitted": (("placement",), np.array(fitted)),
            "fitted_halfwidth": (("placement",), np.array(half)),
            "law": (("placement",), np.array([LAWS[p] for p in PLACEMENTS])),
        },
        coords={"placement": list(PLACEMENTS), "time": ts},
    )
    if simulate:
        ds["deviation"] = (("placement",), np.array(dev))
        ds["deviation"].attrs["long_name"] = (
            "largest relative distance of the n-token flow's 1 - cos (while above 1e-6) and norm to the ODE"
        )
    for k, text in (
        ("placement", "normalization placement: post (sphere), pre, peri, ngpt, mix, sqrt"),
        ("gap", "1 - rho(t): one minus the pairwise cosine (reduced equations)"),
        ("norm", "common token norm r(t)"),
        ("predicted", "predicted decay: exponential rate (post) or power-law exponent (pre, peri)"),
        ("fitted", "fitted decay rate or exponent of 1 - rho over the late times"),
        ("fitted_halfwidth", "half-width of the 95% interval of the fitted rate or exponent"),
        ("law", "decay law of 1 - rho: exponential or power"),
    ):
        ds[k].attrs["long_name"] = text
    ds["time"].attrs.update(long_name="time of the continuous-time dynamics", units="1")
    ds.attrs.update(
        base_attrs(
            None,
            beta=float(beta),
            tokens=n,
            rho0=rho0,
            t_max=t_max,
            dynamics=dynamics,
            fit_range=list(fit_range),
            alpha=float(alpha),
            switch=float(switch),
        )  # fmt: skip
    )
    return ds


__all__ = [
    "LAWS",
    "PLACEMENTS",
    "fit_decay",
    "normalization_decay",
    "placed_velocity",
    "predicted_decay",
    "reduced_field",
]

"""Causal attention with an ALiBi slope and the "lost in the middle" profile (theory:
docs/theory/particles.md §12).

Tokens sit at positions s ∈ [0, 1] of a sequence and at angles θ on the circle. Token j attends to its strict past
with the positional weights w_jk ∝ e^{−λ (s_j − s_k)} (an ALiBi slope λ; no score normalisation over angles) and
moves by θ_j' = Σ_{k<j} w_jk K'(θ_j − θ_k), K(θ) = e^{β cos θ}. Linearised around the uniform angle distribution,
the Fourier mode n of the density at position s obeys a Volterra equation in s,

    ∂_t u_n(t, s) = a_n ∫_0^s w(s, s') u_n(t, s') ds',   a_n = n² I_n(β),   w(s, s') = λ e^{λ s'} / (e^{λ s} − 1),

whose solution kernel from position s to the last position 1 is

    g_a(t; s) = λ e^{λ s} / (e^λ − 1) · ψ_{a t}(Y_λ(s)),   Y_λ(s) = log((e^λ − 1)/(e^{λ s} − 1)),
    ψ_c(y) = Σ_{k≥0} c^{k+1} y^k / (k! (k+1)!) = √(c/y) I_1(2√(c y)).

A needle of angular width π/M weights mode n by ω_n = e^{−π² n²/(2M²)}; the influence profile of position s on
the last token is S_t(s) = Σ_{n≤n_max} ω_n g_{a_n}(t; s). It rises toward both ends (U shape, the middle is
"lost") until its slope at s = 1 changes sign at t_c = 2(1 − e^{−λ}) Σ ω_n a_n / Σ ω_n a_n².
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from attnphys.clouds._inputs import (
    count,
    fits,
    fits_blaming,
    number,
    numbers,
    tolerances,
    warn_if_single_precision,
)
from attnphys.errors import InputError

WEIGHTED_MODES_PER_NEEDLE = 12.3
"""Modes per unit of M with a non-zero needle weight ω_n = e^{−π² n²/(2M²)} in float64: beyond
n ≈ 12.3 M the weight underflows to exactly 0, so those modes add nothing to any sum here."""


def weighted_modes(modes: int, needle: float) -> int:
    """The modes n ≤ ``modes`` whose weight ω_n is not 0 in float64 (theory: docs/theory/particles.md §12.1):
    the sums over the others are exactly 0, so they are left out (modes = 10⁹ costs what ~100 modes do)."""
    return int(min(modes, int(WEIGHTED_MODES_PER_NEEDLE * needle) + 2))


def _bessel_coeffs(beta: float, modes: int, needle: float) -> tuple[np.ndarray, np.ndarray]:
    from scipy.special import iv

    n = np.arange(1, modes + 1)
    return n**2 * iv(n, beta), np.exp(-0.5 * (np.pi * n / needle) ** 2)


def _check(beta, alibi, needle, modes) -> tuple[np.ndarray, float, float, int]:
    """(β values, λ, M, n_max) checked: β finite > 0, λ ≥ 0, M > 0, n_max an integer ≥ 1."""
    b = numbers(beta, "beta", low=0.0, low_open=True)
    lam = number(alibi, "alibi", low=0.0)
    m = number(needle, "needle", low=0.0, low_open=True)
    return b, lam, m, count(modes, "modes")


def causal_kernel(c, s, alibi: float) -> np.ndarray:
    """g(s) = λ e^{λ s}/(e^λ − 1) · ψ_c(Y_λ(s)), ψ_c(y) = √(c/y) I_1(2√(c y)) (ψ_c(0) = c): the weight with which
    position s ∈ (0, 1] reaches the last position after time c/a_n in mode n (theory: docs/theory/particles.md
    §12.1); λ = 0 gives 1 · ψ_c(log(1/s)). ``c`` and ``s`` broadcast."""
    from scipy.special import i1e

    c, s = np.broadcast_arrays(np.asarray(c, dtype=float), np.asarray(s, dtype=float))
    if alibi == 0:
        coeff, y = np.ones_like(s), -np.log(s)
    else:
        coeff = alibi * np.exp(alibi * s) / np.expm1(alibi)
        y = np.log(np.expm1(alibi) / np.expm1(alibi * s))
    z = 2.0 * np.sqrt(np.maximum(c * y, 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        psi = np.where(y > 0, np.sqrt(c / np.where(y > 0, y, 1.0)) * i1e(z) * np.exp(z), c)
    return coeff * psi


def influence_profile(beta: float, times, positions, *, alibi: float = 1.0, needle: float = 8.0, modes: int = 20):
    """S_t(s) = Σ_{n≤n_max} ω_n g_{a_n}(t; s), a_n = n² I_n(β), ω_n = e^{−π² n²/(2M²)} (theory:
    docs/theory/particles.md §12.1) at (T,) ``times`` and (S,) ``positions`` in (0, 1]: a (T, S) array; the
    modes whose weight ω_n is 0 in float64 are left out (:func:`weighted_modes`)."""
    a, w = _bessel_coeffs(float(beta), weighted_modes(modes, needle), needle)
    ts, s = np.atleast_1d(np.asarray(times, dtype=float)), np.atleast_1d(np.asarray(positions, dtype=float))
    return np.einsum("n,tns->ts", w, causal_kernel(a[None, :, None] * ts[:, None, None], s[None, None, :], alibi))


def critical_time(
    beta: float | Sequence[float] | np.ndarray, *, alibi: float = 1.0, needle: float = 8.0, modes: int = 20
) -> np.ndarray:
    """t_c = 2(1 − e^{−λ}) Σ ω_n a_n / Σ ω_n a_n², a_n = n² I_n(β), ω_n = e^{−π² n²/(2M²)}: the time at which the
    slope of the influence profile at the last position changes sign, ending its U shape (theory:
    docs/theory/particles.md §12.2).

    Args:
        beta: (B,) values > 0. alibi: λ ≥ 0. needle: M > 0 (angular width π/M). modes: n_max ≥ 1.

    Returns:
        (B,) times (0 where e^{−β} underflows, β ≳ 745). The modes whose weight is 0 in float64 are left out
        (:func:`weighted_modes`), so a huge ``modes`` costs what ~12 M modes do.

    Raises:
        InputError: an argument of a wrong type or out of range, naming it. ResourceError: the (B, n) sums do
            not fit, naming ``beta`` or ``modes``.
    """
    from scipy.special import ive

    b, lam, m, modes = _check(beta, alibi, needle, modes)
    used = weighted_modes(modes, m)
    fits_blaming(  # the (B, n) arrays of the sums, a few at once
        lambda v: 64.0 * v["beta"] * weighted_modes(v["modes"], m),
        {"beta": b.size, "modes": modes},
        {"beta": 1, "modes": 20},
        {
            "beta": f"{b.size} values of beta × {used} weighted modes",
            "modes": f"{used} weighted modes of {b.size} beta",
        },
    )
    n = np.arange(1, used + 1, dtype=float)
    w = np.exp(-0.5 * (np.pi * n / m) ** 2)
    # a_n = n² I_n(β) = e^β n² Ie_n(β) (Ie the exponentially scaled Bessel function): the factor e^β leaves the
    # ratio Σ ω a / Σ ω a² as e^{−β}, so no sum overflows at large β
    # ratio Σ ω a / Σ ω a² as e^{−β}, so no sum overflows at large β; each row is scaled by its largest
    # entry, so that none underflows at small β
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        r = n[None, :] ** 2 * ive(n[None, :], b[:, None])
        top = r.max(1)
        r = r / np.where(top > 0, top, 1.0)[:, None]
        num, den = (w * r).sum(1), (w * r * r).sum(1)
        return 2.0 * (-np.expm1(-lam)) * np.exp(-b) * num / (top * den)


def middle_profile(
    beta: float,
    times: float | Sequence[float] | np.ndarray,
    *,
    alibi: float = 1.0,
    needle: float = 8.0,
    modes: int = 20,
    positions: int = 400,
) -> xr.Dataset:
    """The influence profile S_t(s) = Σ_{n≤n_max} ω_n g_{a_n}(t; s) of position s on the last token of a causal
    flow with ALiBi slope λ (theory: docs/theory/particles.md §12.1–12.2), on ``positions`` points of
    [0.02, 0.98], with its minimum and the critical time.

    Args:
        beta: β > 0. times: (T,) times ≥ 0. alibi: λ ≥ 0. needle: M > 0. modes: n_max ≥ 1. positions: ≥ 3.

    Returns:
        Dataset over (``time``, ``position``): ``influence``; over ``time``: ``minimum_position`` (argmin of the
        profile), ``u_shaped`` (the minimum lies inside and the profile rises toward s = 1); scalar
        ``critical_time``.

    Raises:
        InputError: an argument of a wrong type or out of range, naming it; a profile that overflows (naming
            ``times``). ResourceError: the (T, n, S) kernel does not fit, naming the size to blame.
    """
    from attnphys.metadata import base_attrs

    beta = number(beta, "beta", low=0.0, low_open=True)
    _, alibi, needle, modes = _check(beta, alibi, needle, modes)
    ts = numbers(times, "times", low=0.0)
    positions = count(positions, "positions", 3)
    fits_blaming(  # the (T, n, S) arrays of the kernel, a few at once
        lambda v: 64.0 * v["times"] * weighted_modes(v["modes"], needle) * v["positions"],
        {"times": ts.size, "modes": modes, "positions": positions},
        {"times": 1, "modes": 20, "positions": 400},
        {
            "times": f"{ts.size} times × {positions} positions",
            "modes": f"{weighted_modes(modes, needle)} weighted modes × {positions} positions",
            "positions": f"{positions} positions × {ts.size} times",
        },
        least={"positions": 3},
    )
    s = np.linspace(0.02, 0.98, positions)
    with np.errstate(over="ignore", invalid="ignore"):
        prof = influence_profile(beta, ts, s, alibi=alibi, needle=needle, modes=modes)
    if not np.all(np.isfinite(prof)):
        raise InputError(f"the profile overflows at beta={beta}, times up to {ts.max():g}", "times")
    arg = np.argmin(prof, axis=1)
    rising = prof[:, -1] > prof[:, -2]
    ds = xr.Dataset(
        {
            "influence": (("time", "position"), prof),
            "minimum_position": (("time",), s[arg]),
            "u_shaped": (("time",), (arg > 0) & (arg < positions - 1) & rising),
            "critical_time": ((), float(critical_time(beta, alibi=alibi, needle=needle, modes=modes)[0])),
        },
        coords={"time": ts, "position": s},
    )
    ds["time"].attrs.update(long_name="time of the continuous-time dynamics", units="1")
    ds["position"].attrs.update(long_name="relative position s of the source token in the sequence", units="1")
    ds["influence"].attrs["long_name"] = "linear influence S_t(s) of position s on the last token"
    ds["minimum_position"].attrs["long_name"] = "position of the profile's minimum"
    ds["u_shaped"].attrs["long_name"] = "the profile is U-shaped (interior minimum, rising at the end)"
    ds["critical_time"].attrs.update(long_name="time at which the slope at the last position changes sign")
    ds.attrs.update(base_attrs(None, beta=float(beta), alibi=float(alibi), needle=float(needle), modes=int(modes)))
    return ds


def causal_alibi_weights(tokens: int, alibi: float) -> np.ndarray:
    """(n, n) strictly lower-triangular positional weights w_jk = e^{−(λ/N)(j−k)} / Σ_{l<j} e^{−(λ/N)(j−l)},
    N = n − 1 (token j at position s_j = j/N); the first token has no past (theory: docs/theory/particles.md §12).

    Raises:
        InputError: ``tokens`` not an integer >= 2, ``alibi`` not a finite number >= 0.
        ResourceError: the (n, n) arrays do not fit, naming ``tokens``."""
    tokens = count(tokens, "tokens", 2)
    alibi = number(alibi, "alibi", low=0.0)
    fits({"tokens": (f"{tokens}×{tokens} positional weights", 40.0 * tokens**2)})
    N = tokens - 1
    j, k = np.arange(tokens)[:, None], np.arange(tokens)[None, :]
    W = np.where(k < j, np.exp(-(alibi / N) * (j - k)), 0.0)
    tot = W.sum(1, keepdims=True)
    return W / np.where(tot > 0, tot, 1.0)


def causal_influence(
    beta: float,
    times: float | Sequence[float] | np.ndarray,
    *,
    alibi: float = 1.0,
    positions: int = 64,
    particles: int = 16,
    needle: float = 8.0,
    modes: int = 4,
    rtol: float = 1e-8,
    atol: float = 1e-10,
) -> xr.Dataset:
    """The influence of every position on the last token measured on the particle flow: ``positions`` + 1
    positions s_j = j/N, each holding ``particles`` angles equally spaced on the circle (the uniform state, at
    rest), moved by θ_{j,p}' = Σ_{k<j} w_jk (1/P) Σ_q K'(θ_{j,p} − θ_{k,q}), K = e^{β cos θ}
    (:func:`causal_alibi_weights`), integrated with diffrax (Tsit5). The start of position k is displaced by
    ε_k Σ_n ω_n sin(n φ) (a needle); the derivative of the last position's mode-n displacement with respect to
    ε_k (``jax.jacfwd`` through the solver), times N and summed over n, is compared with S_t(s_k) at
    s_k = (k + ½)/N (theory: docs/theory/particles.md §12.3).

    Args:
        beta: β > 0. times: (T,) times > 0. alibi: λ ≥ 0. positions: N ≥ 4. particles: P > 2·modes.
        needle: M > 0. modes: n_max ≥ 1 (the modes in the needle).

    Returns:
        Dataset over (``time``, ``position``): ``influence`` (flow), ``influence_predicted`` (S_t); scalar
        ``deviation`` = the largest |flow − predicted| relative to the predicted profile's largest value, on
        s ∈ [0.1, 0.95].

    Raises:
        InputError: an argument of a wrong type or out of range, naming it; a predicted profile that overflows
            (naming ``times``), refused before the flow is compiled. ResourceError: the pairwise arrays of the
            flow do not fit, naming ``positions``.
    """
    import diffrax
    import jax
    import jax.numpy as jnp

    from attnphys.metadata import base_attrs

    beta = number(beta, "beta", low=0.0, low_open=True)
    _, alibi, needle, modes = _check(beta, alibi, needle, modes)
    ts = numbers(times, "times", low=0.0, low_open=True)
    positions = count(positions, "positions", 4)
    particles = count(particles, "particles", 1)
    if particles <= 2 * modes:
        raise InputError(f"must be an integer > 2·modes = {2 * modes}, got {particles!r}", "particles")
    rtol, atol = tolerances(rtol, atol)
    # the pairwise (j, p, k, q) arrays of the right-hand side and its tangents (measured: ~20 of them at once)
    fits_blaming(
        lambda v: (
            160.0 * (v["positions"] + 1) ** 2 * v["particles"] ** 2
            + 8.0 * v["times"] * (v["particles"] + 4) * (v["positions"] + 1)
        ),
        {"positions": positions, "particles": particles, "times": ts.size},
        {"positions": 64, "particles": 16, "times": 1},
        {
            "positions": f"{positions + 1} positions × {particles} particles (pairwise arrays)",
            "particles": f"{particles} particles at {positions + 1} positions (pairwise arrays)",
            "times": f"{ts.size} saved times",
        },
        least={"positions": 4, "particles": 2 * modes + 1},
    )
    with np.errstate(over="ignore", invalid="ignore"):
        grid = (np.arange(positions) + 0.5) / positions
        if not np.all(np.isfinite(influence_profile(beta, ts, grid, alibi=alibi, needle=needle, modes=modes))):
            raise InputError(
                f"the linear influence overflows at beta={beta:g}, times up to {ts.max():g}: lower them", "times"
            )
    warn_if_single_precision(f"causal_influence (a diffrax solve at rtol = {rtol:g})")
    N, P = int(positions), int(particles)
    W = jnp.asarray(causal_alibi_weights(N + 1, alibi))
    phi = 2 * np.pi * np.arange(P) / P
    n = np.arange(1, modes + 1)
    _, w = _bessel_coeffs(float(beta), modes, needle)
    needle_shape = jnp.asarray(np.sin(n[:, None] * phi[None, :]).T @ w)  # (P,)

    def rhs(t, th, args):  # th: (N+1, P)
        d = th[:, :, None, None] - th[None, None, :, :]  # (j, p, k, q)
        kp = -beta * jnp.sin(d) * jnp.exp(beta * jnp.cos(d))
        return jnp.einsum("jk,jpkq->jp", W, kp) / P

    th0 = jnp.broadcast_to(jnp.asarray(phi), (N + 1, P))
    ts_j = jnp.asarray(ts)

    def last(eps):  # eps: (N,) -> (T, P) angles of the last position
        start = th0.at[:N].add(eps[:, None] * needle_shape[None, :])
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(rhs), diffrax.Tsit5(), 0.0, float(ts.max()), None, start,
            saveat=diffrax.SaveAt(ts=ts_j),
            stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol), max_steps=100_000,
            adjoint=diffrax.ForwardMode(),
        )  # fmt: skip
        assert sol.ys is not None
        return sol.ys[:, N, :]

    J = np.asarray(jax.jit(jax.jacfwd(last))(jnp.zeros(N)))  # (T, P, N)
    modes_sin = np.sin(n[:, None] * phi[None, :])  # (n, P)
    measured = N * np.einsum("np,tpk->tk", 2.0 / P * modes_sin, J)
    s = (np.arange(N) + 0.5) / N
    predicted = influence_profile(beta, ts, s, alibi=alibi, needle=needle, modes=modes)
    inner = (s >= 0.1) & (s <= 0.95)
    dev = float(np.max(np.abs(measured - predicted)[:, inner]) / np.max(np.abs(predicted[:, inner])))
    ds = xr.Dataset(
        {
            "influence": (("time", "position"), measured),
            "influence_predicted": (("time", "position"), predicted),
            "deviation": ((), dev),
        },
        coords={"time": ts, "position": s},
    )
    ds["time"].attrs.update(long_name="time of the continuous-time dynamics", units="1")
    ds["position"].attrs.update(long_name="relative position s of the source token in the sequence", units="1")
    ds["influence"].attrs["long_name"] = "influence of position s on the last token (particle flow, jacfwd)"
    ds["influence_predicted"].attrs["long_name"] = "influence S_t(s) from the kinetic Green's function"
    ds["deviation"].attrs["long_name"] = "largest |flow − predicted| / max predicted on s in [0.1, 0.95]"
    ds.attrs.update(
        base_attrs(
            None,
            beta=float(beta),
            alibi=float(alibi),
            positions=N,
            particles=P,
            needle=float(needle),
            modes=int(modes),
            rtol=rtol,
            atol=atol,
        )  # fmt: skip
    )
    return ds

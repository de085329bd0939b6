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

from attnphys.errors import InputError


def _bessel_coeffs(beta: float, modes: int, needle: float) -> tuple[np.ndarray, np.ndarray]:
    from scipy.special import iv

    n = np.arange(1, modes + 1)
    return n**2 * iv(n, beta), np.exp(-0.5 * (np.pi * n / needle) ** 2)


def _check(beta, alibi, needle, modes) -> np.ndarray:
    b = np.atleast_1d(np.asarray(beta, dtype=float))
    if b.size == 0 or not np.all(np.isfinite(b)) or np.any(b <= 0):
        raise InputError(f"values must be finite and > 0, got {np.asarray(beta).tolist()!r:.80}", "beta")
    if not (np.isfinite(alibi) and alibi >= 0):
        raise InputError(f"must be a finite number >= 0, got {alibi!r}", "alibi")
    if not (np.isfinite(needle) and needle > 0):
        raise InputError(f"must be a finite number > 0, got {needle!r}", "needle")
    if isinstance(modes, bool) or not isinstance(modes, (int, np.integer)) or modes < 1:
        raise InputError(f"must be an integer >= 1, got {modes!r}", "modes")
    return b


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
    docs/theory/particles.md §12.1) at (T,) ``times`` and (S,) ``positions`` in (0, 1]: a (T, S) array."""
    a, w = _bessel_coeffs(float(beta), modes, needle)
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
        (B,) times.
    """
    b = _check(beta, alibi, needle, modes)
    out = np.empty(b.size)
    for i, bi in enumerate(b):
        a, w = _bessel_coeffs(float(bi), modes, needle)
        out[i] = 2.0 * (-np.expm1(-alibi)) * np.sum(w * a) / np.sum(w * a * a)
    return out


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
    """
    from attnphys.metadata import base_attrs

    _check(beta, alibi, needle, modes)
    ts = np.atleast_1d(np.asarray(times, dtype=float))
    if ts.size == 0 or not np.all(np.isfinite(ts)) or np.any(ts < 0):
        raise InputError(f"values must be finite and >= 0, got {np.asarray(times).tolist()!r:.80}", "times")
    if isinstance(positions, bool) or not isinstance(positions, (int, np.integer)) or positions < 3:
        raise InputError(f"must be an integer >= 3, got {positions!r}", "positions")
    s = np.linspace(0.02, 0.98, positions)
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
    N = n − 1 (token j at position s_j = j/N); the first token has no past (theory: docs/theory/particles.md §12)."""
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
    """
    import diffrax
    import jax
    import jax.numpy as jnp

    from attnphys.metadata import base_attrs

    _check(beta, alibi, needle, modes)
    ts = np.atleast_1d(np.asarray(times, dtype=float))
    if ts.size == 0 or not np.all(np.isfinite(ts)) or np.any(ts <= 0):
        raise InputError(f"values must be finite and > 0, got {np.asarray(times).tolist()!r:.80}", "times")
    if isinstance(positions, bool) or not isinstance(positions, (int, np.integer)) or positions < 4:
        raise InputError(f"must be an integer >= 4, got {positions!r}", "positions")
    if isinstance(particles, bool) or not isinstance(particles, (int, np.integer)) or particles <= 2 * modes:
        raise InputError(f"must be an integer > 2·modes = {2 * modes}, got {particles!r}", "particles")
    N, P = int(positions), int(particles)
    W = jnp.asarray(causal_alibi_weights(N + 1, alibi))
    phi = 2 * np.pi * np.arange(P) / P
    n = np.arange(1, modes + 1)
    a, w = _bessel_coeffs(float(beta), modes, needle)
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

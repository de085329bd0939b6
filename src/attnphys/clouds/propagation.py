"""Signal propagation at initialisation: the tokens' mean cosine through a deep random transformer, the
random-energy-model (REM) reading of a softmax row, whose simulator is :mod:`attnphys.clouds.propagation_simulation` (theory:
docs/theory/signal_propagation.md, after arXiv 2505.24333).

T tokens of dimension d with mean pairwise cosine ρ enter a block of single-head softmax attention with
i.i.d. N(0, β √(log T)/d) query and key weights, value weights N(0, σ_v²/d) and bias N(0, σ_b²), a residual
branch of scale α_A, a ReLU MLP of width d with weights N(0, σ_w²/d) and biases N(0, σ_b²), and a residual
of scale α_M; LayerNorm (no affine) after each branch (``post``, Post-LN) or before it (``pre``, Pre-LN,
the placement names of :data:`attnphys.clouds.PLACEMENTS`). A row of scores is a REM with T levels of
variance β²(1 − ρ) log T: its participation Y = E Σ_j w_j² and the overlap O = E Σ_j w_ij w_kj of two
rows set the second moments of the attention output, and the ReLU arc-cosine kernel those of the MLP. The
theory iterates these moments layer by layer; the simulator draws the networks.

Every function is pure (its randomness from an explicit seed); results are labelled datasets with the
configuration and the library's version in their attributes.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import xarray as xr

from attnphys._arguments import checked
from attnphys.clouds._inputs import choice, count, fits_blaming, flag, number, numbers, reals
from attnphys.clouds._inputs import seed as check_seed

PROPAGATION_PLACEMENTS = ("post", "pre")
"""The normalization placements the theory covers: LayerNorm after each residual sum (``post``, Post-LN)
or before each branch (``pre``, Pre-LN), named as in :data:`attnphys.clouds.PLACEMENTS`."""

PropagationPlacement = Literal["post", "pre"]

PAPER_ENCODER = dict(
    tokens=512, dim=720, layers=50, sigma_w2=0.2, sigma_v2=0.2, sigma_b2=4e-4, alpha_attention=1.0, alpha_mlp=1.0
)
"""The encoder of arXiv 2505.24333's Fig. 1: d = 720 (one head, MLP width 720), T = 512, 50 Post-LN blocks,
σ_w² = σ_v² = 0.2, σ_b² = 4·10⁻⁴, α_A = α_M = 1; the paper shows β ∈ {0.5, 3}."""

_LEVELS_G = np.linspace(-9.0, 9.0, 481)
"""Quadrature nodes of a standard Gaussian energy (spacing 0.0375, below the 1/σ ≥ 0.13 scale of every
integrand at β ≤ 3, T ≤ 512: halving it changes Y_T by < 10⁻¹⁵ and S_T by < 10⁻⁹ there)."""


# -- the REM of one softmax row ----------------------------------------------------------------------------
def critical_beta_closed_form(rho):
    """β_c(ρ) = √(2/(1 − ρ)): the condensation point of a softmax row over tokens of mean cosine ρ with
    query-key variance β √(log T)/d, where the REM's energy scale β √((1 − ρ) log T) reaches √(2 log T)
    (theory: docs/theory/signal_propagation.md §2). ρ: array in [0, 1); same shape out."""
    r = np.asarray(rho, dtype=float)
    with np.errstate(divide="ignore"):  # ρ = 1: β_c = ∞, every row spreads
        return np.sqrt(2.0 / (1.0 - r))


def _participation_limit(beta, rho):
    """Y_∞ = max(0, 1 − β_c(ρ)/β): the T → ∞ participation of a REM row (§2)."""
    return np.maximum(0.0, 1.0 - critical_beta_closed_form(rho) / np.asarray(beta, float))


def _entropy_limit(beta, rho, tokens: int):
    """S_∞ = log T · max(0, 1 − (β/β_c(ρ))²): the row entropy to leading order in log T (§2)."""
    return np.log(tokens) * np.maximum(0.0, 1.0 - (np.asarray(beta, float) / critical_beta_closed_form(rho)) ** 2)


def _rem_quadrature(sigma: np.ndarray, tokens: int, nodes: int = 600) -> tuple[np.ndarray, np.ndarray]:
    """(Y_T, S_T): the exact mean participation E Σ w_j² and mean entropy E[−Σ w_j log w_j] of w = softmax(σ g),
    g ~ N(0, I_T), for each σ in the (K,) array ``sigma`` (theory: docs/theory/signal_propagation.md §2.2).

    With a = e^{σ g}, φ(t) = E e^{−t a} and t = e^τ (1/Z = ∫ e^{−tZ} dt, 1/Z² = ∫ t e^{−tZ} dt, Frullani for
    log Z):  Y_T = T ∫ E[(ta)² e^{−ta}] φ^{T−1} dτ,  E log Z = ∫ (e^{−t} − φ^T) dτ,
    E Σ w σ g = T ∫ E[σ g · ta e^{−ta}] φ^{T−1} dτ,  S_T = E log Z − E Σ w σ g; the Gaussian expectations on
    :data:`_LEVELS_G`, the τ integral by the trapezoid rule on ``nodes`` points."""
    g = _LEVELS_G
    w = np.exp(-0.5 * g**2)
    w /= w.sum()
    T = float(tokens)
    Y = np.empty(sigma.size)
    S = np.empty(sigma.size)
    for k, s in enumerate(np.asarray(sigma, float).ravel()):
        top = np.log(T) + max(0.5 * s * s, s * (np.sqrt(2 * np.log(T)) + 3.0)) + 14.0
        tau = np.linspace(-top, 6.0, nodes)
        x = np.exp(tau[:, None] + s * g[None, :])  # t a, (τ, g)
        ex = np.exp(-x)
        one_minus = np.clip((w * -np.expm1(-x)).sum(-1), 0.0, 1.0)
        with np.errstate(divide="ignore"):
            logphi = np.log1p(-one_minus)
        phiT1 = np.exp((T - 1.0) * logphi)
        y = T * (w * x * x * ex).sum(-1) * phiT1
        logz = -np.expm1(T * logphi) + np.expm1(-np.exp(tau))  # e^{−t} − φ^T, as (1 − φ^T) − (1 − e^{−t})
        energy = T * (w * (s * g) * x * ex).sum(-1) * phiT1
        Y[k] = np.trapezoid(y, tau)
        S[k] = np.trapezoid(logz, tau) - np.trapezoid(energy, tau)
    return Y.reshape(np.shape(sigma)), S.reshape(np.shape(sigma))


def _rem_overlap(sigma: np.ndarray, r: np.ndarray, tokens: int, rows: int, seed: int, draws=None):
    """(O_T, its standard error): E Σ_j w_j v_j for w = softmax(σ g), v = softmax(σ h), g, h ~ N(0, I_T) with
    corr(g_j, h_j) = r (two rows of queries of cosine r), by sampling ``rows`` pairs of rows from ``seed``
    (the same draws for every (σ, r): common random numbers; ``draws`` = (G, U) reuses them) (theory:
    docs/theory/signal_propagation.md §2.3). ``sigma`` and ``r`` broadcast."""
    if draws is None:
        draws = _overlap_draws(tokens, rows, seed)
    G, U = draws
    s, rr = np.broadcast_arrays(np.asarray(sigma, float), np.asarray(r, float))
    out = np.empty(s.shape)
    err = np.empty(s.shape)
    for idx in np.ndindex(s.shape):
        sg, c = float(s[idx]), float(np.clip(rr[idx], -1.0, 1.0))
        a = sg * G
        b = sg * (c * G + np.sqrt(max(0.0, 1.0 - c * c)) * U)
        wa = np.exp(a - a.max(-1, keepdims=True))
        wa /= wa.sum(-1, keepdims=True)
        wb = np.exp(b - b.max(-1, keepdims=True))
        wb /= wb.sum(-1, keepdims=True)
        o = (wa * wb).sum(-1)
        out[idx] = o.mean()
        err[idx] = o.std(ddof=1) / np.sqrt(rows) if rows > 1 else np.nan
    return out, err


def _overlap_draws(tokens: int, rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The (rows, T) standard Gaussians G, U of :func:`_rem_overlap`, from ``seed``."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((rows, tokens)), rng.standard_normal((rows, tokens))


class _REMTable:
    """Y_T(σ) and S_T(σ) of :func:`_rem_quadrature` on a grid of 97 σ in [0, σ_max], linearly interpolated
    (the curvature of both over one step bounds the error below 10⁻⁴), and O_T sampled at the points asked
    for, over the same ``rows`` pairs of rows at every call (theory: docs/theory/signal_propagation.md §2)."""

    def __init__(self, tokens: int, sigma_max: float, rows: int, seed: int):
        self.tokens, self.rows, self.seed = tokens, rows, seed
        self.s = np.linspace(0.0, max(sigma_max, 1e-3) * 1.0001, 97)
        self.Y, self.S = _rem_quadrature(self.s, tokens)
        self.draws = _overlap_draws(tokens, rows, seed)

    def participation(self, sigma):
        return np.interp(sigma, self.s, self.Y)

    def entropy(self, sigma):
        return np.interp(sigma, self.s, self.S)

    def overlap(self, sigma, r):
        return _rem_overlap(sigma, r, self.tokens, self.rows, self.seed, self.draws)[0]


def _sigma(beta, rho, tokens: int):
    """σ = β √((1 − ρ) log T): the energy scale of a row over tokens of mean cosine ρ (§2.1)."""
    return np.asarray(beta, float) * np.sqrt(np.clip(1.0 - np.asarray(rho, float), 0.0, None) * np.log(tokens))


@checked
def rem_statistics(beta, rho, tokens: int = 512, rows: int = 1024, seed: int = 0) -> xr.Dataset:
    """The REM of one softmax row over T tokens of mean cosine ρ (query-key variance β √(log T)/d): energy
    scale σ = β √((1 − ρ) log T), participation Y = E Σ_j w_j², entropy S = E[−Σ_j w_j log w_j] and the
    overlap O = E Σ_j w_ij w_kj of two rows whose queries have cosine ρ, at finite T and in the limit
    T → ∞ (Y_∞ = (1 − β_c/β)₊, S_∞ = log T (1 − (β/β_c)²)₊, O_∞ = 0, β_c = √(2/(1 − ρ))) (theory:
    docs/theory/signal_propagation.md §2).

    Y_T and S_T are exact (one-dimensional quadrature); O_T is sampled over ``rows`` pairs of rows (seeded),
    with its standard error.

    Args:
        beta: (B,) β > 0. rho: (R,) mean cosines in [0, 1). tokens: T ≥ 2. rows: sampled pairs ≥ 2.

    Returns:
        Dataset over (beta, rho): ``sigma``, ``participation``, ``participation_limit``, ``entropy`` (nats),
        ``entropy_limit``, ``overlap``, ``overlap_stderr``; ``beta_c`` over rho.

    Raises:
        InputError: naming the argument out of range.
    """
    from attnphys.metadata import base_attrs

    b = numbers(beta, "beta", low=0.0, low_open=True)
    r = numbers(rho, "rho", low=0.0, high=1.0, high_open=True)
    count(tokens, "tokens", 2)
    count(rows, "rows", 2)
    check_seed(seed)
    fits_blaming(
        lambda v: 8.0 * 4 * v["rows"] * v["tokens"] + 8.0 * 600 * _LEVELS_G.size * 3,
        {"rows": rows, "tokens": tokens},
        {"rows": 256, "tokens": 512},
        {"rows": f"{rows} sampled pairs of rows of {tokens} scores", "tokens": f"{rows} rows of {tokens} scores"},
        least={"rows": 2, "tokens": 2},
    )
    S = _sigma(b[:, None], r[None, :], tokens)
    Y, H = _rem_quadrature(S, tokens)
    O, E = _rem_overlap(S, r[None, :], tokens, rows, seed)
    ds = xr.Dataset(
        {
            "sigma": (("beta", "rho"), S),
            "participation": (("beta", "rho"), Y),
            "participation_limit": (("beta", "rho"), _participation_limit(b[:, None], r[None, :])),
            "entropy": (("beta", "rho"), H),
            "entropy_limit": (("beta", "rho"), _entropy_limit(b[:, None], r[None, :], tokens)),
            "overlap": (("beta", "rho"), O),
            "overlap_stderr": (("beta", "rho"), E),
            "beta_c": (("rho",), critical_beta_closed_form(r)),
        },
        coords={"beta": b, "rho": r},
    )
    for k, text in (
        ("beta", "inverse temperature beta (query-key variance beta sqrt(log T)/d)"),
        ("rho", "mean pairwise cosine of the tokens entering the layer"),
        ("sigma", "energy scale of a row, beta sqrt((1 - rho) log T)"),
        ("participation", "E sum_j w_j^2 of a row at T tokens (exact quadrature)"),
        ("participation_limit", "T -> infinity participation (1 - beta_c/beta)_+"),
        ("entropy", "E[-sum_j w_j log w_j] of a row at T tokens, nats (exact quadrature)"),
        ("entropy_limit", "leading-order entropy log T (1 - (beta/beta_c)^2)_+, nats"),
        ("overlap", "E sum_j w_ij w_kj of two rows whose queries have cosine rho (sampled)"),
        ("overlap_stderr", "standard error of the sampled overlap"),
        ("beta_c", "condensation point sqrt(2/(1 - rho))"),
    ):
        ds[k].attrs["long_name"] = text
    ds.attrs.update(base_attrs(None, tokens=int(tokens), rows=int(rows), seed=int(seed)))
    return ds


@checked
def rem_layer_map(beta, rho, tokens: int | None = None, rows: int = 1024, seed: int = 0) -> xr.Dataset:
    """The bare REM layer map: the mean cosine of one softmax attention layer's outputs (values the tokens
    themselves, then normalized), ρ' = (ρ + (1 − ρ) O)/(ρ + (1 − ρ) Y), with Y, O of :func:`rem_statistics`
    at T = ``tokens``, or their limits (Y_∞ = (1 − β_c(ρ)/β)₊, O_∞ = 0) when ``tokens`` is None (theory:
    docs/theory/signal_propagation.md §3).

    In the limit: ρ' = 1 for β ≤ β_c(ρ) (rank collapse in one layer) and ρ' = ρ/(ρ + (1 − ρ)(1 − β_c/β)) < 1
    above it.

    Args:
        beta: (B,) β > 0. rho: (R,) input cosines in [0, 1). tokens: T ≥ 2, or None (T → ∞).

    Returns:
        Dataset over (beta, rho): ``cosine`` (ρ'), ``participation``, ``overlap``, ``condensed`` (β > β_c(ρ)).

    Raises:
        InputError: naming the argument out of range.
    """
    from attnphys.metadata import base_attrs

    b = numbers(beta, "beta", low=0.0, low_open=True)
    r = numbers(rho, "rho", low=0.0, high=1.0, high_open=True)
    if tokens is None:
        Y = _participation_limit(b[:, None], r[None, :])
        O = np.zeros_like(Y)
    else:
        st = rem_statistics(b, r, tokens=tokens, rows=rows, seed=seed)
        Y, O = st.participation.values, st.overlap.values
    R = r[None, :]
    out = (R + (1 - R) * O) / (R + (1 - R) * Y)
    out = np.where(np.isfinite(out), out, 1.0)  # ρ = 0 and Y = 0: every output is the same mean token
    ds = xr.Dataset(
        {
            "cosine": (("beta", "rho"), out),
            "participation": (("beta", "rho"), Y),
            "overlap": (("beta", "rho"), O),
            "condensed": (("beta", "rho"), b[:, None] > critical_beta_closed_form(R)),
        },
        coords={"beta": b, "rho": r},
    )
    for k, text in (
        ("beta", "inverse temperature beta"),
        ("rho", "mean cosine entering the layer"),
        ("cosine", "mean cosine of the layer's normalized outputs"),
        ("participation", "E sum_j w_j^2 of a row"),
        ("overlap", "E sum_j w_ij w_kj of two rows"),
        ("condensed", "beta above beta_c(rho): the rows condense on a few tokens"),
    ):
        ds[k].attrs["long_name"] = text
    ds.attrs.update(base_attrs(None, tokens=-1 if tokens is None else int(tokens), rows=int(rows), seed=int(seed)))
    return ds


def _orthogonal_multiplier(beta, rho: float):
    """dρ'/dρ of the T → ∞ REM map at the orthogonal fixed point, for tokens whose fluctuations have variance
    1 − ``rho`` (the fluctuation's multiplier is Y; the cosine's, 1/Y), with the condensed-phase law continued
    below β_c (Y = 1 − β_c/β, negative there): by automatic differentiation in float64 (§3.2)."""
    import jax
    import jax.numpy as jnp

    with jax.enable_x64(True):  # local to this derivative; the process's setting is left as it is
        bc = jnp.sqrt(2.0 / (1.0 - rho))

        def layer(eps, b):
            y = 1.0 - bc / b  # the order parameter 1 − m, m = β_c/β the REM's Parisi parameter
            return eps / (eps + (1.0 - eps) * y)

        lam = float(jax.grad(layer)(jnp.asarray(0.0), jnp.asarray(float(beta))))
    return lam if np.isfinite(lam) else np.inf  # at β = β_c exactly: 0/0, the multiplier diverges


@checked
def rem_fixed_points(beta, rho: float = 0.0) -> xr.Dataset:
    """Fixed points of the T → ∞ REM layer map (:func:`rem_layer_map`) and their stability (theory:
    docs/theory/signal_propagation.md §3.2). For tokens whose fluctuations have variance 1 − ρ (ρ = 0:
    orthogonal tokens), ρ* = 1 is a fixed point for every β; the orthogonal point ρ* = 0 is one iff
    β > β_c, with multiplier λ = dρ'/dρ = 1/(1 − β_c/β) > 1. The inverse multiplier 1/λ, continued below
    β_c, changes sign at β_c: β_c is found as its root (Brent's method on the multiplier obtained by automatic
    differentiation of the map), and compared with the closed form √(2/(1 − ρ)).

    Args:
        beta: (B,) β > 0. rho: the tokens' mean cosine in [0, 1).

    Returns:
        Dataset over beta: ``orthogonal_exists`` (ρ* = 0 is a fixed point), ``orthogonal_multiplier`` (λ, inf
        where it is not), ``inverse_multiplier`` (1/λ continued), ``collapsed_multiplier`` (0: ρ* = 1 is reached
        in one layer below β_c, superstable; 1 above: marginal); scalars ``beta_c`` (root) and
        ``beta_c_closed_form``.

    Raises:
        InputError: naming the argument out of range.
    """
    from scipy.optimize import brentq

    from attnphys.metadata import base_attrs

    b = numbers(beta, "beta", low=0.0, low_open=True)
    rho = number(rho, "rho", low=0.0, high=1.0, high_open=True)
    inv = np.array([1.0 / _orthogonal_multiplier(x, rho) for x in b])
    bc_form = float(critical_beta_closed_form(rho))
    root = float(brentq(lambda x: 1.0 / _orthogonal_multiplier(x, rho), 0.5 * bc_form, 4.0 * bc_form, xtol=1e-14))  # pyright: ignore[reportArgumentType]
    exists = b > bc_form
    ds = xr.Dataset(
        {
            "orthogonal_exists": (("beta",), exists),
            "orthogonal_multiplier": (("beta",), np.where(exists, 1.0 / np.where(exists, inv, 1.0), np.inf)),
            "inverse_multiplier": (("beta",), inv),
            "collapsed_multiplier": (("beta",), np.where(exists, 1.0, 0.0)),
            "beta_c": ((), float(root)),
            "beta_c_closed_form": ((), bc_form),
        },
        coords={"beta": b},
    )
    for k, text in (
        ("beta", "inverse temperature beta"),
        ("orthogonal_exists", "the orthogonal point is a fixed point of the layer map (beta > beta_c)"),
        ("orthogonal_multiplier", "d rho'/d rho at the orthogonal fixed point (inf: not a fixed point)"),
        ("inverse_multiplier", "1/multiplier, continued below beta_c (its root is beta_c)"),
        ("collapsed_multiplier", "multiplier of the collapsed point rho = 1 (0: reached in one layer)"),
        ("beta_c", "root of the inverse multiplier (Brent's method)"),
        ("beta_c_closed_form", "sqrt(2/(1 - rho))"),
    ):
        ds[k].attrs["long_name"] = text
    ds.attrs.update(base_attrs(None, rho=rho))
    return ds


# -- the composed per-layer theory --------------------------------------------------------------------------
def arccos_kernel(c):
    """κ(c) = (√(1 − c²) + c(π − arccos c))/π: E[ReLU(u) ReLU(v)] / E[ReLU(u)²] for standard Gaussians of
    correlation c (the degree-1 arc-cosine kernel; κ(0) = 1/π, κ(1) = 1, κ'(1) = 1) (theory:
    docs/theory/signal_propagation.md §4.2). c: array in [−1, 1]; same shape out."""
    c = np.clip(np.asarray(c, float), -1.0, 1.0)
    return (np.sqrt(1.0 - c * c) + c * (np.pi - np.arccos(c))) / np.pi


def attention_branch_moments(rho, Y, O, sigma_v2, sigma_b2):
    """The attention branch's second moments per dimension on LayerNormed tokens of cosine ρ whose rows have
    participation Y and overlap O (theory: docs/theory/signal_propagation.md §3.1):

        q_a = σ_v² (ρ + (1 − ρ) Y) + σ_b²,    p_a = σ_v² (ρ + (1 − ρ) O) + σ_b².

    Arrays broadcast; returns (q_a, p_a)."""
    return sigma_v2 * (rho + (1 - rho) * Y) + sigma_b2, sigma_v2 * (rho + (1 - rho) * O) + sigma_b2


def mlp_branch_square(sigma_w2, sigma_b2):
    """The ReLU MLP branch's squared norm per dimension on LayerNormed tokens (theory:
    docs/theory/signal_propagation.md §3.2): q_m = σ_w² (σ_w² + σ_b²)/2 + σ_b²."""
    return 0.5 * sigma_w2 * (sigma_w2 + sigma_b2) + sigma_b2


def block_moments(q, p, rho, Y, O, *, placement, mlp, alpha_attention, alpha_mlp, sigma_w2, sigma_v2, sigma_b2):
    """One block on the stream's moments (q = ‖x‖²/d, p = ⟨x_i, x_j⟩/d, the attention's input cosine ρ) with
    the rows' participation Y and overlap O given (theory: docs/theory/signal_propagation.md §4): with
    (q_a, p_a) of :func:`attention_branch_moments`,

        attention:  q_0 = q_a + α_A² q,  p_0 = p_a + α_A² p    (Post-LN: q_0 = q_a + α_A², p_0 = p_a + α_A² ρ,
                    then q_0 = 1, p_0 = p_0/q_0),
        MLP:        c = p_0/q_0,  q_1 = σ_w² + σ_b²,  p_1 = σ_w² c + σ_b²,  q_m of :func:`mlp_branch_square`,
                    p_m = σ_w² q_1 κ(p_1/q_1)/2 + σ_b²,  q' = q_m + α_M² q_0,  p' = p_m + α_M² p_0
                    (Post-LN: q' = 1, p' = (p_m + α_M² c)/(q_m + α_M²)),

    κ the arc-cosine kernel (:func:`arccos_kernel`; the MLP left out with ``mlp=False``). Arrays broadcast;
    returns (q', p')."""
    aA, aM = alpha_attention, alpha_mlp
    qa, pa = attention_branch_moments(rho, Y, O, sigma_v2, sigma_b2)
    # attention on LN-ed tokens (Post-LN: the stream is LN-ed; Pre-LN: LN before the branch)
    if placement == "post":
        q0, p0 = qa + aA**2, pa + aA**2 * rho
        q0, p0 = np.ones_like(p0), p0 / q0
    else:
        q0, p0 = qa + aA**2 * q, pa + aA**2 * p
    if not mlp:
        return q0, p0
    c = np.clip(p0 / q0, 0.0, 1.0)  # the MLP sees LN-ed tokens in both placements
    q1, p1 = sigma_w2 + sigma_b2, sigma_w2 * c + sigma_b2
    qm = mlp_branch_square(sigma_w2, sigma_b2)
    pm = 0.5 * sigma_w2 * q1 * arccos_kernel(p1 / q1) + sigma_b2
    if placement == "post":
        q2, p2 = qm + aM**2, pm + aM**2 * c
        return np.ones_like(p2), p2 / q2
    return qm + aM**2 * q0, pm + aM**2 * p0


def _block(q, p, beta, *, stats, placement, mlp, aA, aM, sw2, sv2, sb2, tokens):
    """One block on the stream's moments at one β: :func:`block_moments` with the rows' (participation,
    overlap, entropy) from ``stats(β, ρ)`` (theory: docs/theory/signal_propagation.md §4)."""
    rho = np.clip(p / q, 0.0, 1.0)
    Y, O, S = stats(beta, rho)
    q2, p2 = block_moments(q, p, rho, Y, O, placement=placement, mlp=mlp, alpha_attention=aA, alpha_mlp=aM,
                           sigma_w2=sw2, sigma_v2=sv2, sigma_b2=sb2)  # fmt: skip
    return q2, p2, Y, O, S


def _stats_fn(tokens: int, finite_size: bool, beta_max: float, rows: int, seed: int):
    if not finite_size:
        return lambda b, r: (_participation_limit(b, r), np.zeros_like(r), _entropy_limit(b, r, tokens))
    tab = _REMTable(tokens, float(_sigma(beta_max, 0.0, tokens)), rows, seed)

    def stats(b, r):
        s = _sigma(b, r, tokens)
        return tab.participation(s), tab.overlap(s, r), tab.entropy(s)

    return stats


def check_architecture(placement, mlp, alpha_attention, alpha_mlp, sigma_w2, sigma_v2, sigma_b2) -> None:
    """Refuse an architecture the theory and the simulator do not cover (theory: docs/theory/signal_propagation.md
    §4): a placement not in :data:`PROPAGATION_PLACEMENTS`, residual scales or a bias variance below 0, weight
    variances ≤ 0.

    Raises:
        InputError: naming the argument.
    """
    choice(placement, PROPAGATION_PLACEMENTS, "placement")
    flag(mlp, "mlp")
    for name, v in (("alpha_attention", alpha_attention), ("alpha_mlp", alpha_mlp), ("sigma_b2", sigma_b2)):
        number(v, name, low=0.0)
    for name, v in (("sigma_w2", sigma_w2), ("sigma_v2", sigma_v2)):
        number(v, name, low=0.0, low_open=True)


def _iterate(b, rho0, layers, stats, placement, mlp, aA, aM, sw2, sv2, sb2, tokens):
    """The theory's (layer, …) arrays of cosine, norm, participation, overlap, entropy from ρ_0, for the β
    array ``b`` (any shape; aA, aM broadcast with it)."""
    shape = np.broadcast_shapes(np.shape(b), np.shape(aA), np.shape(aM), np.shape(rho0))
    q = np.ones(shape)
    p = np.broadcast_to(np.asarray(rho0, float), shape).copy()
    bb = np.broadcast_to(b, shape)
    cos, norm, Ys, Os, Ss = [p.copy()], [q.copy()], [], [], []
    for _ in range(layers):
        q, p, Y, O, S = _block(
            q, p, bb, stats=stats, placement=placement, mlp=mlp, aA=aA, aM=aM, sw2=sw2, sv2=sv2, sb2=sb2,
            tokens=tokens,
        )  # fmt: skip
        cos.append(np.clip(p / q, -1.0, 1.0))
        norm.append(q.copy())
        Ys.append(Y)
        Os.append(O)
        Ss.append(S)
    return [np.array(a) for a in (cos, norm, Ys, Os, Ss)]


@checked
def propagation_theory(
    beta,
    rho0: float = 0.2,
    layers: int = 50,
    placement: PropagationPlacement = "post",
    mlp: bool = True,
    alpha_attention: float = 1.0,
    alpha_mlp: float = 1.0,
    sigma_w2: float = 0.2,
    sigma_v2: float = 0.2,
    sigma_b2: float = 4e-4,
    tokens: int = 512,
    finite_size: bool = True,
    rows: int = 1024,
    seed: int = 0,
) -> xr.Dataset:
    """The predicted mean cosine of the tokens after each block of a deep random transformer at
    initialisation (theory: docs/theory/signal_propagation.md §4): the stream's moments (q_ℓ, p_ℓ) through
    attention (second moments σ_v²(ρ + (1 − ρ)Y) + σ_b² and σ_v²(ρ + (1 − ρ)O) + σ_b²), the residual
    α_A, LayerNorm at ``placement``, the ReLU MLP (arc-cosine kernel κ; left out with ``mlp=False``) and its
    residual α_M; ρ_ℓ = p_ℓ/q_ℓ.

    ``finite_size``: Y, O, S of the REM at T = ``tokens`` (Y and S exact, tabulated; O sampled over ``rows``
    pairs of rows from ``seed``); otherwise their T → ∞ limits (the paper's law).

    Args:
        beta: (B,) β > 0. rho0: input mean cosine in [0, 1). layers ≥ 1. Others as named (variances ≥ 0).

    Returns:
        Dataset over (beta, layer = 0 … layers): ``cosine``, ``norm`` (q_ℓ, 1 for Post-LN); over (beta,
        block = 1 … layers): ``participation``, ``overlap``, ``entropy`` (nats) of the attention rows in
        that block.

    Raises:
        InputError: naming the argument out of range.
    """
    from attnphys.metadata import base_attrs

    b = numbers(beta, "beta", low=0.0, low_open=True)
    rho0 = number(rho0, "rho0", low=0.0, high=1.0, high_open=True)
    count(tokens, "tokens", 2)
    check_architecture(placement, mlp, alpha_attention, alpha_mlp, sigma_w2, sigma_v2, sigma_b2)
    stats = _stats_fn(tokens, finite_size, float(b.max()), rows, seed)
    cos, norm, Y, O, S = _iterate(
        b, rho0, layers, stats, placement, mlp, alpha_attention, alpha_mlp, sigma_w2, sigma_v2, sigma_b2, tokens
    )
    ds = xr.Dataset(
        {
            "cosine": (("beta", "layer"), cos.T),
            "norm": (("beta", "layer"), norm.T),
            "participation": (("beta", "block"), Y.T),
            "overlap": (("beta", "block"), O.T),
            "entropy": (("beta", "block"), S.T),
        },
        coords={"beta": b, "layer": np.arange(layers + 1), "block": np.arange(1, layers + 1)},
    )
    _label_theory(ds)
    ds.attrs.update(
        base_attrs(
            None,
            rho0=rho0,
            layers=int(layers),
            placement=placement,
            mlp=int(mlp),
            alpha_attention=float(alpha_attention),
            alpha_mlp=float(alpha_mlp),
            sigma_w2=float(sigma_w2),
            sigma_v2=float(sigma_v2),
            sigma_b2=float(sigma_b2),
            tokens=int(tokens),
            finite_size=int(finite_size),
            rows=int(rows),
            seed=int(seed),
        )  # fmt: skip
    )
    return ds


def _label_theory(ds: xr.Dataset) -> None:
    for k, text in (
        ("beta", "inverse temperature beta (query-key variance beta sqrt(log T)/d)"),
        ("layer", "number of blocks applied (0: the input)"),
        ("block", "block index"),
        ("cosine", "predicted mean pairwise cosine of the tokens"),
        ("norm", "predicted squared norm per dimension of the stream, q"),
        ("participation", "E sum_j w_j^2 of an attention row"),
        ("overlap", "E sum_j w_ij w_kj of two attention rows"),
        ("entropy", "mean entropy of an attention row, nats"),
    ):
        if k in ds.variables:
            ds[k].attrs["long_name"] = text


def collapse_multiplier(
    alpha_attention: Any = 1.0,
    alpha_mlp: Any = 1.0,
    sigma_w2: float = 0.2,
    sigma_v2: float = 0.2,
    sigma_b2: float = 4e-4,
    mlp: bool = True,
) -> np.ndarray:
    """λ₁ = d(1 − ρ')/d(1 − ρ) at the collapsed point ρ = 1 of the Post-LN block (theory:
    docs/theory/signal_propagation.md §5): λ₁ = α_A²/(σ_v² + σ_b² + α_A²) · (σ_w⁴/2 + α_M²)/(σ_w²(σ_w² + σ_b²)/2
    + σ_b² + α_M²) (the second factor 1 with ``mlp=False``); λ₁ < 1, so ρ = 1 attracts and 1 − ρ_ℓ ∝ λ₁^ℓ near
    it. Arguments broadcast; an array out.

    Raises:
        InputError: naming the argument (a scale that is not a finite number ≥ 0, a weight variance ≤ 0).
    """
    check_architecture("post", mlp, 0.0, 0.0, sigma_w2, sigma_v2, sigma_b2)
    aA, aM = reals(alpha_attention, "alpha_attention", low=0.0), reals(alpha_mlp, "alpha_mlp", low=0.0)
    att = aA**2 / (sigma_v2 + sigma_b2 + aA**2)
    if not mlp:
        return att
    return att * (0.5 * sigma_w2**2 + aM**2) / (0.5 * sigma_w2 * (sigma_w2 + sigma_b2) + sigma_b2 + aM**2)


@checked
def propagation_phase_diagram(
    beta,
    alpha,
    rho0: float = 0.2,
    layers: int = 50,
    placement: PropagationPlacement = "post",
    mlp: bool = True,
    sigma_w2: float = 0.2,
    sigma_v2: float = 0.2,
    sigma_b2: float = 4e-4,
    tokens: int = 512,
    finite_size: bool = False,
    threshold: float = 0.01,
    rows: int = 128,
    seed: int = 0,
) -> xr.Dataset:
    """The (β, α) diagram of rank collapse and propagation after ``layers`` blocks, α = α_A = α_M the scale of
    both residual branches (theory: docs/theory/signal_propagation.md §5): from ρ_0, the theory of
    :func:`propagation_theory` gives ρ_L; the phase is ``rank_collapse`` (0) where 1 − ρ_L < ``threshold``,
    otherwise ``propagation`` (1) where the last block's rows are spread (β ≤ β_c(ρ_L)) or
    ``entropy_collapse`` (2) where they have condensed (β > β_c(ρ_L): the signal is kept by attention rows
    that each follow a few tokens).

    Args:
        beta: (B,) β > 0. alpha: (A,) residual scales ≥ 0. threshold: in (0, 1). Others as in
            :func:`propagation_theory` (``finite_size`` off by default: the paper's T → ∞ law).

    Returns:
        Dataset over (beta, alpha): ``cosine`` (ρ_L), ``phase`` (0, 1, 2), ``condensed``, ``collapse_multiplier``
        (Post-LN's λ₁ of :func:`collapse_multiplier`; NaN for Pre-LN), ``depth_scale`` (−1/log λ₁); ``cosines``
        over (beta, alpha, layer).

    Raises:
        InputError: naming the argument out of range.
    """
    from attnphys.metadata import base_attrs

    b = numbers(beta, "beta", low=0.0, low_open=True)
    a = numbers(alpha, "alpha", low=0.0)
    rho0 = number(rho0, "rho0", low=0.0, high=1.0, high_open=True)
    threshold = number(threshold, "threshold", low=0.0, high=1.0, low_open=True, high_open=True)
    count(tokens, "tokens", 2)
    check_architecture(placement, mlp, 1.0, 1.0, sigma_w2, sigma_v2, sigma_b2)
    fits_blaming(
        lambda v: 8.0 * 6 * v["beta"] * v["alpha"] * (v["layers"] + 1),
        {"beta": b.size, "alpha": a.size, "layers": layers},
        {"beta": 40, "alpha": 40, "layers": 50},
        {"beta": f"{b.size} values of beta", "alpha": f"{a.size} residual scales", "layers": f"{layers} layers"},
    )
    stats = _stats_fn(tokens, finite_size, float(b.max()), rows, seed)
    B, A = np.meshgrid(b, a, indexing="ij")
    cos, _, _, _, _ = _iterate(B, rho0, layers, stats, placement, mlp, A, A, sigma_w2, sigma_v2, sigma_b2, tokens)
    last = cos[-1]
    condensed = B > critical_beta_closed_form(np.clip(last, 0.0, 1.0 - 1e-15))
    phase = np.where(1.0 - last < threshold, 0, np.where(condensed, 2, 1))
    lam = (
        collapse_multiplier(A, A, sigma_w2, sigma_v2, sigma_b2, mlp)
        if placement == "post"
        else np.full(A.shape, np.nan)
    )
    with np.errstate(divide="ignore"):
        depth = np.where(lam > 0, -1.0 / np.log(lam), 0.0)
    ds = xr.Dataset(
        {
            "cosine": (("beta", "alpha"), last),
            "phase": (("beta", "alpha"), phase.astype(np.int64)),
            "condensed": (("beta", "alpha"), condensed),
            "collapse_multiplier": (("beta", "alpha"), lam),
            "depth_scale": (("beta", "alpha"), depth),
            "cosines": (("beta", "alpha", "layer"), np.moveaxis(cos, 0, -1)),
        },
        coords={"beta": b, "alpha": a, "layer": np.arange(layers + 1)},
    )
    for k, text in (
        ("beta", "inverse temperature beta"),
        ("alpha", "residual scale of both branches, alpha_A = alpha_MLP"),
        ("layer", "number of blocks applied"),
        ("cosine", "predicted mean cosine after the last block"),
        ("phase", "0: rank collapse, 1: propagation (spread rows), 2: propagation with condensed rows"),
        ("condensed", "beta above beta_c of the last block's input"),
        ("collapse_multiplier", "d(1 - rho')/d(1 - rho) at rho = 1 (Post-LN)"),
        ("depth_scale", "layers over which 1 - rho shrinks by e near collapse, -1/log(multiplier)"),
        ("cosines", "predicted mean cosine per layer"),
    ):
        ds[k].attrs["long_name"] = text
    ds.attrs.update(
        base_attrs(
            None,
            rho0=rho0,
            layers=int(layers),
            placement=placement,
            mlp=int(mlp),
            sigma_w2=float(sigma_w2),
            sigma_v2=float(sigma_v2),
            sigma_b2=float(sigma_b2),
            tokens=int(tokens),
            finite_size=int(finite_size),
            threshold=float(threshold),
            phases=["rank_collapse", "propagation", "entropy_collapse"],
        )  # fmt: skip
    )
    return ds


__all__ = [
    "PAPER_ENCODER",
    "PROPAGATION_PLACEMENTS",
    "arccos_kernel",
    "attention_branch_moments",
    "block_moments",
    "collapse_multiplier",
    "critical_beta_closed_form",
    "mlp_branch_square",
    "propagation_phase_diagram",
    "propagation_theory",
    "rem_fixed_points",
    "rem_layer_map",
    "rem_statistics",
]

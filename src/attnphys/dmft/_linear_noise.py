"""The system-size (linear-noise) expansion of the finite-N network around its mean field (theory:
docs/theory/fluctuations.md).

The finite network of :mod:`attnphys.dmft.finite` is a Markov chain on the overlaps of the tokens in its
window. Its state after a step, as one vector x of dimension D = M + 2LM + 4M,

    x = (A, vec mv, vec mk, vec se0)

holds the step's attention output A (M,), the value and key overlaps of the window's tokens mv, mk (L, M),
row 0 newest, and the semantic overlaps se0 (4, M) of the newest token, with the factor (1 − ε). One step
is x_{t+1} = F_t(x_t, ξ_t): the new token's semantic overlaps are their conditional mean given A_t plus a
noise ξ_t (4M,) of mean zero and covariance D(A_t)/N (exact: the class sums are binomials),

    D(A) = (1 − ε)² Σ_c f_c (1 − tanh² h_c) W_c W_cᵀ,   h_c = β_o s_o W^o_c · A,

over the weight classes c with column W_c ∈ {±1}^{4M} and share f_c of the semantic bits. With
x_t = x̄_t + δx_t, to order 1/N the mean-field orbit x̄_{t+1} = F_t(x̄_t, 0), the covariance and the bias obey

    Σ_{t+1} = J_t Σ_t J_tᵀ + B_t D_t B_tᵀ,
    β_{t+1} = J_t β_t + ½ ∂²_x F_t : Σ_t + ½ ∂²_ξ F_t : D_t,

with J = ∂F/∂x, B = ∂F/∂ξ at (x̄_t, 0); the covariance of x_t is Σ_t/N and its mean x̄_t + β_t/N. Every
function here is N-free (the scaled Σ and β); the sizes enter only as 1/N. The second-order terms are
contracted without forming a Hessian (:func:`_contract`: second directional derivatives along the
eigenvectors of Σ or D).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnphys.dmft.meanfield import Scalars, attention
from attnphys.dmft.observables import observable


class Network(NamedTuple):
    """The finite network's weight classes as the expansion reads them (theory: docs/theory/fluctuations.md §1).

    W: (4, M, C) distinct semantic columns (family order o, v, q, k); frac: (C,) the share f_c of the semantic
    bits in each class; W_pe: (4, M, P) positional weights.
    """

    W: jax.Array
    frac: jax.Array
    W_pe: jax.Array


def network_of(net) -> Network:
    """The :class:`Network` of a :class:`~attnphys.dmft.finite.FiniteNetwork` (its counts as shares)."""
    counts = jnp.asarray(net.counts, jnp.float64)
    return Network(jnp.asarray(net.W, jnp.float64), counts / jnp.sum(counts), jnp.asarray(net.W_pe, jnp.float64))


def dim(L: int, M: int) -> int:
    """Dimension D = M + 2LM + 4M of the expansion's state."""
    return M + 2 * L * M + 4 * M


def pack(A, mv, mk, se0) -> jax.Array:
    """The state vector (D,) of A (M,), mv and mk (L, M), se0 (4, M)."""
    return jnp.concatenate([A, mv.reshape(-1), mk.reshape(-1), se0.reshape(-1)])


def unpack(x, L: int, M: int):
    """(A (M,), mv (L, M), mk (L, M), se0 (4, M)) of a state vector."""
    A = x[:M]
    mv = x[M : M + L * M].reshape(L, M)
    mk = x[M + L * M : M + 2 * L * M].reshape(L, M)
    se0 = x[M + 2 * L * M :].reshape(4, M)
    return A, mv, mk, se0


def class_fields(net: Network, sc: Scalars, A) -> jax.Array:
    """h_c = β_o s_o W^o_c · A on every class (C,)."""
    return sc.gain_o * (A @ net.W[0])


def mean_semantic(net: Network, sc: Scalars, A) -> jax.Array:
    """(1 − ε) Σ_c f_c W_c tanh h_c: the conditional mean of the new token's semantic overlaps (4, M) (theory:
    docs/theory/fluctuations.md §1)."""
    return (1.0 - sc.eps) * (net.W @ (net.frac * jnp.tanh(class_fields(net, sc, A))))


def noise_covariance(net: Network, sc: Scalars, A) -> jax.Array:
    """N times the covariance of the new token's semantic overlaps given A (4M, 4M) (theory:
    docs/theory/fluctuations.md §1): D(A) = (1 − ε)² Σ_c f_c (1 − tanh² h_c) W_c W_cᵀ."""
    u = jnp.tanh(class_fields(net, sc, A))
    Wc = net.W.reshape(-1, net.W.shape[-1])  # (4M, C)
    return (1.0 - sc.eps) ** 2 * (Wc * (net.frac * (1.0 - u * u))) @ Wc.T


def positional(net: Network, sc: Scalars, t, L: int) -> jax.Array:
    """The positional overlaps (4, M) of the token generated at loop step t: code of position t mod L, most
    significant bit first (the finite network's convention, docs/theory/dmft.md §2)."""
    P = net.W_pe.shape[-1]
    if P == 0:
        return jnp.zeros(net.W.shape[:2], net.W.dtype)
    bits = (jnp.right_shift(t % L, jnp.arange(P - 1, -1, -1)) & 1).astype(net.W.dtype)
    return (1.0 - (1.0 - sc.eps)) / P * (net.W_pe @ (2.0 * bits - 1.0))


def step(net: Network, sc: Scalars, x, xi, t, n, L: int, M: int):
    """F_t(x, ξ): one step of the finite network with the new token's semantic overlaps at their mean plus ξ
    (4M,) (theory: docs/theory/fluctuations.md §1). ``n`` is the number of filled rows before the step.
    Returns the state after the step (D,)."""
    A, mv, mk, _ = unpack(x, L, M)
    se0 = mean_semantic(net, sc, A) + xi.reshape(4, M)
    m = se0 + positional(net, sc, t, L)
    mv = jnp.concatenate([m[1][None], mv[:-1]])
    mk = jnp.concatenate([m[3][None], mk[:-1]])
    _, att = attention(sc.gamma, mk, m[2], mv, jnp.minimum(n + 1, L))
    return pack(att, mv, mk, se0)


class _View(NamedTuple):
    A: jax.Array
    m0: jax.Array
    se0: jax.Array
    mv: jax.Array
    mk: jax.Array


def observe(net: Network, sc: Scalars, x, t, L: int, M: int, names: tuple[str, ...], convention) -> jax.Array:
    """The records of loop step t read from the state after it, by the observables' table (theory:
    docs/theory/dmft.md §2.2): (len(names), M)."""
    A, mv, mk, se0 = unpack(x, L, M)
    view = _View(A[None], se0 + positional(net, sc, t, L), se0, mv, mk)
    return jnp.stack([observable(k).value(view, sc.eps, convention) for k in names])


def initial(net: Network, sc: Scalars, L: int, M: int) -> jax.Array:
    """The state before loop step 0: A₀ = m^v(x₀) of the first token x₀ = row 0 of W^o with positional bits −1
    (theory: docs/theory/dmft.md §3.5), an empty window."""
    se = net.W @ (net.frac * net.W[0, 0])
    P = net.W_pe.shape[-1]
    pe = (1.0 - (1.0 - sc.eps)) / P * jnp.sum(-net.W_pe, axis=-1) if P else 0.0
    m = (1.0 - sc.eps) * se + pe
    z = jnp.zeros((L, M), net.W.dtype)
    return pack(m[1], z, z, jnp.zeros((4, M), net.W.dtype))


class Moments(NamedTuple):
    """The linear part of one step of the expansion at the mean-field state x̄ (theory:
    docs/theory/fluctuations.md §2).

    J: (D, D) ∂F/∂x; Q: (D, D) B D Bᵀ with B = ∂F/∂ξ; s_xi: (D,) ½ ∂²_ξ F : D.
    """

    J: jax.Array
    Q: jax.Array
    s_xi: jax.Array


def _contract(f, x, S) -> jax.Array:
    """½ ∂²f(x) : S for a symmetric positive semi-definite S (d, d), without forming the Hessian: with
    S = Σ_m λ_m v_m v_mᵀ, the sum of λ_m times the second directional derivative of f along v_m (d
    second-order forward passes instead of d²)."""
    lam, V = jnp.linalg.eigh(0.5 * (S + S.T))
    lam = jnp.maximum(lam, 0.0)

    def second(v):
        return jax.jvp(lambda y: jax.jvp(f, (y,), (v,))[1], (x,), (v,))[1]

    return 0.5 * jnp.einsum("m,mi->i", lam, jax.vmap(second, in_axes=1)(V))


def moments(net: Network, sc: Scalars, x, t, n, L: int, M: int) -> Moments:
    """Jacobians, noise input and the noise's second-order drift of F_t at (x, 0) (forward mode, float64)."""
    xi0 = jnp.zeros(4 * M, x.dtype)
    J = jax.jacfwd(lambda y: step(net, sc, y, xi0, t, n, L, M))(x)
    B = jax.jacfwd(lambda e: step(net, sc, x, e, t, n, L, M))(xi0)
    D = noise_covariance(net, sc, x[:M])
    s_xi = _contract(lambda e: step(net, sc, x, e, t, n, L, M), xi0, D)
    return Moments(J, B @ D @ B.T, s_xi)


def curvature(net: Network, sc: Scalars, x, t, n, Sigma, L: int, M: int) -> jax.Array:
    """½ ∂²_x F_t(x, 0) : Σ (D,): the drift of the mean from the state's own fluctuations."""
    xi0 = jnp.zeros(4 * M, x.dtype)
    return _contract(lambda y: step(net, sc, y, xi0, t, n, L, M), x, Sigma)


@partial(jax.jit, static_argnames=("L", "M", "names", "convention"))
def record_moments(net, sc, x, Sigma, beta, t, L, M, names, convention):
    """Mean-field value g, first-order bias G β + ½ ∂²g : Σ, and covariance G Σ Gᵀ of the records of step t
    (N-free; theory: docs/theory/fluctuations.md §2). Shapes: (K, M), (K, M), (K·M, K·M)."""

    def g(x):
        return observe(net, sc, x, t, L, M, names, convention).reshape(-1)

    y = g(x)
    G = jax.jacfwd(g)(x)
    bias = G @ beta + _contract(g, x, Sigma)
    K = len(names)
    return y.reshape(K, M), bias.reshape(K, M), G @ Sigma @ G.T


CHUNK = 64
"""Steps per compiled block of :func:`run` and :func:`orbit`: one program serves every run length."""


@partial(jax.jit, static_argnames=("L", "M", "names", "convention"))
def _run_block(net: Network, sc: Scalars, carry, t0, *, L: int, M: int, names: tuple[str, ...], convention):
    def body(carry, t):
        x, Sigma, beta = carry
        n = jnp.minimum(t, L)
        m = moments(net, sc, x, t, n, L, M)
        x1 = step(net, sc, x, jnp.zeros(4 * M, x.dtype), t, n, L, M)
        beta1 = m.J @ beta + curvature(net, sc, x, t, n, Sigma, L, M) + m.s_xi
        Sigma1 = m.J @ Sigma @ m.J.T + m.Q
        y, b, c = record_moments(net, sc, x1, Sigma1, beta1, t, L, M, names, convention)
        return (x1, Sigma1, beta1), dict(mean=y, bias=b, cov=c, x=x1)

    return jax.lax.scan(body, carry, t0 + jnp.arange(CHUNK))


def run(
    net: Network, sc: Scalars, x0, *, steps: int, L: int, M: int, names: tuple[str, ...], convention, t0: int = 0
) -> dict:
    """The expansion along ``steps`` loop steps t0, t0 + 1, … from a deterministic state x0 (the state after loop
    step t0 − 1; with t0 = 0 the first token's, an empty window) (theory: docs/theory/fluctuations.md §2)::

        Σ_{t+1} = J_t Σ_t J_tᵀ + Q_t,   β_{t+1} = J_t β_t + ½ ∂²_x F_t : Σ_t + ½ ∂²_ξ F_t : D_t.

    Returns:
        dict of numpy arrays: ``mean`` (steps, K, M) the mean-field records, ``bias`` (steps, K, M) N × their
        O(1/N) bias, ``cov`` (steps, K·M, K·M) N × their covariance, ``x`` (steps, D) the mean-field states.
    """
    D = x0.shape[0]
    carry = (x0, jnp.zeros((D, D), x0.dtype), jnp.zeros(D, x0.dtype))
    parts = []
    for t in range(t0, t0 + steps, CHUNK):
        carry, out = _run_block(net, sc, carry, jnp.asarray(t), L=L, M=M, names=names, convention=convention)
        parts.append({k: np.asarray(v) for k, v in out.items()})
    return {k: np.concatenate([p[k] for p in parts])[:steps] for k in parts[0]}


@partial(jax.jit, static_argnames=("L", "M"))
def cycle_moments(net: Network, sc: Scalars, xs, ts, *, L: int, M: int) -> Moments:
    """:class:`Moments` at every phase of a cycle of mean-field states xs (p, D) entered at loop steps ts (p,),
    with a full window."""
    return jax.vmap(lambda x, t: moments(net, sc, x, t, jnp.asarray(L), L, M))(xs, ts)


@partial(jax.jit, static_argnames=("L", "M"))
def cycle_curvature(net: Network, sc: Scalars, xs, ts, Sigmas, *, L: int, M: int) -> jax.Array:
    """:func:`curvature` at every phase of a cycle (p, D), with Σ (p, D, D) the covariance entering each."""
    return jax.vmap(lambda x, t, S: curvature(net, sc, x, t, jnp.asarray(L), S, L, M))(xs, ts, Sigmas)


def monodromy(J) -> np.ndarray:
    """Φ = J_{p−1}⋯J_0 of the Jacobians (p, D, D) of a cycle."""
    J = np.asarray(J, np.float64)
    Phi = np.eye(J.shape[1])
    for Jk in J:
        Phi = Jk @ Phi
    return Phi


def stationary_covariance(J, Q) -> np.ndarray:
    """The stationary covariance on a cycle of p phases (theory: docs/theory/fluctuations.md §3): with the
    monodromy Φ, the covariance entering phase 0 solves the discrete Lyapunov equation Σ_0 = Φ Σ_0 Φᵀ + Q̄,
    Q̄ = Σ_k Φ_{k+1} Q_k Φ_{k+1}ᵀ (Φ_{k+1} = J_{p−1}⋯J_{k+1}), and is carried phase by phase.

    Args:
        J, Q: (p, D, D); phase k maps the state after step k − 1 to the state after step k.

    Returns:
        (p + 1, D, D): N × the covariance entering phase 0, then after each phase (the last equals the first).

    Raises:
        ValueError: the cycle is not linearly stable (spectral radius of Φ ≥ 1).
    """
    import scipy.linalg

    J, Q = np.asarray(J, np.float64), np.asarray(Q, np.float64)
    Phi = monodromy(J)
    rho = float(np.max(np.abs(np.linalg.eigvals(Phi))))
    if not rho < 1.0:
        raise ValueError(f"the cycle is not linearly stable (spectral radius of its monodromy {rho:.6g} >= 1)")
    Qbar = np.zeros_like(Phi)
    for Jk, Qk in zip(J, Q, strict=True):  # one cycle from Σ = 0
        Qbar = Jk @ Qbar @ Jk.T + Qk
    S = scipy.linalg.solve_discrete_lyapunov(Phi, Qbar)
    out = [0.5 * (S + S.T)]
    for Jk, Qk in zip(J, Q, strict=True):
        out.append(Jk @ out[-1] @ Jk.T + Qk)
    return np.stack(out)


def stationary_bias(J, r) -> np.ndarray:
    """The stationary bias on a cycle (theory: docs/theory/fluctuations.md §3): β_{k+1} = J_k β_k + r_k with
    r_k the phase's second-order drift, periodic: (I − Φ) β_0 = Σ_k Φ_{k+1} r_k.

    Args:
        J: (p, D, D). r: (p, D).

    Returns:
        (p + 1, D): N × the bias entering phase 0, then after each phase.
    """
    J, r = np.asarray(J, np.float64), np.asarray(r, np.float64)
    rbar = np.zeros(J.shape[1])
    for Jk, rk in zip(J, r, strict=True):
        rbar = Jk @ rbar + rk
    out = [np.linalg.solve(np.eye(J.shape[1]) - monodromy(J), rbar)]
    for Jk, rk in zip(J, r, strict=True):
        out.append(Jk @ out[-1] + rk)
    return np.stack(out)


@partial(jax.jit, static_argnames=("L", "M"))
def _orbit_block(net: Network, sc: Scalars, x, t0, *, L: int, M: int):
    def body(x, t):
        x1 = step(net, sc, x, jnp.zeros(4 * M, x.dtype), t, jnp.minimum(t, L), L, M)
        return x1, x1

    return jax.lax.scan(body, x, t0 + jnp.arange(CHUNK))


def orbit(net: Network, sc: Scalars, x0, *, steps: int, L: int, M: int) -> np.ndarray:
    """The mean-field states after each of ``steps`` loop steps from x0 with an empty window: (steps, D)."""
    parts, x = [], x0
    for t0 in range(0, steps, CHUNK):
        x, xs = _orbit_block(net, sc, x, jnp.asarray(t0), L=L, M=M)
        parts.append(np.asarray(xs))
    return np.concatenate(parts)[:steps]

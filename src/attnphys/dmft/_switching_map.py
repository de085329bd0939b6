"""The finite network as a noisy map of the rare-event toolkit (theory: docs/theory/switching.md §1).

The finite network of :mod:`attnphys.dmft.finite` depends on a sampled token only through the class sums of
its semantic bits: with C weight classes (share f_c of the N semantic bits, n_c = f_c N bits each) the new
token's semantic overlaps are (1 − ε) Σ_c f_c W_c m_c, m_c the mean of the class's bits, and the class means
of the L tokens in the window determine everything the next step reads. The state of the map is therefore

    z = (m_{t−1}, m_{t−2}, …, m_{t−L}) ∈ [−1, 1]^{L·C}   (row 0 the newest token),

with the auxiliary state t mod L (the positional code of the next token). One step computes the overlaps of
the window, the attention output A_t and the class fields h_c = β_o s_o W^o_c · A_t, and draws the new
token's class means, of mean μ_c = tanh h_c:

    m_{t,c} = μ_c + d_c,   n_c (1 + m_{t,c}) / 2 ~ Binomial(n_c, (1 + μ_c)/2).

With ε = 1/N the increment is d = √ε B η: B (L·C, C) is zero except its first C rows, diag √((1 − μ_c²)/f_c),
so that the covariance of one step is (1 − μ_c²)/n_c per class (the linear-noise law, :class:`ClassNoise`).
The exact law of the class sums (:class:`BinomialNoise`) has, per step, the large-deviation rate
(Cramér's theorem for each class)

    ℓ(η) = Σ_c f_c I(μ_c + s_c η_c; μ_c),   s_c = √((1 − μ_c²)/f_c),
    I(m; μ) = (1 + m)/2 ln((1 + m)/(1 + μ)) + (1 − m)/2 ln((1 − m)/(1 − μ)),

whose quadratic part is ½|η|². The overlaps of the window, :func:`overlap_state`, are the state of the
linear-noise expansion (:mod:`attnphys.dmft._linear_noise`): the map with zero noise is its mean-field map.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlogy

from attnphys.dmft import _linear_noise as ln
from attnphys.dmft.meanfield import Scalars, attention
from attnphys.dynamics import AbstractNoise
from attnphys.dynamics.maps import AbstractMap

THEORY = "docs/theory/switching.md"


def window_overlaps(net: ln.Network, sc: Scalars, z, t, L: int):
    """The overlaps of the window's tokens from their class means (theory: docs/theory/switching.md §1).

    Args:
        net: the network's classes. sc: the scalars. z: (L, C) class means, row 0 the token of loop step
            t − 1. t: the next loop step (its positional code is the next token's). L: the window.

    Returns:
        (se (L, 4, M) the semantic overlaps (1 − ε) Σ_c f_c W_c m_c, m (L, 4, M) with the positional parts).
    """
    se = (1.0 - sc.eps) * jnp.einsum("xmc,c,lc->lxm", net.W, net.frac, z)
    pe = jax.vmap(lambda k: ln.positional(net, sc, t - 1 - k, L))(jnp.arange(L))
    return se, se + pe


def attention_of(net: ln.Network, sc: Scalars, z, t, L: int) -> jax.Array:
    """A_t (M,): the attention output of the full window z (L, C) entered at loop step t (theory:
    docs/theory/switching.md §1): softmax_d(γ m^k_d · m^q_0) weights on the value overlaps m^v_d."""
    _, m = window_overlaps(net, sc, z, t, L)
    return attention(sc.gamma, m[:, 3], m[0, 2], m[:, 1], jnp.asarray(L))[1]


def class_means(net: ln.Network, sc: Scalars, z, t, L: int) -> jax.Array:
    """μ_c = tanh(β_o s_o W^o_c · A_t) (C,): the mean of the next token's class means given the window."""
    return jnp.tanh(ln.class_fields(net, sc, attention_of(net, sc, z, t, L)))


def overlap_state(net: ln.Network, sc: Scalars, x, t, L: int) -> jax.Array:
    """The state (A_t, mv, mk, se0) of the linear-noise expansion (D = M + 2LM + 4M,) of the map's state x
    (L·C,) entered at loop step t (theory: docs/theory/switching.md §1; docs/theory/fluctuations.md §1)."""
    C = net.W.shape[-1]
    z = x.reshape(L, C)
    se, m = window_overlaps(net, sc, z, t, L)
    A = attention(sc.gamma, m[:, 3], m[0, 2], m[:, 1], jnp.asarray(L))[1]
    return ln.pack(A, m[:, 1], m[:, 3], se[0])


def class_state(net: ln.Network, sc: Scalars, mv, mk, t, L: int) -> jax.Array:
    """The class means (L·C,) of a full window given by its value and key overlaps mv, mk (L, M) entered at
    loop step t: the least-squares inverse of (mv, mk) = (1 − ε) W^{v,k} diag(f) m + positional parts, exact
    when the (2M, C) matrix has rank C (theory: docs/theory/switching.md §1)."""
    C = net.W.shape[-1]
    G = (1.0 - sc.eps) * jnp.concatenate([net.W[1], net.W[3]]) * net.frac  # (2M, C)
    pe = jax.vmap(lambda k: ln.positional(net, sc, t - 1 - k, L))(jnp.arange(L))  # (L, 4, M)
    rhs = jnp.concatenate([mv - pe[:, 1], mk - pe[:, 3]], axis=1)  # (L, 2M)
    z = jnp.linalg.lstsq(G, rhs.T)[0].T
    return z.reshape(L * C)


@dataclass(frozen=True)
class NetworkMap(AbstractMap):
    """The finite network's mean-field map on the class means of its window (theory: docs/theory/switching.md
    §1): x = vec z (L·C,), aux = t mod L (int32), params = (:class:`~attnphys.dmft._linear_noise.Network`,
    :class:`~attnphys.dmft.meanfield.Scalars`)::

        z' = [μ(z, t); z_0; …; z_{L−2}],   μ_c = tanh(β_o s_o W^o_c · A_t(z)),   t' = t + 1 mod L.

    With the noise of :class:`ClassNoise` or :class:`BinomialNoise` it is the finite network itself.
    """

    L: int
    C: int

    def step(self, x, aux, params):
        net, sc = params
        z = x.reshape(self.L, self.C)
        mu = class_means(net, sc, z, aux, self.L)
        return jnp.concatenate([mu, x[: (self.L - 1) * self.C]]), (aux + 1) % self.L

    def observe(self, x, aux, params):
        net, sc = params
        return attention_of(net, sc, x.reshape(self.L, self.C), aux, self.L)


@dataclass(frozen=True)
class ClassNoise(AbstractNoise):
    """The linear-noise (Gaussian) law of the class sums (theory: docs/theory/switching.md §1, §3): the factor
    B (L·C, C), zero but for its first C rows diag √((1 − μ_c²)/f_c), so that at ε = 1/N the new token's class
    means have covariance diag((1 − μ_c²)/n_c); ℓ(η) = ½|η|²."""

    L: int
    C: int

    def scales(self, x, aux, params) -> tuple[jax.Array, jax.Array]:
        """(μ (C,), s (C,)): the class means' mean and the standard deviations √((1 − μ_c²)/f_c) at ε = 1."""
        net, sc = params
        mu = class_means(net, sc, x.reshape(self.L, self.C), aux, self.L)
        return mu, jnp.sqrt((1.0 - mu * mu) / net.frac)

    def factor(self, x, aux, params):
        _, s = self.scales(x, aux, params)
        return jnp.zeros((self.L * self.C, self.C), x.dtype).at[: self.C].set(jnp.diag(s))


def cramer_rate(m, mu) -> jax.Array:
    """I(m; μ) = (1 + m)/2 ln((1 + m)/(1 + μ)) + (1 − m)/2 ln((1 − m)/(1 − μ)) elementwise, +∞ outside
    [−1, 1]: the rate of the mean of ±1 bits of mean μ (theory: docs/theory/switching.md §3)."""
    inside = jnp.abs(m) <= 1.0
    mc = jnp.clip(m, -1.0, 1.0)
    val = 0.5 * (xlogy(1.0 + mc, 1.0 + mc) - xlogy(1.0 + mc, 1.0 + mu)) + 0.5 * (
        xlogy(1.0 - mc, 1.0 - mc) - xlogy(1.0 - mc, 1.0 - mu)
    )
    return jnp.where(inside, val, jnp.inf)


@dataclass(frozen=True)
class BinomialNoise(ClassNoise):
    """The exact law of the class sums (theory: docs/theory/switching.md §3): the same factor as
    :class:`ClassNoise`, the rate ℓ(η) = Σ_c f_c I(μ_c + s_c η_c; μ_c) (per class, Cramér's theorem for n_c
    bits, divided by N) and the sampler n_c (1 + m_c)/2 ~ Binomial(n_c, (1 + μ_c)/2) with N = 1/scale²,
    n_c = round(f_c N): with it the map is the finite network of :mod:`attnphys.dmft.finite`."""

    def rate(self, eta, x, aux, params):
        net, _ = params
        mu, s = self.scales(x, aux, params)
        return jnp.sum(net.frac * cramer_rate(mu + s * eta, mu))

    def sample(self, x, aux, params, key, scale):
        net, _ = params
        mu, _ = self.scales(x, aux, params)
        n = jnp.round(net.frac / (scale * scale))
        ones = jax.random.binomial(key, n, 0.5 * (1.0 + mu)).astype(mu.dtype)
        d = 2.0 * ones / n - 1.0 - mu
        return jnp.zeros(self.L * self.C, mu.dtype).at[: self.C].set(d)


def network_params(cfg, beta_o: float | None = None) -> tuple[ln.Network, Scalars]:
    """(net, sc): the classes of the configuration's finite network (one per distinct weight column; the shares
    do not depend on N) and its scalars, at ``beta_o`` when given (theory: docs/theory/switching.md §1)."""
    from attnphys.dmft.finite import repeated_network
    from attnphys.dmft.model import DMFTModel

    if beta_o is not None:
        cfg = cfg.with_field("beta_o", float(beta_o))
    net = ln.network_of(repeated_network(cfg, cfg.n_se))
    model = DMFTModel.of(cfg)
    sc = jax.tree_util.tree_map(lambda a: jnp.asarray(a[0], jnp.float64), model.scalars(n=1))
    return net, sc


def params_function(cfg) -> Any:
    """β_o ↦ (net, sc) for continuation in β_o (theory: docs/theory/switching.md §1): the scalars of the
    model's own parameter function, the classes fixed."""
    from attnphys.dmft.model import DMFTModel

    net, _ = network_params(cfg)
    pf = DMFTModel.of(cfg).params_of("beta_o")

    def params(b):
        return net, pf(b)[1]

    return params


def finite_state(net: ln.Network, sc: Scalars, x, t, L: int):
    """The :class:`~attnphys.dmft.finite.FiniteState` of the map's state x (L·C,) entered at loop step t (a
    full window), so that :func:`attnphys.dmft.finite.finite_step` continues from it (theory:
    docs/theory/switching.md §1)."""
    from attnphys.dmft.finite import FiniteState

    M = net.W.shape[1]
    A, mv, mk, _ = ln.unpack(overlap_state(net, sc, jnp.asarray(x), t, L), L, M)
    return FiniteState(mv, mk, jnp.asarray(L, jnp.int32), A, jnp.asarray(t, jnp.int32))


def as_numpy(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)

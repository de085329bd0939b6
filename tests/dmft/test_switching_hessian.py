"""The quadratic part of the finite network's quasi-potential near an attractor is the inverse of the stationary
covariance of its linear-noise expansion (theory: docs/theory/switching.md §4; docs/theory/rare_events.md §3)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dmft import _linear_noise as ln
from attnphys.dmft import _switching_map as sm
from attnphys.dmft import preset
from attnphys.dynamics import least_action_path


@pytest.fixture(scope="module")
def cycle():
    """At beta_o = 1.0 the paper's network settles on a cycle of the positional drive (period L = 4), its slowest
    multiplier 0.72 per period: the covariance is far from the one step's noise."""
    with jax.enable_x64(True):
        cfg = preset("paper", beta_o=1.0)
        net, sc = sm.network_params(cfg)
        L, M, C = cfg.L, cfg.M, int(net.W.shape[-1])
        m = sm.NetworkMap(L, C)
        step = jax.jit(lambda x, a: m.step(x, a, (net, sc)))
        x, a = jnp.zeros(L * C), jnp.asarray(0, jnp.int32)
        for _ in range(2000):
            x, a = step(x, a)
        zs, ts = [], []
        for _ in range(L):
            zs.append(np.asarray(x))
            ts.append(int(a))
            x, a = step(x, a)
        assert np.max(np.abs(np.asarray(x) - zs[0])) < 1e-13  # a cycle of period L
        yield cfg, net, sc, L, M, C, m, np.stack(zs), ts


def _class_covariance(net, sc, zs, ts, L, M):
    """N × the stationary covariance of the class state at phase 0, from the expansion of the overlaps
    (docs/theory/fluctuations.md §3): Σ = G P Gᵀ with G the Jacobian of the overlaps in the class means."""
    X = jnp.stack([sm.overlap_state(net, sc, jnp.asarray(z), t, L) for z, t in zip(zs, ts, strict=True)])
    T = jnp.asarray(ts)
    # phase k maps the state after step k - 1 (entered at loop step ts[k]) to the state after step k
    mom = ln.cycle_moments(net, sc, X, T, L=L, M=M)
    Sig = ln.stationary_covariance(np.asarray(mom.J), np.asarray(mom.Q))[0]
    G = np.asarray(jax.jacfwd(lambda z: sm.overlap_state(net, sc, z, ts[0], L))(jnp.asarray(zs[0])))
    Gp = np.linalg.pinv(G)
    assert np.linalg.matrix_rank(G) == zs.shape[1]
    P = Gp @ Sig @ Gp.T
    np.testing.assert_allclose(G @ P @ G.T, Sig, atol=1e-8 * np.max(np.abs(Sig)))  # Σ lies in the range of G
    return P


@pytest.mark.slow
def test_quasi_potential_hessian_is_the_inverse_linear_noise_covariance(cycle):
    cfg, net, sc, L, M, C, m, zs, ts = cycle
    with jax.enable_x64(True):
        P = _class_covariance(net, sc, zs, ts, L, M)
        Pinv = np.linalg.inv(P)
        rng = np.random.default_rng(1)
        r = 2e-3
        rel = []
        units = [u / np.linalg.norm(u) for u in rng.normal(size=(2, L * C))]
        for u in units:
            V = []
            for sign in (1.0, -1.0):
                ds = least_action_path(
                    m, sm.ClassNoise(L, C), zs[0], zs[0] + sign * r * u, (net, sc),
                    aux0=jnp.asarray(ts[0], jnp.int32), period=L, b_aux=jnp.asarray(ts[0], jnp.int32),
                    phases=[0], steps=32, max_steps=256, tol=1e-7, refine_a=False, jitter=0.0,
                )  # fmt: skip
                V.append(float(ds["action"]))
            form = (V[0] + V[1]) / r**2
            want = float(u @ Pinv @ u)
            rel.append(abs(form - want) / want)
        assert max(rel) < 0.05, rel
        # negative control: one period of noise without its accumulation over earlier periods (the Gramian of
        # the last L steps, finite by the shift of the window) gives another form
        W = np.zeros((L * C, L * C))
        for z, t in zip(zs, ts, strict=True):
            x, a = jnp.asarray(z), jnp.asarray(t, jnp.int32)
            J = np.asarray(m.jacobian(x, a, (net, sc)))
            B = np.asarray(sm.ClassNoise(L, C).factor(x, a, (net, sc)))
            W = J @ W @ J.T + B @ B.T
        Winv = np.linalg.inv(W)
        off = [abs(float(u @ Winv @ u) - float(u @ Pinv @ u)) / float(u @ Pinv @ u) for u in units]
        assert max(off) > 0.05, off

"""Tangent dynamics of the designed map against finite differences of the map: Jacobian products,
Lyapunov spectra and Floquet multipliers (theory: docs/theory/designed.md §3.2). No reference exponents
exist; a central difference of the step is an independent derivative."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dmft.designed import DesignedModel, designed_config
from attnphys.dynamics._lyapunov import lyapunov
from attnphys.dynamics.periodic import floquet, refine

H = 1e-6


def setup(name, beta_o, gamma, epsilon, transient):
    model = DesignedModel.of(designed_config(name, beta_o=beta_o, gamma=gamma, epsilon=epsilon))
    sc = model.scalars(n=1)
    win = jax.tree_util.tree_map(lambda a: a[0], model.windows_after("token", sc, transient))
    m = model.map()
    x, aux = m.state(win)
    return m, x, aux, (model.couplings, jax.tree_util.tree_map(lambda a: a[0], sc))


def fd_jacobian(m, x, aux, par):
    """Central differences of the step, column by column."""

    def col(e):
        return (m.step(x + H * e, aux, par)[0] - m.step(x - H * e, aux, par)[0]) / (2 * H)

    return jax.vmap(col, out_axes=1)(jnp.eye(x.shape[0], dtype=x.dtype))


fd_jacobian_jit = jax.jit(fd_jacobian, static_argnums=0)


@jax.jit(static_argnums=0)
def fd_step(m, x, aux, par):
    """(finite-difference Jacobian at x, next state)."""
    return fd_jacobian(m, x, aux, par), m.step(x, aux, par)


def fd_spectrum(m, x, aux, par, steps, k, align):
    """Benettin/QR exponents with finite-difference Jacobians (numpy QR, no toolkit code) from the first k
    unit vectors, averaged after ``align`` steps."""
    Q = np.eye(x.shape[0])[:, :k]
    S = np.zeros(k)
    for t in range(align + steps):
        J, (x, aux) = fd_step(m, x, aux, par)
        Q, R = np.linalg.qr(np.asarray(J) @ Q)
        if t >= align:
            S += np.log(np.abs(np.diag(R)))
    return np.sort(S / steps)[::-1]


POINTS = [
    ("4_duplicity_loop_4", 3.0, 20.0, 0.2),
    ("4_no_duplicity", 2.0, 8.0, 0.3),
    ("4_duplicity_loop_1", 3.0, 20.0, 0.2),
]


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS)
def test_tangents_equal_finite_differences(point):
    """J·Q by forward-mode products equals the central difference of the step, on the transient and on
    the settled orbit (relative 1e-6)."""
    for transient in (3, 300):
        m, x, aux, par = setup(*point, transient)
        Q = jnp.asarray(np.random.default_rng(1).standard_normal((x.shape[0], 5)))
        _, _, JQ = m.tangent(x, aux, par, Q)
        ref = np.asarray(fd_jacobian_jit(m, x, aux, par)) @ np.asarray(Q)
        scale = max(1.0, float(np.max(np.abs(ref))))
        np.testing.assert_allclose(np.asarray(JQ), ref, atol=1e-6 * scale)


SLOW_SECOND = [POINTS[0], pytest.param(POINTS[1], marks=[pytest.mark.slow, pytest.mark.long])]


@pytest.mark.slow
@pytest.mark.parametrize("point", SLOW_SECOND)
def test_lyapunov_spectrum_equals_finite_difference_spectrum(point):
    """The toolkit's Benettin spectrum of the designed map equals the same QR iteration on
    finite-difference Jacobians along the same orbit, from the same unit vectors (leading three, 1e-6)."""
    m, x, aux, par = setup(*point, 20)
    res = lyapunov(m, x, aux, par, steps=100, k=3, align=20, init="identity")
    ours = np.sort(np.asarray(res.exponents))[::-1]
    np.testing.assert_allclose(ours, fd_spectrum(m, x, aux, par, 100, 3, 20), atol=1e-6)
    assert ours[0] < 0  # the designed cycle attracts


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS[:2])
@pytest.mark.long
def test_floquet_multipliers_equal_eigenvalues_of_the_finite_difference_monodromy(point):
    m, x, aux, par = setup(*point, 400)
    orb = refine(m, x, aux, par, 4)
    assert bool(orb.converged) and int(orb.period) == 4
    fl = floquet(m, orb, params=par, leading=3)
    k = int(fl.resolved)
    assert k >= 2
    M = np.eye(x.shape[0])
    xi, ai = orb.x, orb.aux
    for _ in range(4):
        M = np.asarray(fd_jacobian_jit(m, xi, ai, par)) @ M
        xi, ai = m.step(xi, ai, par)
    mu = np.sort(np.abs(np.linalg.eigvals(M)))[::-1]
    np.testing.assert_allclose(np.exp(np.asarray(fl.log_abs)[:k]), mu[:k], rtol=1e-5)
    # and the Benettin exponents on the orbit are the Floquet exponents
    res = lyapunov(m, orb.x, orb.aux, par, steps=200, k=1, align=200)
    np.testing.assert_allclose(np.asarray(res.exponents)[0], np.asarray(fl.log_abs)[0] / 4, atol=1e-8)

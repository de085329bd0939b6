"""Stable and unstable manifolds of the Hénon map's saddle fixed point (theory: docs/theory/dynamics.md §11.5):
tangent to the eigenvectors at the point, invariant (two fundamental domains give the same curve; Newton
preimages agree with the map's exact inverse), and the unstable manifold carries the chaotic attractor."""

import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dynamics import invariant_manifold
from attnphys.dynamics.maps import HENON, LOGISTIC
from attnphys.errors import InputError

A, B = 1.4, 0.3
P = jnp.array([A, B])
X_STAR = (-(1 - B) + np.sqrt((1 - B) ** 2 + 4 * A)) / (2 * A)


def _inverse(z):
    """(x, y) = F(u, v) = (1 − a u² + v, b u)  ⇒  u = y/b, v = x − 1 + a u²."""
    u = z[1] / B
    return jnp.stack([u, z[0] - 1 + A * u**2])


def _distance_to_polyline(Q: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Distance of every point of Q (m, 2) to the polyline C (n, 2)."""
    a, b = C[:-1], C[1:]
    ab = b - a
    t = np.clip(np.einsum("mnd,nd->mn", Q[:, None] - a[None], ab) / np.sum(ab * ab, axis=1), 0, 1)
    nearest = a[None] + t[..., None] * ab[None]
    return np.min(np.linalg.norm(Q[:, None] - nearest, axis=-1), axis=1)


@pytest.mark.parametrize("kind", ["unstable", "stable"])
def test_tangent_to_eigenvector(kind):
    ds = invariant_manifold(HENON, jnp.array([0.6, 0.2]), P, kind=kind, pieces=3)
    np.testing.assert_allclose(ds["fixed_point"].values, [X_STAR, B * X_STAR], atol=1e-14)
    J = np.array([[-2 * A * X_STAR, 1.0], [B, 0.0]])
    mu, V = np.linalg.eig(J)
    i = int(np.argmax(np.abs(mu))) if kind == "unstable" else int(np.argmin(np.abs(mu)))
    assert ds.attrs["multiplier"] == pytest.approx(mu[i] ** 2 if mu[i] < 0 else mu[i], rel=1e-12)
    v = V[:, i] / np.linalg.norm(V[:, i])
    # the first piece is the linear domain: its chords from x* are along v up to O(δ)
    d = ds["points"].values[:, 0] - ds["fixed_point"].values
    cosines = np.abs(d @ v) / np.linalg.norm(d, axis=-1)
    assert np.all(1 - cosines < 1e-10)


def test_unstable_manifold_invariant_under_a_shifted_domain():
    """A fundamental domain shifted by half a piece gives points that lie on the first curve."""
    one = invariant_manifold(HENON, jnp.array([0.6, 0.2]), P, pieces=8, points=200)
    mult = one.attrs["multiplier"]
    two = invariant_manifold(HENON, jnp.array([0.6, 0.2]), P, pieces=7, points=200, delta=1e-7 * np.sqrt(mult))
    for b in range(2):
        C = one["points"].values[b].reshape(-1, 2)
        Q = two["points"].values[b, :6].reshape(-1, 2)
        assert _distance_to_polyline(Q, C).max() < 1e-10
    assert one.attrs["seam"] < 1e-7


def test_stable_manifold_newton_matches_exact_inverse():
    newton = invariant_manifold(HENON, jnp.array([0.6, 0.2]), P, kind="stable", pieces=6)
    exact = invariant_manifold(HENON, jnp.array([0.6, 0.2]), P, kind="stable", pieces=6, inverse=_inverse)
    assert newton.attrs["max_residual"] < 1e-10
    np.testing.assert_allclose(newton["points"].values, exact["points"].values, rtol=0, atol=1e-10)


def test_attractor_lies_on_the_unstable_manifold():
    """The Hénon attractor is the closure of the saddle's unstable manifold: attractor points are close to it."""
    ds = invariant_manifold(HENON, jnp.array([0.6, 0.2]), P, pieces=10, points=500, delta=1e-4)
    z = np.array([0.1, 0.1])
    pts = []
    for t in range(1200):
        z = np.array([1 - A * z[0] ** 2 + z[1], B * z[0]])
        if t >= 1000:
            pts.append(z)
    C = ds["points"].values.reshape(2, -1, 2)
    d = np.minimum(_distance_to_polyline(np.array(pts), C[0]), _distance_to_polyline(np.array(pts), C[1]))
    assert np.quantile(d, 0.9) < 1e-3 and d.max() < 2e-2


def test_bad_arguments_are_named():
    with pytest.raises(InputError, match="kind"):
        invariant_manifold(HENON, jnp.array([0.6, 0.2]), P, kind="both")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="inverse"):
        invariant_manifold(HENON, jnp.array([0.6, 0.2]), P, inverse=_inverse)
    # the logistic map's fixed point at r = 4 is a repeller: no stable direction
    with pytest.raises(InputError, match="saddle"):
        invariant_manifold(LOGISTIC, jnp.array([0.7]), jnp.asarray(4.0), kind="stable")


def test_unstable_branches_run_to_the_two_coexisting_attractors():
    """x ↦ a x − x³, a = 1.5: the saddle 0 (multiplier a) sits between the attractors ±√(a − 1); the two branches
    of its unstable manifold end on them."""
    from attnphys.dynamics.maps import BISTABLE

    ds = invariant_manifold(BISTABLE, jnp.array([0.01]), jnp.asarray(1.5), pieces=60, points=20)
    ends = ds["points"].values[:, -1, -1, 0]
    np.testing.assert_allclose(ends, [np.sqrt(0.5), -np.sqrt(0.5)], atol=1e-12)
    assert ds.attrs["multiplier"] == pytest.approx(1.5, rel=1e-12)
    # monotone along each branch (up to the seams between pieces, O(δ²)): the interval between the attractors
    flat = ds["points"].values[..., 0].reshape(2, -1)
    back = ds.attrs["seam"] + 1e-15
    assert np.all(np.diff(flat[0]) >= -back) and np.all(np.diff(flat[1]) <= back)
    assert ds.attrs["seam"] < 1e-13


def test_a_manifold_running_to_infinity_is_reported():
    """The Hénon saddle's stable manifold is unbounded: enough preimages overflow, and the piece is named."""
    from attnphys.errors import NonFiniteError

    with pytest.raises(NonFiniteError, match="stable manifold piece"):
        invariant_manifold(HENON, jnp.array([0.6, 0.2]), P, kind="stable", pieces=40, points=10, inverse=_inverse)

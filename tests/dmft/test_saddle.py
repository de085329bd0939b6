"""The saddle between the paper network's coexisting period-28 and period-56 attractors at (β_o, β_att) =
(1.27, 2.2) (theory: docs/theory/dmft.md §7.9; docs/theory/dynamics.md §11.5–11.6): a period-28 orbit with one
unstable multiplier, reached by continuing the period-28 attractor up in β_o past its folds; its unstable
manifold's two branches end on the two attractors, the starts x* ± ε v_u reach different ones, and edge tracking
between the attractors converges to it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dmft import preset
from attnphys.dmft.model import model_of
from attnphys.dynamics import continue_orbit, edge_track, invariant_manifold
from attnphys.dynamics.classify import detect_period
from attnphys.dynamics.periodic import monodromy, refine

BETA_O, P, SETTLE = 1.27, 28, 56_000


@pytest.mark.slow
def test_the_period_28_saddle_separates_the_coexisting_attractors():
    model = model_of(preset("paper", beta_o=BETA_O))
    pf = model.params_of("beta_o")
    params = pf(jnp.asarray(BETA_O))
    m = model.map()
    sc_b = jax.tree_util.tree_map(lambda a: jnp.asarray(a)[None], params[1])
    xc, aux_c = m.state(jax.tree_util.tree_map(lambda a: a[0], model.windows_after("checkpoint", sc_b, 0)))

    @jax.jit
    def run(x, aux, n):
        return jax.lax.fori_loop(0, n, lambda _, c: m.step(c[0], c[1], params), (x, aux))

    @jax.jit
    def cycle(x, aux):
        def body(c, _):
            y, a = m.step(c[0], c[1], params)
            return (y, a), jnp.concatenate([c[0], c[1][0].reshape(-1)])

        return jax.lax.scan(body, (x, aux), None, length=512)[1]

    # the two attractors, from 32 states around the checkpoint's
    X = np.asarray(xc)[None] + 0.3 * np.asarray(
        jax.random.uniform(jax.random.PRNGKey(0), (32, xc.size), minval=-1, maxval=1)
    )
    ends, aux_end = jax.vmap(lambda x: run(x, aux_c, SETTLE))(jnp.asarray(X))
    aux0 = jax.tree_util.tree_map(lambda t: t[0], aux_end)
    att = {}
    for k in range(32):
        ys = np.asarray(cycle(ends[k], aux0))
        p = int(detect_period(ys, max_period=128, confirmations=3))
        att.setdefault(p, ys[:p, : xc.size])
    assert set(att) == {P, 2 * P}
    A1, A2 = att[P], att[2 * P]

    def dist(y, A):
        return float(np.min(np.linalg.norm(A - np.asarray(y)[None], axis=1)))

    # the saddle: the attractor's branch continued up in beta_o comes back to 1.27 unstable
    br = continue_orbit(
        m, jnp.asarray(A1[0]), aux0, pf, BETA_O, 1.30, period=P, ds=1e-4, ds_max=2e-3, max_steps=150, past_folds=True
    )
    assert br.s[-1] == pytest.approx(BETA_O, abs=1e-12)
    assert [e.kind for e in br.events][:3] == ["flip", "flip", "fold"]
    orb = refine(m, jnp.asarray(br.x[-1]), aux0, params, P)
    assert bool(orb.converged) and float(orb.residual) < 1e-12
    xs, saddle = np.asarray(orb.x), np.asarray(orb.points)[:P]
    mu, V = np.linalg.eig(np.asarray(monodromy(m, jnp.asarray(xs), aux0, params, P)))
    o = np.argsort(-np.abs(mu))
    mu = mu[o]
    assert np.sum(np.abs(mu) > 1) == 1
    assert mu[0].real == pytest.approx(2.8316, abs=1e-3) and abs(mu[0].imag) < 1e-12
    assert dist(xs, A1) > 0.05 and dist(xs, A2) > 0.005  # a third orbit, not a point of either attractor
    vu = np.real(V[:, o[0]])
    vu /= np.linalg.norm(vu)

    # the two branches of its unstable manifold end on the two attractors
    man = invariant_manifold(m, xs, params, aux0=aux0, period=P, pieces=200, points=16)
    e0, e1 = man["points"].values[:, -1, -1]
    near = sorted([(dist(e0, A1), dist(e0, A2)), (dist(e1, A1), dist(e1, A2))])
    assert near[0][0] < 1e-9 and near[0][1] > 0.05  # one branch on the period-28 attractor
    assert near[1][1] < 1e-9 and near[1][0] > 0.05  # the other on the period-56 attractor

    # x* ± eps v_u reach different attractors: the stable manifold is the boundary
    eps = np.array([1e-8, 1e-5, 1e-2])
    pts = np.concatenate([xs + eps[:, None] * vu, xs - eps[:, None] * vu])
    fin, _ = jax.vmap(lambda x: run(x, aux0, SETTLE))(jnp.asarray(pts))
    fin = np.asarray(fin)
    plus = [dist(y, A2) < 1e-8 for y in fin[:3]]
    minus = [dist(y, A1) < 1e-8 for y in fin[3:]]
    assert all(plus) and all(minus)

    # edge tracking from the segment between a point of each attractor converges to the saddle orbit
    def classify(x, aux):
        y, _ = jax.vmap(lambda z: run(z, aux, SETTLE // 4))(jnp.asarray(x))
        return np.array([0 if dist(v, A1) < 1e-8 else (1 if dist(v, A2) < 1e-8 else -1) for v in np.asarray(y)])

    et = edge_track(m, A1[0], A2[0], params, aux=aux0, classify=classify, steps=1000, tol=1e-10, delta=1e-6)
    assert et.attrs["status"] == "done"
    d = np.min(np.linalg.norm(et["edge"].values[:, None] - saddle[None], axis=-1), axis=1)
    assert d[0] > 1e-3  # the first bisected point lies on the boundary, far from the saddle
    assert np.max(d[500:]) < 1e-6 and d[et["bisection_step"].values[-1]] < 1e-8

    # in the plane x* + c v_s + s v_u the boundary passes through the saddle tangent to v_s: s(c) ∝ c²
    vs = np.real(V[:, o[1]])
    vs /= np.linalg.norm(vs)
    cs = np.array([0.0, -0.005, -0.01])
    lo, hi = np.full(3, -0.01), np.full(3, 0.01)

    def line(s_):
        return xs[None] + cs[:, None] * vs[None] + s_[:, None] * vu[None]

    side = classify(line(lo), aux0)
    assert (side >= 0).all() and (side != classify(line(hi), aux0)).all()
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        same = classify(line(mid), aux0) == side
        lo, hi = np.where(same, mid, lo), np.where(same, hi, mid)
    s_c = 0.5 * (lo + hi)
    assert abs(s_c[0]) < 1e-10
    assert 3.0 < s_c[2] / s_c[1] < 5.0  # quadratic: 4 when c doubles

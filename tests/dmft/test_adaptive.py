"""Adaptive schedules of the orbit task: early stop on confirmed periodic orbits, Floquet exponents."""

import jax
import numpy as np
import pytest

from attnphys.dmft import preset
from attnphys.dmft.model import DMFTModel
from attnphys.dmft.simulate import Schedule, run_batch, run_segments
from attnphys.dmft.tasks import OrbitTask, _floquet
from attnphys.dynamics.periodic import monodromy
from attnphys.sweeps import Axis, Grid, Sweep, run_sweep

BETAS = (0.5, 1.0, 1.5, 2.0)
"""Paper preset: period-4 orbits at β_o = 0.5 and 1.0 (settled within a few thousand steps), chaos at 1.5
and 2.0."""


@pytest.fixture(scope="module")
def pair():
    cfg = preset("paper")
    grid = Grid(axes=(Axis(name="beta_o", values=BETAS),), chunk=4)
    out = {}
    for adaptive in (False, True):
        task = OrbitTask(config=cfg, start="checkpoint", steps=6000, transient=4000, lyapunov=3, n_orbit=200,
                         keep_orbit=True, keep_final=True, adaptive=adaptive, segment=1000,
                         classify_options={"max_period": 32})
        out[adaptive] = run_sweep(Sweep(grid=grid, task=task))
    return out[False], out[True]


@pytest.mark.slow
@pytest.mark.long
def test_labels_and_periods_equal_the_fixed_length_run(pair):
    fixed, adapt = pair
    np.testing.assert_array_equal(adapt.regime.values, fixed.regime.values)
    np.testing.assert_array_equal(adapt.period.values, fixed.period.values)
    stopped = adapt.stopped_early.values
    assert stopped.any() and not stopped.all()
    assert np.all(adapt.stop_step.values[stopped] < 6000) and np.all(adapt.stop_step.values[~stopped] == 6000)
    # a point that ran the full length is the fixed-length run, bitwise
    np.testing.assert_array_equal(adapt.exponents.values[~stopped], fixed.exponents.values[~stopped])
    np.testing.assert_array_equal(adapt.orbit.values[~stopped], fixed.orbit.values[~stopped])
    # a stopped point records the fixed run's window (same phase), to the classifier's tolerance
    np.testing.assert_allclose(adapt.orbit.values[stopped], fixed.orbit.values[stopped], atol=1e-8)


@pytest.mark.slow
@pytest.mark.long
def test_early_stopped_exponents_are_the_monodromy_eigenvalues(pair):
    _, adapt = pair
    i = int(np.flatnonzero(adapt.stopped_early.values)[0])
    assert adapt.floquet.values[i] and adapt.period.values[i] == 4
    cfg = preset("paper", beta_o=float(adapt.beta_o.values[i]))
    model = DMFTModel.of(cfg)
    m = model.map("mo_se")
    sc = jax.tree_util.tree_map(lambda a: a[0], model.scalars(None, n=1))
    fin = model.window_of(adapt.final_A.values[i], adapt.final_pe.values[i], int(adapt.final_n.values[i]))
    x, aux = m.state(fin)
    mu = np.linalg.eigvals(np.asarray(monodromy(m, x, aux, (model.couplings, sc), 4)))
    exact = np.sort(np.log(np.abs(mu)) / 4)[::-1][:3]
    np.testing.assert_allclose(adapt.exponents.values[i], exact, atol=1e-10)


@pytest.mark.slow
@pytest.mark.long
def test_new_variables_carry_cf_attrs(pair):
    _, adapt = pair
    for name in ("stopped_early", "stop_step", "floquet"):
        assert adapt[name].attrs["long_name"]
    assert adapt.stop_step.attrs["units"] == "step"


@pytest.mark.slow
def test_run_segments_is_bitwise_the_plain_engine():
    model = DMFTModel.of(preset("paper"))
    sc = model.scalars({"beta_o": np.asarray([0.5, 1.5, 2.0])}, n=3)
    st = model.initial_states("checkpoint", sc)
    ref, _, _ = run_batch(model.couplings, sc, st, Schedule(steps=700, transient=700, record=()), model.convention)
    seen = []

    def stop(rows, att, states, t):
        seen.append((rows.copy(), att.shape, t))
        return rows == 0  # retire lane 0 at the first check

    out, done, retired = run_segments(model.couplings, sc, st, 700, segment=300, window=50, stop=stop,
                                      convention=model.convention)
    np.testing.assert_array_equal(retired, [True, False, False])
    np.testing.assert_array_equal(done, [300, 700, 700])
    for a, b in zip(out[1:], ref[1:]):
        np.testing.assert_array_equal(np.asarray(a)[1:], np.asarray(b)[1:])
    assert seen[0][1] == (3, 50, 3) and seen[0][2] == 300 and list(seen[1][0]) == [1, 2]
    at300, _, _ = run_batch(model.couplings, sc, st, Schedule(steps=300, transient=300, record=()), model.convention)
    np.testing.assert_array_equal(np.asarray(out.A)[0], np.asarray(at300.A)[0])


@pytest.mark.slow
def test_leading_exponents_of_weakly_driven_fixed_points_are_the_monodromy_eigenvalues():
    """β_o → 0: fixed points (seen at period L = 4) whose leading multipliers are complex pairs with moduli
    close to the next ones; the top three exponents periodic_exponents accepts are the eigenvalues of the
    monodromy from ``jax.jacfwd`` (an acceptance on the moduli alone took unresolved columns, off by 1e-5)."""
    from attnphys.dynamics.classify import ClassifyOptions

    model = DMFTModel.of(preset("paper"))
    bo = np.asarray([0.0015, 0.003, 0.00525, 0.00675])
    sc = model.scalars({"beta_o": bo}, n=bo.size)
    st, _, _ = run_batch(model.couplings, sc, model.initial_states("checkpoint", sc),
                         Schedule(steps=4000, transient=4000, record=()), model.convention)
    m = model.map("mo_se")
    x, aux = m.state(st.window)
    ok, orb, ex = _floquet.periodic_exponents(m, model.couplings, x, aux, sc, np.full(bo.size, 4), 3,
                                           ClassifyOptions().theta)
    assert ok.all()
    for i in range(bo.size):
        sci = jax.tree_util.tree_map(lambda a: a[i], sc)
        xi, auxi = jax.tree_util.tree_map(lambda a: np.asarray(a)[i], (orb.x, orb.aux))
        mu = np.linalg.eigvals(np.asarray(monodromy(m, xi, auxi, (model.couplings, sci), 4)))
        np.testing.assert_allclose(ex[i], np.sort(np.log(np.abs(mu)) / 4)[::-1][:3], rtol=0, atol=1e-10)


def test_adaptive_refuses_continuation_chains():
    task = OrbitTask(config=preset("paper"), steps=3000, transient=2000, lyapunov=1, n_orbit=100, adaptive=True)
    grid = Grid(axes=(Axis(name="direction", values=("up",)), Axis(name="beta_o", values=(1.0, 1.1))), chunk=2)
    with pytest.raises(ValueError, match="cold starts"):
        task.check_grid(grid)


def test_blocks_give_the_rows_of_one_call(monkeypatch):
    monkeypatch.setattr(_floquet, "LANE_BLOCK", 3)  # blocks of 4 lanes (a power of two, two per device)
    rng = np.random.default_rng(0)
    tree = (rng.normal(size=(20, 5)), {"a": rng.normal(size=(20, 2, 3)), "b": (np.arange(20),)})
    calls = []

    def f(batch):
        x, aux = batch
        calls.append(x.shape[0])
        return {"x": np.tanh(x), "aux": {"a": aux["a"] * 2, "b": (aux["b"][0] + 1,)}}

    rows = np.asarray([3, 17, 0, 9, 9, 12, 5])
    got = _floquet.in_blocks(f, tree, rows)
    want = f(jax.tree_util.tree_map(lambda a: a[rows], tree))
    assert calls[:-1] == [4, 4]  # 7 rows: a full block, then 3 padded to 4
    jax.tree_util.tree_map(np.testing.assert_array_equal, got, want)


@pytest.mark.slow
def test_all_exponents_of_a_clustered_fixed_point_from_the_monodromy():
    """β_o = 0.5: the fixed point seen at period L = 4 has its twelve multipliers within e^6 of each other,
    too close for the periodic QR iteration's cycles to separate; periodic_exponents still accepts the orbit
    for all twelve exponents, which equal the eigenvalues of the monodromy from ``jax.jacfwd``."""
    from attnphys.dynamics.classify import ClassifyOptions
    from attnphys.dynamics.periodic import floquet_batch

    model = DMFTModel.of(preset("paper"))
    sc = model.scalars({"beta_o": np.asarray([0.5, 0.5])}, n=2)
    st, _, _ = run_batch(model.couplings, sc, model.initial_states("checkpoint", sc),
                         Schedule(steps=4000, transient=4000, record=()), model.convention)
    m = model.map("mo_se")
    x, aux = m.state(st.window)
    ok, orb, ex = _floquet.periodic_exponents(m, model.couplings, x, aux, sc, np.asarray([4, 4]), 12,
                                           ClassifyOptions().theta)
    assert ok.all() and ex.shape == (2, 12)
    it = floquet_batch(m, orb.points, orb.aux_points, sc, orb.period, shared=model.couplings, max_cycles=250)
    assert (np.asarray(it.resolved) < 12).all()
    sc0 = jax.tree_util.tree_map(lambda a: a[0], sc)
    x0, aux0 = jax.tree_util.tree_map(lambda a: np.asarray(a)[0], (orb.x, orb.aux))
    mu = np.linalg.eigvals(np.asarray(monodromy(m, x0, aux0, (model.couplings, sc0), 4)))
    np.testing.assert_allclose(ex[0], np.sort(np.log(np.abs(mu)) / 4)[::-1], atol=1e-10)

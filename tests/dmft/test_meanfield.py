import jax
import numpy as np
import pytest

from attnphys.dmft import Window, paper_checkpoint, preset
from attnphys.dmft.initial import from_token, token_positions
from attnphys.dmft.meanfield import couplings, fill, scalars, step
from attnphys.dmft.simulate import Schedule, broadcast_batch, run, run_batch
from attnphys.errors import NonFiniteError
from tests.dmft.reference import reference_run

PAPER = preset("paper")


@pytest.fixture(scope="module")
def paper():
    corr = PAPER.build_correlations()
    return PAPER, corr, couplings(corr)


def test_token_start_test_vectors(paper):
    cfg, corr, cp = paper
    win = from_token(cfg, corr)
    np.testing.assert_allclose(win.A[0], [0.34666667, 0.32666667, 0.98], atol=5e-9)
    assert int(win.n) == 1
    np.testing.assert_array_equal(win.pe, [[-1, -1], [1, 1], [1, -1], [-1, 1]])


def test_first_step_test_vectors(paper):
    cfg, corr, cp = paper
    _, rec = step(cp, scalars(cfg, beta_o=1.26), from_token(cfg, corr), "paper")
    np.testing.assert_allclose(rec["att"], [-0.0616206, -0.1589711, 0.4744080], atol=5e-8)
    np.testing.assert_allclose(rec["mo_se"], [0.4744080, -0.0816206, 0.7149996], atol=5e-8)


def test_token_positions_general():
    np.testing.assert_array_equal(token_positions(3, 2), [[-1, -1], [1, -1], [-1, 1]])
    assert token_positions(5, 0).shape == (5, 0)


def _reference(cfg, corr, win, beta_o, steps, paper=True):
    return reference_run(
        corr.weights, cfg.n_se, cfg.P, cfg.L, beta_o * cfg.scaling_o, cfg.gamma, cfg.epsilon,
        np.asarray(win.A), np.asarray(win.pe), int(win.n), steps, paper,
    )


@pytest.mark.parametrize("beta_o, start", [(0.5, "token"), (1.0, "token"), (3.0, "token"), (1.2, "checkpoint"), (3.0, "checkpoint")])
def test_matches_independent_reference_in_non_chaotic_regimes(paper, beta_o, start):
    cfg, corr, cp = paper
    win = from_token(cfg, corr) if start == "token" else paper_checkpoint(cfg)
    steps = 600
    _, recs, bad = run(cp, scalars(cfg, beta_o=beta_o), win, Schedule(steps=steps))
    ref = _reference(cfg, corr, win, beta_o, steps)
    assert int(bad) == -1
    for name in ref:
        np.testing.assert_allclose(np.asarray(recs[name]), ref[name], rtol=0, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("M, L, P", [(1, 1, 0), (2, 2, 1), (4, 3, 2), (6, 8, 3)])
def test_general_sizes_match_reference(M, L, P):
    cfg = preset("paper").replace(M=M, L=L, P=P, n_se=120, epsilon=0.05 if P else 0.0,
                                  correlations=dict(kind="random", seed=M), beta_att=0.3)
    corr = cfg.build_correlations()
    win = from_token(cfg, corr)
    _, recs, _ = run(couplings(corr), scalars(cfg, beta_o=0.8), win, Schedule(steps=50), convention="plain")
    ref = _reference(cfg, corr, win, 0.8, 50, paper=False)
    for name in ref:
        np.testing.assert_allclose(np.asarray(recs[name]), ref[name], rtol=0, atol=1e-12, err_msg=name)


# ring slots fixed per step (8 and 9 steps per loop pass), and moving with the head (L > 8)
@pytest.mark.slow
@pytest.mark.parametrize("L, P", [(4, 2), (3, 2), (12, 4)])
def test_schedule_transient_and_record_every_are_slices_of_the_full_run(L, P):
    cfg = preset("paper", L=L, P=P)
    corr = cfg.build_correlations()
    cp = couplings(corr)
    sc, win = scalars(cfg, beta_o=1.26), from_token(cfg, corr)
    _, full, _ = run(cp, sc, win, Schedule(steps=103))
    fin_a, part, _ = run(cp, sc, win, Schedule(steps=103, transient=10, record_every=7, record=("att", "mo_se")))
    fin_b, _, _ = run(cp, sc, win, Schedule(steps=103, transient=103, record=()))
    idx = Schedule(steps=103, transient=10, record_every=7).record_steps
    assert idx[-1] == 101 and len(idx) == 14
    for name in ("att", "mo_se"):
        np.testing.assert_array_equal(np.asarray(part[name]), np.asarray(full[name])[idx])
    assert set(part) == {"att", "mo_se"}
    for field in fin_a._fields:
        np.testing.assert_array_equal(np.asarray(getattr(fin_a, field)), np.asarray(getattr(fin_b, field)))
    np.testing.assert_array_equal(np.asarray(fin_a.A[0]), np.asarray(full["att"][-1]))


@pytest.mark.slow
@pytest.mark.parametrize("L, P", [(4, 2), (3, 2), (12, 4)])
def test_plain_steps_end_where_recorded_steps_end(L, P):
    """Runs shorter than one loop pass, of whole passes and with a remainder move the state through the
    same bits with and without records (a batch, as the library runs every trajectory)."""
    cfg = preset("paper", L=L, P=P)
    corr = cfg.build_correlations()
    cp = couplings(corr)
    sc, wb = broadcast_batch(scalars(cfg, beta_o=np.array([0.7, 1.26, 2.0])), from_token(cfg, corr), 3)
    for T in (5, 9, 17):
        a, _, _ = run_batch(cp, sc, wb, Schedule(steps=T))
        b, _, _ = run_batch(cp, sc, wb, Schedule(steps=T, transient=T, record=()))
        for field in a._fields:
            np.testing.assert_array_equal(np.asarray(getattr(a, field)), np.asarray(getattr(b, field)), err_msg=field)


@pytest.mark.slow
@pytest.mark.parametrize("L, P", [(8, 3), (12, 4)])
def test_non_finite_step_is_counted_across_loop_passes(L, P):
    """A NaN positional code in row r of a cached state reaches the token generated at step L − 1 − r
    (codes rotate down the window) and A^new one step later: with r = 0 that is step L, in the second pass
    of the plain loop, whose steps are counted from the pass."""
    cfg = preset("paper", L=L, P=P)
    corr = cfg.build_correlations()
    cp = couplings(corr)
    sc, wb = broadcast_batch(scalars(cfg, beta_o=np.array([1.0, 1.26])), from_token(cfg, corr), 2)
    st = jax.vmap(lambda s, w: fill(cp, s, w))(sc, wb)
    st = st._replace(pe=st.pe.at[1, 0].set(np.nan))
    for sched in (Schedule(steps=3 * L, transient=3 * L, record=()), Schedule(steps=3 * L, record_every=5)):
        _, _, bad = run_batch(cp, sc, st, sched, check=False)
        np.testing.assert_array_equal(np.asarray(bad), [-1, L])


def test_schedule_validation():
    with pytest.raises(ValueError, match="transient"):
        Schedule(steps=5, transient=6)
    with pytest.raises(ValueError, match="record_every"):
        Schedule(steps=5, record_every=0)
    with pytest.raises(ValueError, match="unknown observables"):
        Schedule(steps=5, record=("foo",))


@pytest.mark.slow
def test_batch_equals_individual_runs_and_is_sharded(paper):
    cfg, corr, cp = paper
    betas = np.array([0.3, 1.26, 2.0, 3.0, 1.0])  # odd size: exercises padding over two devices
    win = paper_checkpoint(cfg)
    sc, wb = broadcast_batch(scalars(cfg, beta_o=betas), win, len(betas))
    sched = Schedule(steps=300, transient=100, record_every=3)
    _, recs, bad = run_batch(cp, sc, wb, sched)
    assert np.all(np.asarray(bad) == -1)
    for i, b in enumerate(betas):
        _, one, _ = run(cp, scalars(cfg, beta_o=b), win, sched)
        np.testing.assert_allclose(np.asarray(recs["att"][i]), np.asarray(one["att"]), rtol=0, atol=1e-13)


def test_mo_se_conventions(paper):
    cfg, corr, cp = paper
    sc, win = scalars(cfg, beta_o=1.26), from_token(cfg, corr)
    _, a, _ = run(cp, sc, win, Schedule(steps=20), convention="paper")
    _, b, _ = run(cp, sc, win, Schedule(steps=20), convention="plain")
    np.testing.assert_allclose(np.asarray(a["mo_se"]), (1 - cfg.epsilon) * np.asarray(b["mo_se"]), rtol=1e-15)
    # the plain convention is the finite model's overlap: mo = mo_se_plain*(1-eps) + positional part
    np.testing.assert_array_equal(np.asarray(a["att"]), np.asarray(b["att"]))


def test_sweeping_beta_att_and_epsilon_really_changes_gamma_and_epsilon(paper):
    cfg, corr, cp = paper
    win = paper_checkpoint(cfg)
    sched = Schedule(steps=200)
    for field, values in (("beta_att", [0.5, 2.2]), ("epsilon", [0.0, 0.3])):
        sc, wb = broadcast_batch(scalars(cfg, beta_o=1.5, **{field: np.array(values)}), win, 2)
        _, recs, _ = run_batch(cp, sc, wb, sched)
        assert not np.allclose(recs["att"][0], recs["att"][1])
        for i, v in enumerate(values):
            cfg_i = cfg.replace(beta_o=1.5, **{field: v})
            _, one, _ = run(cp, scalars(cfg_i), win, sched)
            ref = _reference(cfg_i, corr, win, 1.5, 200)
            np.testing.assert_allclose(np.asarray(recs["att"][i]), np.asarray(one["att"]), atol=1e-13)
            np.testing.assert_allclose(np.asarray(one["att"][:50]), ref["att"][:50], atol=1e-10)


def test_non_finite_is_reported_with_step_and_parameter(paper):
    cfg, corr, cp = paper
    betas = np.array([1.0, np.nan, 2.0])
    sc, wb = broadcast_batch(scalars(cfg, beta_o=betas), paper_checkpoint(cfg), 3)
    with pytest.raises(NonFiniteError) as e:
        run_batch(cp, sc, wb, Schedule(steps=50, transient=10), labels={"beta_o": betas})
    assert e.value.step == 0
    assert np.isnan(e.value.params["beta_o"])
    assert "step 0" in str(e.value) and "beta_o=nan" in str(e.value)


def test_softmax_cannot_overflow_at_huge_gain(paper):
    cfg, corr, cp = paper
    sc = scalars(cfg.replace(beta_att=1e6), beta_o=1.26)
    _, recs, bad = run(cp, sc, paper_checkpoint(cfg), Schedule(steps=100))
    assert int(bad) == -1 and np.all(np.isfinite(np.asarray(recs["att"])))


def test_positional_window_is_a_cyclic_shift(paper):
    cfg, corr, cp = paper
    win = paper_checkpoint(cfg)
    w = win
    for _ in range(cfg.L):
        w, _ = step(cp, scalars(cfg), w, "paper")
        assert isinstance(w, Window)
    np.testing.assert_array_equal(np.asarray(w.pe), np.asarray(win.pe))
    w1, _ = step(cp, scalars(cfg), win, "paper")
    np.testing.assert_array_equal(np.asarray(w1.pe), np.roll(np.asarray(win.pe), 1, axis=0))
    np.testing.assert_array_equal(np.asarray(w1.A[1:]), np.asarray(win.A[:-1]))

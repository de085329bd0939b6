"""The two eras of conventions (theory: docs/theory/dmft.md §5.2): the reference code today (``head``) and
the 2024 code (``2024``: x₀ kept in the window, token k at position k mod L, diagrams from a pre-run)."""

import jax
import numpy as np
import pytest

from attnphys.dmft import DMFTModel, preset, trajectories
from attnphys.dmft._commands.diagrams import BifurcationJob, PhaseDiagramJob
from attnphys.dmft.correlations import paper_segment_weights
from attnphys.dmft.initial import position_code, position_of
from attnphys.dmft.meanfield import advance
from attnphys.dmft.starts import PrerunStart, TokenStart

from .reference import brute_semantic

L = 4
HEAD = preset("paper", beta_o=1.26)
ERA24 = HEAD.replace(era="2024")


def engine_states(cfg, steps):
    """The engine's state before each of the first ``steps`` steps from the token."""
    model = DMFTModel.of(cfg)
    sc = model.scalars(n=1)
    st = jax.tree_util.tree_map(lambda a: a[0], model.initial_states(TokenStart(), sc))
    sc1 = jax.tree_util.tree_map(lambda a: a[0], sc)
    step = jax.jit(advance, static_argnames="convention")
    out = [st]
    for _ in range(steps):
        st, _ = step(model.couplings, sc1, st, convention=model.convention)
        out.append(st)
    return out


def era_reference(cfg, steps):
    """Records of the first steps from the token, written from §5.2 with explicit tokens: in ``head`` the
    first token x₀ only leaves A₀ = m^v(x₀) and token k ≥ 1 sits at position (k − 1) mod L; in ``2024``
    x₀ (its overlaps those of its bits) is a key and value until it drops out, and token k sits at k mod L."""
    n_se, P = cfg.n_se, cfg.P
    W = paper_segment_weights(1, cfg.M, n_se, P, 3)["W"].astype(np.float64)
    eps, eps_pe, beta, gamma = cfg.epsilon, 1 - (1 - cfg.epsilon), cfg.beta_o, cfg.gamma

    def positional(p):
        return eps_pe / P * np.einsum("xap,p->xa", W[:, :, n_se:], position_code(p, P))

    def mean_token(A, p):  # a generated token: the mean field of its bits given the attention A
        se = brute_semantic(W, n_se, beta, eps, A)
        return se, se + positional(p)

    x0 = W[0, 0, :n_se]  # row 0 of W^o, positional bits -1 (position 0)
    se_x0 = (1 - eps) * W[:, :, :n_se] @ x0 / n_se
    m_x0 = se_x0 + positional(0)
    if cfg.era == "head":
        newest, k, window = mean_token(m_x0[1], 0), 1, []  # x1 generated from A0 = m^v(x0), at position 0
    else:
        newest, k, window = (se_x0, m_x0), 0, []  # x0 itself, at position 0
    recs, positions = [], []
    for _ in range(steps):
        window = [newest] + window[: L - 1]
        se0, m0 = newest
        scores = np.array([gamma * m0[2] @ m[3] for _, m in window])
        w = np.exp(scores - scores.max())
        w /= w.sum()
        att = sum(wd * m[1] for wd, (_, m) in zip(w, window))
        recs.append({"att": att, "mo": m0[0], "mo_se": se0[0], "mv": m0[1], "mq": m0[2], "mk": m0[3]})
        positions.append((k, (k - 1) % L if cfg.era == "head" else k % L))
        k += 1
        newest = mean_token(att, (k - 1) % L if cfg.era == "head" else k % L)
    return {n: np.array([r[n] for r in recs]) for n in recs[0]}, positions


def test_first_steps_follow_the_era_exactly():
    runs = {}
    for cfg in (HEAD, ERA24):
        ref, _ = era_reference(cfg, 12)
        runs[cfg.era] = ds = trajectories(cfg, start="token", steps=12)
        for name, want in ref.items():
            np.testing.assert_allclose(ds[name].values, want, atol=1e-13, rtol=0, err_msg=f"{cfg.era}: {name}")
    # the same token gives different trajectories: record 0 is x1 (head) or x0 itself (2024)
    assert np.abs(runs["head"].mo.values[0] - runs["2024"].mo.values[0]).max() > 1e-2


def test_window_contents_and_positions_at_the_first_steps():
    eps = HEAD.epsilon
    model = DMFTModel.of(HEAD)
    corr = model.correlations
    m_x0_v = (1 - eps) * corr.pair[1, 0, :] + (1 - (1 - eps)) / 2 * corr.W_pe[1] @ position_code(0, 2)
    head, era = engine_states(HEAD, L + 2), engine_states(ERA24, L + 2)
    for t in range(L + 2):
        # head: row 0 before step t generated the token x_{t+1}, at position t mod L = (k - 1) mod L
        assert position_of(np.asarray(head[t].pe[0])) == t % L
        # 2024: row 0 before step t is the token x_t, at position t mod L = k mod L
        assert position_of(np.asarray(era[t].pe[0])) == t % L
        assert int(head[t].n) == int(era[t].n) == min(t + 1, L)
    # 2024: x0 is in the window with its own overlaps (the bits of row 0 of W^o) for L steps, then drops out
    np.testing.assert_allclose(np.asarray(era[0].mv[0]), m_x0_v, atol=1e-15)
    for t in range(L):
        np.testing.assert_array_equal(np.asarray(era[t].mv[t]), np.asarray(era[0].mv[0]))
        assert position_of(np.asarray(era[t].pe[t])) == 0
    assert not np.any(np.all(np.asarray(era[L].mv) == np.asarray(era[0].mv[0]), axis=-1))
    # head: x0 is never a key or value; its trace is A0 = m^v(x0), and the first key is the mean field x1
    np.testing.assert_allclose(np.asarray(head[0].A[0]), m_x0_v, atol=1e-15)
    assert not np.allclose(np.asarray(head[0].mv[0]), m_x0_v, atol=1e-3)


def test_token_numbers_and_positions_of_the_records():
    # head: the record of step t is token x_{t+1} at (k - 1) mod L; 2024: token x_t at k mod L
    _, pos_head = era_reference(HEAD, 6)
    _, pos_24 = era_reference(ERA24, 6)
    assert [p for _, p in pos_head] == [0, 1, 2, 3, 0, 1] and [k for k, _ in pos_head] == [1, 2, 3, 4, 5, 6]
    assert [p for _, p in pos_24] == [0, 1, 2, 3, 0, 1] and [k for k, _ in pos_24] == [0, 1, 2, 3, 4, 5]


def test_2024_recipe_is_available_to_the_diagram_commands():
    job = BifurcationJob(era="2024", start="prerun", start_value=1.24, stop_value=1.28, num=3, steps=200,
                         transient=100)
    start = job.plan().task.start
    assert start == PrerunStart(start=TokenStart(), beta_o=1.28, steps=200)
    assert BifurcationJob(start="prerun:3:500", steps=2000, transient=1000).plan().task.start.beta_o == 3.0
    with pytest.raises(ValueError, match="prerun needs"):
        BifurcationJob(param="beta_att", start="prerun", steps=2000, transient=1000)
    phase = PhaseDiagramJob(start="prerun", x=("beta_att", 0.0, 3.0, 3), y=("beta_o", 0.5, 2.5, 3), steps=300,
                            transient=100)
    assert phase.plan().task.start == PrerunStart(start=TokenStart(), beta_o=2.5, steps=300)


@pytest.mark.slow
@pytest.mark.long
def test_the_prerun_window_is_the_token_run_continued():
    start = PrerunStart(start=TokenStart(), beta_o=1.28, steps=200)
    model = DMFTModel.of(ERA24.replace(beta_o=1.28))
    sc = model.scalars(n=1)
    win = model.initial_windows(start, sc)
    ds = trajectories(ERA24.replace(beta_o=1.28), start="token", steps=200)
    np.testing.assert_allclose(np.asarray(win.A[0]), ds.final_A.values, atol=1e-12)

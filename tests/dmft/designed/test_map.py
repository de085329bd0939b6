"""The designed map against the authors' reference runs, an independent literal evaluation of its
equations, and the paper's map (theory: docs/theory/designed.md §1, §5)."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dmft import trajectories
from attnphys.dmft.correlations import Correlations, moments_from_weights
from attnphys.dmft.designed import DesignedModel, designed_config, emitted_patterns, load_design
from attnphys.dmft.designed._design import FEATURES
from attnphys.dmft.designed._map import base_overlap, design_arrays, positional_overlap, semantic_overlap
from attnphys.dmft.meanfield import Scalars, couplings
from attnphys.dmft.meanfield import semantic_overlap as paper_semantic_overlap
from attnphys.dmft.simulate import Schedule
from attnphys.errors import NonFiniteError

from .conftest import RUNS, reference_run

RECORDS = ("mo", "mo_se", "mv", "mq", "mk", "att")
FAMILY_ROWS = [FEATURES.index(f) for f in ("o", "v", "q", "k")]


@pytest.fixture(scope="module")
def runs(designed_config_of):
    """Every reference run reproduced: (meta, reference arrays, our dataset) by name."""
    out = {}
    for name in RUNS:
        meta, z = reference_run(name)
        out[name] = (meta, z, trajectories(designed_config_of(meta), steps=meta["steps"]))
    return out


@pytest.mark.parametrize("name", RUNS)
def test_reference_runs_are_reproduced(runs, name):
    """Every record of every step matches the reference to round-off (first 50 steps: 1e-13; all 3000:
    1e-12), so the settled cycle is the reference's."""
    meta, z, ds = runs[name]
    for k in RECORDS:
        ours = ds[k].values
        assert ours.shape == z[k].shape == (meta["steps"], meta["M"])
        np.testing.assert_allclose(ours[:50], z[k][:50], rtol=0, atol=1e-13, err_msg=k)
        np.testing.assert_allclose(ours, z[k], rtol=0, atol=1e-12, err_msg=k)


@pytest.mark.parametrize("name", RUNS)
def test_settled_cycles_are_the_reference_cycles(runs, name):
    """The last 16 steps repeat with the reference's period and emit the same base patterns."""
    meta, z, ds = runs[name]
    design = load_design(meta["design"])
    ours, theirs = ds["mo_se"].values[-16:], z["mo_se"][-16:]
    p = next(p for p in range(1, 9) if np.allclose(theirs[p:], theirs[:-p], atol=1e-10))
    np.testing.assert_allclose(ours[p:], ours[:-p], atol=1e-10)
    np.testing.assert_array_equal(emitted_patterns(ours, design), emitted_patterns(theirs, design))
    np.testing.assert_array_equal(np.argmax(ours, axis=-1), np.argmax(theirs, axis=-1))


@pytest.mark.parametrize("name", [RUNS[0], RUNS[2], RUNS[5]])
def test_the_parts_of_the_overlaps_are_the_reference_parts(runs, name):
    """The base-pattern overlaps m̃, the decoded semantic overlaps and the ReLU positional term of every
    feature equal the reference's ``m_tilde``, ``m_tilde_proj`` and ``m_pos`` (features q, k, v, o)."""
    meta, z, ds = runs[name]
    cfg = designed_config(meta["design"], beta_o=meta["beta_o"], gamma=meta["gamma_att"], epsilon=meta["epsilon_pe"])
    cp = DesignedModel.of(cfg).couplings
    T, L = 40, cfg.L
    A = np.concatenate(
        [
            np.asarray(DesignedModel.of(cfg).initial_windows("token", DesignedModel.of(cfg).scalars(n=1)).A)[0, :1],
            ds["att"].values[: T - 1],
        ]
    )
    from attnphys.dmft.initial import position_code

    pe = np.stack([position_code(t % L, cfg.P) for t in range(T)])
    to_ref = np.argsort(FAMILY_ROWS)  # (o, v, q, k) rows → (q, k, v, o)
    m_tilde = np.moveaxis(np.asarray(base_overlap(cp, meta["beta_o"], jnp.asarray(A))), 0, 1)[:, to_ref]
    proj = np.moveaxis(np.asarray(semantic_overlap(cp, meta["beta_o"], jnp.asarray(A))), 0, 1)[:, to_ref]
    pos = np.moveaxis(np.asarray(positional_overlap(cp, jnp.asarray(pe))), 0, 1)[:, to_ref]
    np.testing.assert_allclose(m_tilde, z["m_tilde"][:T], atol=1e-13)
    np.testing.assert_allclose(proj, z["m_tilde_proj"][:T], atol=1e-13)
    np.testing.assert_allclose(pos, z["m_pos"][:T], atol=0)


def literal_overlaps(design, beta, eps, A, p):
    """The designed overlaps written out literally, per feature c (q, k, v, o) and mean-field pattern i:
    the field on every one of the 2^M_se sign vectors, its tanh, the average of σ times it, decoded
    through the order and the projection; the positional term through the ReLU; ε mixing."""
    M, m_se, P = design.M, design.m_se, design.P
    orders, proj, codes = design.array("orders"), design.array("projection"), design.position_codes()
    out = np.zeros((4, M))
    for c in range(4):
        tilde = np.zeros(m_se)
        for sigma in itertools.product((-1.0, 1.0), repeat=m_se):
            sigma = np.asarray(sigma)
            h = sum(sigma[proj[c, k]] * A[orders[3, k]] for k in range(M))
            tilde += sigma * np.tanh(beta * h) / 2**m_se
        for i in range(M):
            se = tilde[proj[c, orders[c, i]]]
            pe = max(0.0, float(codes[c, i] @ p) / P)
            out[c, i] = (1 - eps) * se + eps * pe
    return out


def random_design(rng, M, m_se, P, shared_projection):
    proj = [list(rng.integers(0, m_se, M)) for _ in range(4)]
    if shared_projection:
        proj = [proj[0]] * 4
    return load_design(
        {
            "m_se": m_se,
            "P": P,
            "strict_orders": False,
            "orders": {f: [int(x) for x in rng.integers(0, M, M)] for f in FEATURES},
            "projection": {f: [int(x) for x in proj[j]] for j, f in enumerate(FEATURES)},
            "positional": {f: [int(x) for x in rng.integers(0, 2**P, M)] for f in FEATURES},
        }
    )


@pytest.mark.parametrize("shared_projection", [True, False])
@pytest.mark.parametrize("M, m_se, P", [(4, 3, 2), (5, 2, 3), (3, 3, 1)])
def test_overlaps_equal_a_literal_evaluation(M, m_se, P, shared_projection):
    """Random designs (many-to-one orders, one projection for all features or one each): the map's
    overlaps equal the literal sum over all 2^M_se sign vectors to 1e-14."""
    from attnphys.dmft.designed._map import overlaps

    rng = np.random.default_rng(M * 100 + m_se * 10 + P + shared_projection)
    design = random_design(rng, M, m_se, P, shared_projection)
    cp = design_arrays(design)
    assert cp.field.shape[0] == (1 if shared_projection else 4)
    for beta, eps in [(0.7, 0.0), (3.0, 0.2), (40.0, 0.9)]:
        A = rng.uniform(-1, 1, M)
        p = rng.choice([-1.0, 1.0], P)
        m, _ = overlaps(
            cp, Scalars(jnp.asarray(beta), jnp.asarray(0.0), jnp.asarray(eps)), jnp.asarray(A), jnp.asarray(p)
        )
        np.testing.assert_allclose(
            np.asarray(m)[np.argsort(FAMILY_ROWS)], literal_overlaps(design, beta, eps, A, p), atol=1e-14
        )


@pytest.mark.parametrize("name", ["4_duplicity_loop_4", "4_no_duplicity", "3_no_duplicity"])
def test_semantic_part_is_the_paper_map_with_weights_of_base_patterns(name):
    """With the output order the identity and one projection for all features, the designed semantic
    overlap is the paper's mean-field overlap (the odd-subset identity, docs/theory/dmft.md §3.1) of the
    weights whose rows are base patterns: row i of W^c is ξ^{p(b_c(i))}, and the N_se = 2^M_se semantic
    columns enumerate every σ once, so the paper's finite average is exact."""
    design = load_design(name)
    assert design.orders.o == tuple(range(design.M))
    sig = np.array(list(itertools.product((1.0, -1.0), repeat=design.m_se))).T  # (M_se, 2^M_se)
    rows = design.decoded()[FAMILY_ROWS]  # (4, M) in the paper's family order
    W = sig[rows]  # (4, M, N_se)
    corr = Correlations(moments_from_weights(W, W.shape[-1]), np.zeros((4, design.M, 1)))
    rng = np.random.default_rng(0)
    for beta, eps in [(0.5, 0.0), (3.0, 0.2), (20.0, 0.5)]:
        sc = Scalars(jnp.asarray(beta), jnp.asarray(1.0), jnp.asarray(eps))
        A = jnp.asarray(rng.uniform(-1, 1, (5, design.M)))
        paper = np.asarray(paper_semantic_overlap(couplings(corr), sc, A))
        ours = np.asarray(semantic_overlap(design_arrays(design), beta, A))
        np.testing.assert_allclose(paper, (1 - eps) * ours, atol=1e-14)


def test_cached_stepping_equals_the_plain_step():
    """The map's cached step (one new row of overlaps) follows its plain step (all rows recomputed)."""
    model = DesignedModel.of(designed_config("4_duplicity_loop_4", beta_o=3.0, gamma=20.0, epsilon=0.2))
    m = model.map()
    sc = model.scalars(n=1)
    par = (model.couplings, jax.tree_util.tree_map(lambda a: a[0], sc))
    xs, auxs = m.sample_states(jax.random.PRNGKey(3), 1, par)
    x, aux = xs[0], jax.tree_util.tree_map(lambda a: a[0], auxs)
    c = m.cache_aux(x, aux, par)
    for _ in range(30):
        x2, aux = m.step(x, aux, par)
        xc, c = m.step_cached(x, c, par)
        np.testing.assert_allclose(xc, x2, rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(m.observe_cached(x2, c, par), m.observe(x2, aux, par), atol=1e-15)
        x = x2


@pytest.mark.slow
def test_a_batch_equals_its_single_runs_and_transients_are_slices():
    cfg = designed_config("4_duplicity_loop_4", beta_o=3.0, gamma=20.0, epsilon=0.2)
    model = DesignedModel.of(cfg)
    pts = {"beta_o": np.array([2.0, 3.0, 5.0]), "epsilon": np.array([0.1, 0.2, 0.3])}
    _, batch, _ = model.run_batch(model.scalars(pts), "token", Schedule(steps=60))
    for i in range(3):
        one = model.scalars({k: v[i : i + 1] for k, v in pts.items()})
        _, single, _ = model.run_batch(one, "token", Schedule(steps=60))
        for k in RECORDS:
            np.testing.assert_array_equal(np.asarray(batch[k])[i], np.asarray(single[k])[0])
    _, part, _ = model.run_batch(model.scalars(pts), "token", Schedule(steps=60, transient=17, record_every=5))
    for k in RECORDS:
        np.testing.assert_array_equal(np.asarray(part[k]), np.asarray(batch[k])[:, 17::5])


@pytest.mark.slow
def test_a_run_continued_from_its_final_state_is_the_uninterrupted_run():
    model = DesignedModel.of(designed_config("4_no_duplicity", beta_o=3.0, gamma=20.0, epsilon=0.2))
    sc = model.scalars(n=2)
    _, full, _ = model.run_batch(sc, "token", Schedule(steps=90))
    mid, first, _ = model.run_batch(sc, "token", Schedule(steps=40))
    _, rest, _ = model.run_batch(sc, mid, Schedule(steps=50))
    for k in RECORDS:
        np.testing.assert_array_equal(np.concatenate([first[k], rest[k]], axis=1), np.asarray(full[k]))


def test_non_finite_state_is_reported_with_step_and_parameter():
    model = DesignedModel.of(designed_config("4_duplicity_loop_4"))
    sc = model.scalars(n=3)
    sc = Scalars(sc.gain_o, jnp.asarray([1.0, np.inf, 2.0]), sc.eps)
    with pytest.raises(NonFiniteError) as e:
        model.run_batch(sc, "token", Schedule(steps=20), labels={"gamma": np.array([1.0, np.inf, 2.0])})
    assert e.value.params == {"gamma": np.inf} and e.value.count == 1 and 0 <= e.value.step < 20


def test_a_design_given_as_a_file_reproduces_the_reference_run(tmp_path):
    import yaml

    meta, z = reference_run("4_duplicity_loop_4__beta100_gamma100_eps0.5")
    path = tmp_path / "mine.yaml"
    path.write_text(
        yaml.safe_dump({k: v for k, v in load_design("4_duplicity_loop_4").to_dict().items() if k != "name"})
    )
    cfg = designed_config(str(path), beta_o=100.0, gamma=100.0, epsilon=0.5)
    assert cfg.design.name == "mine"
    ds = trajectories(cfg, steps=3000)
    np.testing.assert_allclose(ds["mo_se"].values, z["mo_se"], rtol=0, atol=1e-12)

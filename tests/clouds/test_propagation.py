"""Signal propagation at initialisation (docs/theory/signal_propagation.md): the REM statistics of a softmax
row at finite T and in the limit, the layer map and β_c, the composed block, the (β, α) diagram, and the
theory against simulated random transformers, with the MLP-free negative control."""

import numpy as np
import pytest

from attnphys.clouds import propagation as P
from attnphys.clouds import propagation_checks as checks
from attnphys.clouds import propagation_simulation as S
from attnphys.errors import InputError


def _sampled_rows(sigma, tokens, rows=4000, seed=1):
    g = np.random.default_rng(seed).standard_normal((rows, tokens)) * sigma
    w = np.exp(g - g.max(1, keepdims=True))
    w /= w.sum(1, keepdims=True)
    part = (w * w).sum(1)
    ent = -(w * np.log(np.where(w > 0, w, 1.0))).sum(1)
    return part.mean(), part.std() / np.sqrt(rows), ent.mean(), ent.std() / np.sqrt(rows)


# -- §2 the REM of a row -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("beta", "rho", "tokens"), [(3.0, 0.2, 512), (3.0, 0.78, 512), (0.5, 0.2, 512), (2.0, 0.0, 64)]
)
def test_finite_t_quadrature_matches_sampled_rows(beta, rho, tokens):
    ds = P.rem_statistics([beta], [rho], tokens=tokens).isel(beta=0, rho=0)
    y, ye, s, se = _sampled_rows(float(ds.sigma), tokens)
    assert abs(float(ds.participation) - y) < 4 * ye + 1e-4
    assert abs(float(ds.entropy) - s) < 4 * se + 1e-3


def test_flat_row_has_participation_one_over_t_and_entropy_log_t():
    Y, S = P._rem_quadrature(np.array([0.0]), 512)
    assert Y[0] == pytest.approx(1 / 512, rel=1e-6)
    assert S[0] == pytest.approx(np.log(512), abs=1e-5)


def test_finite_t_participation_approaches_the_limit_law():
    sig = lambda T: float(P._sigma(3.0, 0.0, T))  # noqa: E731
    gaps = [
        float(P._rem_quadrature(np.array([sig(T)]), int(T))[0][0]) - (1 - np.sqrt(2) / 3) for T in (1e2, 1e4, 1e8, 1e12)
    ]
    assert all(g > 0 for g in gaps) and np.all(np.diff(gaps) < 0)
    assert gaps[-1] < 0.025
    # the spread phase: S/log T → 1 − (β/β_c)² = 0.875 at β = 0.5
    s = float(P._rem_quadrature(np.array([float(P._sigma(0.5, 0.0, 1e8))]), int(1e8))[1][0]) / np.log(1e8)
    assert s == pytest.approx(0.875, abs=2e-3)


def test_overlap_of_independent_rows_is_one_over_t_and_of_equal_rows_is_the_participation():
    T = 256
    s = float(P._sigma(3.0, 0.3, T))
    o0, e0 = P._rem_overlap(np.array([s]), np.array([0.0]), T, 2048, 3)
    assert abs(o0[0] - 1 / T) < 4 * e0[0]
    o1, e1 = P._rem_overlap(np.array([s]), np.array([1.0]), T, 2048, 3)
    y = P._rem_quadrature(np.array([s]), T)[0][0]
    assert abs(o1[0] - y) < 4 * e1[0]


# -- §3 the layer map and β_c ------------------------------------------------------------------------------
def test_limit_layer_map_collapses_below_beta_c_and_follows_the_closed_form_above():
    ds = P.rem_layer_map([1.0, 3.0], [0.2, 0.5, 0.9])
    bc = np.sqrt(2 / (1 - np.array([0.2, 0.5, 0.9])))
    for i, b in enumerate([1.0, 3.0]):
        for j, r in enumerate([0.2, 0.5, 0.9]):
            want = 1.0 if b <= bc[j] else r / (r + (1 - r) * (1 - bc[j] / b))
            assert float(ds.cosine[i, j]) == pytest.approx(want, abs=1e-14)
    assert bool(ds.condensed[1, 0]) and not bool(ds.condensed[0, 0])


def test_beta_c_is_the_root_of_the_orthogonal_multiplier():
    ds = P.rem_fixed_points([1.0, 2.0, 3.0])
    assert float(ds.beta_c) == pytest.approx(np.sqrt(2), abs=1e-12)  # the paper's sqrt(2/(1 - p)) at p = 0
    assert float(P.rem_fixed_points([1.0], rho=0.5).beta_c) == pytest.approx(2.0, abs=1e-12)
    lam = ds.orthogonal_multiplier.values
    assert np.isinf(lam[0]) and lam[1] == pytest.approx(2 / (2 - np.sqrt(2)), rel=1e-12) and np.all(lam[1:] > 1)


def test_critical_beta_check_passes_and_its_perturbation_fails():
    rng = np.random.default_rng(0)
    assert checks.critical_beta_error(rng) < 1e-10
    assert checks.critical_beta_error(np.random.default_rng(0), perturb=0.01) > 1e-3


# -- §4 the composed block --------------------------------------------------------------------------------
def test_arccos_kernel_is_the_relu_correlation():
    rng = np.random.default_rng(2)
    u, z = rng.standard_normal((2, 400_000))
    for c in (0.0, 0.3, 0.8):
        v = c * u + np.sqrt(1 - c * c) * z
        mc = np.mean(np.maximum(u, 0) * np.maximum(v, 0)) / 0.5
        assert float(P.arccos_kernel(c)) == pytest.approx(mc, abs=6e-3)
    assert float(P.arccos_kernel(1.0)) == pytest.approx(1.0, abs=1e-12)
    assert float(P.arccos_kernel(0.0)) == pytest.approx(1 / np.pi, abs=1e-12)


def test_mlp_moments_match_a_wide_random_layer():
    """The MLP's output moments on one wide draw of its first layer (F = 200 000 hidden units), averaged over
    its second layer exactly (N(0, σ_w²/F) weights and N(0, σ_b²) biases)."""
    rng = np.random.default_rng(4)
    d, F, c, sw2, sb2 = 64, 200_000, 0.4, 0.2, 4e-4
    x = rng.standard_normal(d)
    y = c * x + np.sqrt(1 - c * c) * rng.standard_normal(d)
    x, y = (x - x.mean()) / x.std(), (y - y.mean()) / y.std()
    W1 = rng.standard_normal((F, d)) * np.sqrt(sw2 / d)
    b1 = rng.standard_normal(F) * np.sqrt(sb2)
    hx, hy = np.maximum(W1 @ x + b1, 0), np.maximum(W1 @ y + b1, 0)
    q_meas, p_meas = sw2 * hx @ hx / F + sb2, sw2 * hx @ hy / F + sb2
    q1, p1 = sw2 + sb2, sw2 * float(x @ y / d) + sb2
    q, p = 0.5 * sw2 * q1 + sb2, 0.5 * sw2 * q1 * float(P.arccos_kernel(p1 / q1)) + sb2
    assert q_meas == pytest.approx(q, rel=0.01)
    assert p_meas / q_meas == pytest.approx(p / q, abs=0.005)


def test_collapse_multiplier_is_the_slope_of_the_block_at_rho_one():
    for aA, aM in ((1.0, 1.0), (2.0, 0.5)):
        rho = 1 - np.array([1e-5, 2e-5])
        stats = P._stats_fn(512, False, 1.0, 2, 0)
        _, p, *_ = P._block(
            np.ones(2), rho, np.full(2, 1.0), stats=stats, placement="post", mlp=True, aA=aA, aM=aM, sw2=0.2,
            sv2=0.2, sb2=4e-4, tokens=512,
        )  # fmt: skip
        slope = (p[1] - p[0]) / (rho[1] - rho[0])
        assert slope == pytest.approx(float(P.collapse_multiplier(aA, aM)), rel=2e-3)


def test_post_ln_cosine_never_decreases_and_pre_ln_grows_the_norm():
    post = P.propagation_theory([0.5, 3.0], finite_size=False)
    assert np.all(np.diff(post.cosine.values, axis=-1) >= -1e-12)
    assert np.allclose(post.norm.values, 1.0)
    pre = P.propagation_theory([3.0], placement="pre", finite_size=False, layers=20)
    assert np.all(np.diff(pre.norm.values[0]) > 0) and float(pre.cosine[0, -1]) < 0.99


def test_phase_diagram_labels_follow_the_cosine_and_beta_c():
    ds = P.propagation_phase_diagram([0.5, 3.0, 6.0], [0.5, 4.0], layers=30)
    last, phase = ds.cosine.values, ds.phase.values
    assert np.array_equal(phase == 0, 1 - last < 0.01)
    assert phase[0, 0] == 0  # small β, weak residual: rank collapse
    assert phase[2, 1] == 2  # large β, strong residual: the signal survives on condensed rows
    pre = P.propagation_phase_diagram([3.0], [1.0], layers=30, placement="pre")
    assert int(pre.phase[0, 0]) != 0 and np.isnan(pre.collapse_multiplier.values).all()


@pytest.mark.slow  # two compilations of the simulator
def test_implicit_weights_have_the_law_of_explicit_ones():
    kw = dict(seeds=32, tokens=16, dim=64, layers=2, rho0=0.3)
    a = S.simulate_propagation([3.0], weights="explicit", **kw)
    b = S.simulate_propagation([3.0], weights="implicit", seed=1000, **kw)
    se = np.hypot(a.stderr.values, b.stderr.values)[0, 1:]
    assert np.all(np.abs(a["mean"].values[0, 1:] - b["mean"].values[0, 1:]) < 4 * se + 1e-3)


# -- §7 theory against simulation -------------------------------------------------------------------------
def test_small_encoder_agrees_with_the_theory_and_the_mlp_free_control_does_not():
    """The acceptance check at T = 32 tokens (d = 720, 50 Post-LN blocks, the paper's variances), 24
    networks: the theory within 0.02 of the simulated mean cosine at every layer for β = 0.5 and 3; the
    theory without the MLP kernel misses it by more than 0.02 at both."""
    ds = S.propagation_agreement([0.5, 3.0], seeds=24, tokens=32, dim=720, weights="implicit")
    assert np.all(ds.max_difference.values <= checks.TOLERANCE), ds.max_difference.values
    assert np.all(ds.max_difference_no_mlp.values > checks.TOLERANCE), ds.max_difference_no_mlp.values
    # the REM reading on the networks' own rows: participation and entropy per block
    assert np.max(np.abs(ds.simulated_participation - ds.predicted_participation)) < 0.06
    assert np.max(np.abs(ds.simulated_entropy - ds.predicted_entropy)) < 0.2  # nats, of log 32 = 3.47


@pytest.mark.long  # minutes: `make test-all`
@pytest.mark.slow
def test_paper_encoder_agrees_with_the_theory_and_the_control_fails():
    """The paper's encoder: d = 720, T = 512, 50 blocks, 20 networks per β."""
    ds = checks._agreement(np.random.default_rng(0), [0.5, 3.0])
    assert np.all(ds.max_difference.values <= checks.TOLERANCE), ds.max_difference.values
    assert np.all(ds.max_difference_no_mlp.values > checks.TOLERANCE), ds.max_difference_no_mlp.values
    # the T → ∞ law alone misses the β = 3 curve: the finite-T statistics are needed at T = 512
    lim = P.propagation_theory([3.0], rho0=ds.attrs["theory_rho0"], finite_size=False).cosine.values[0]
    assert np.max(np.abs(lim - ds.simulated.values[1])) > checks.TOLERANCE


@pytest.mark.long  # minutes: `make test-all`
@pytest.mark.slow
def test_encoder_claims_fail_when_perturbed():
    assert checks.encoder_high_beta_error(np.random.default_rng(1), perturb=0.05) > checks.TOLERANCE
    assert checks.mlp_control_ratio(np.random.default_rng(1), perturb=1.0) > 1.0


# -- input checks -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: P.propagation_theory([-1.0]), "beta"),
        (lambda: P.propagation_theory([1.0], rho0=1.0), "rho0"),
        (lambda: P.propagation_theory([1.0], placement="peri"), "placement"),
        (lambda: P.propagation_theory([1.0], sigma_w2=0.0), "sigma_w2"),
        (lambda: P.rem_statistics([1.0], [0.2], tokens=1), "tokens"),
        (lambda: S.simulate_propagation([1.0], seeds=0), "seeds"),
        (lambda: S.simulate_propagation([1.0], weights="some"), "weights"),
        (lambda: P.propagation_phase_diagram([1.0], [-1.0]), "alpha"),
        (lambda: P.rem_fixed_points([1.0], rho=1.5), "rho"),
    ],
)
def test_bad_arguments_are_refused_by_name(call, name):
    with pytest.raises(InputError) as e:
        call()
    assert name in str(e.value)

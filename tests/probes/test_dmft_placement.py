"""Real layers read as the DMFT network and placed on its diagram: the reading is exact on the network itself
written as a head, a shuffled head does not read back, the regime at the reference configuration is the
library's own diagram's, a tiny random model end to end, MiniLM (slow), bad inputs named."""

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import attnphys.dmft as dmft
from attnphys.dmft.correlations import moments_from_weights, paper_segment_weights
from attnphys.errors import InputError
from attnphys.probes.adapters import HeadWeights
from attnphys.probes.dmft_placement import (
    PHASES,
    dmft_claim,
    dmft_placement,
    dmft_section,
    paper_head,
    place_layers,
    plot_dmft_placement,
    read_layer,
)

REFERENCE = Path("/work/shared/data/reference/configs/bif_diagram_inf_0.yaml")
TRUE = dict(beta_o=1.7, gamma=40.0, epsilon=0.1)
N_SE, P = 60, 2
POS = np.array([N_SE, N_SE + 1])  # the positional coordinates of the head's tokens
FAST = dict(n_beta=7, steps=300, transient=200)


def _weights(seed=0, M=3):
    return np.random.default_rng(seed).choice([-1.0, 1.0], size=(4, M, N_SE + P))


def _shuffled(hw: HeadWeights, seed=0) -> HeadWeights:
    rng = np.random.default_rng(seed)
    perm = {n: rng.permutation(np.asarray(getattr(hw, n)).ravel()).reshape(np.shape(getattr(hw, n)))
            for n in ("Wq", "Wk", "Wv", "Wo")}  # fmt: skip
    return HeadWeights(perm["Wq"], hw.bq, perm["Wk"], hw.bk, perm["Wv"], hw.bv, perm["Wo"])


# -- the reading ---------------------------------------------------------------------------------------------


def test_the_reading_gives_back_the_networks_parameters_and_weights():
    """Closed form: the network of docs/theory/dmft.md §1 written as a head (paper_head) reads back its (β_o,
    γ, ε) to round-off (tolerance 1e-12 relative) and its ±1 weights exactly, feature by feature."""
    W = _weights()
    r = read_layer(paper_head(W, **TRUE, P=P), patterns="head", per_head=True, positional=POS, P=P)
    for k, v in TRUE.items():
        np.testing.assert_allclose(r[k].values, [v], rtol=1e-12)
    np.testing.assert_allclose(r.gamma_feature.values, TRUE["gamma"], rtol=1e-12)
    np.testing.assert_allclose(r.beta_o_feature.values, TRUE["beta_o"], rtol=1e-12)
    np.testing.assert_array_equal(r.weights.values[0], W)
    assert r.attrs["n_se"] == N_SE and r.attrs["attnphys_version"]


def test_the_read_network_computes_what_the_head_computes():
    """Exact on random ±1 tokens: the head's score (W_q x)·(W_k y)/√d_h is γ m^q(x)·m^k(y) and its output
    W_o W_v x is β_o (W^o)ᵀ m^v(x), with the overlaps of docs/theory/dmft.md §1.2 of the read weights."""
    hw = paper_head(_weights(1), **TRUE, P=P)
    r = read_layer(hw, patterns="head", per_head=True, positional=POS, P=P)
    Wo, Wv, Wq, Wk = r.weights.values[0].astype(float)
    eps, gam, beta = float(r.epsilon[0]), float(r.gamma[0]), float(r.beta_o[0])
    D = np.r_[np.full(N_SE, (1 - eps) / N_SE), np.full(P, eps / P)]
    X = np.random.default_rng(2).choice([-1.0, 1.0], size=(5, N_SE + P))
    score = (X @ hw.Wq[0].T) @ (X @ hw.Wk[0].T).T / np.sqrt(hw.head_dim)
    np.testing.assert_allclose(score, gam * (X * D @ Wq.T) @ (X * D @ Wk.T).T, rtol=1e-12)
    np.testing.assert_allclose(X @ hw.Wv[0].T @ hw.Wo[0].T, beta * (X * D @ Wv.T) @ Wo, rtol=1e-12)


def test_a_shuffled_head_does_not_read_back():
    """Negative control: the entries of every matrix of the same head permuted. The magnitudes survive in
    aggregate, the arrangement does not: the weights agree with the true ones no better than chance, their
    correlations are others, and ε (the positional entries left their columns) is off by far more than the
    reading's tolerance."""
    W = _weights(3)
    r = read_layer(_shuffled(paper_head(W, **TRUE, P=P)), patterns="head", per_head=True, positional=POS, P=P)
    agree = (r.weights.values[0][1:] == W[1:]).mean()  # v, q, k (W^o's signs all survive a permutation of ±β_o)
    assert 0.3 < agree < 0.7
    assert abs(float(r.epsilon[0]) - TRUE["epsilon"]) > 0.03
    C_true = moments_from_weights(W, N_SE)
    C_read = moments_from_weights(r.weights.values[0].astype(float), N_SE)
    assert np.abs(C_true - C_read).max() > 0.2


def test_svd_features_keep_the_whole_rank_m_circuit():
    """The network's circuits have rank M: M singular directions hold all of them (shares 1), and the
    reading's gains are then positive and finite (not equal to the truth: the singular vectors of W^qᵀW^k mix
    non-orthogonal rows before the signs are taken; docs/theory/dmft_placement.md §3)."""
    r = read_layer(paper_head(_weights(4), **TRUE, P=P), patterns="svd", positional=POS, P=P)
    np.testing.assert_allclose([float(r.qk_share[0]), float(r.ov_share[0])], 1.0, atol=1e-12)
    assert float(r.gamma[0]) > 0 and float(r.beta_o[0]) > 0 and 0 < float(r.epsilon[0]) < 1


# -- the placement -------------------------------------------------------------------------------------------


def _reference():
    import yaml

    c = yaml.safe_load(REFERENCE.read_text())
    return dict(
        n_se=int(c["semantic_embedding_size"]),
        epsilon=float(c["epsilon_pe"]),
        beta_att=float(c["beta_att"]),
        scaling_att=float(c["scaling_att"]),
        n_segments=int(c["num_segments_corrs"]),
    )


@pytest.mark.skipif(not REFERENCE.is_file(), reason="the reference data is not on this machine")
def test_the_regime_at_the_reference_configuration_is_the_library_diagrams():
    """The paper's network (reference configuration, seed 1 as in all its scripts) written as a head at
    β_o = 0.8 (period 4, locked to the positional clock) and β_o = 2.0 (chaotic): the reading gives back the
    configuration, and the placement's regime, period and phase on its whole grid are those of the library's
    own diagram (dmft.bifurcation of the segment network, same schedule and start)."""
    ref = _reference()
    gamma = ref["beta_att"] * ref["scaling_att"] / np.sqrt(3)
    W = paper_segment_weights(1, 3, ref["n_se"], 2, ref["n_segments"])["W"]
    layers = [paper_head(W, beta_o=b, gamma=gamma, epsilon=ref["epsilon"]) for b in (0.8, 2.0)]
    pos = np.array([ref["n_se"], ref["n_se"] + 1])
    ds = place_layers(layers, patterns="head", heads="each", positional=pos, **FAST)
    np.testing.assert_allclose(ds.gamma.values, gamma, rtol=1e-12)
    np.testing.assert_allclose(ds.epsilon.values, ref["epsilon"], rtol=1e-12)
    cfg = dmft.DMFTConfig(M=3, L=4, P=2, n_se=ref["n_se"], epsilon=ref["epsilon"], beta_att=ref["beta_att"],
                          scaling_att=ref["scaling_att"], mo_se_convention="paper",
                          correlations=dict(kind="segments", seed=1, n_segments=ref["n_segments"]))  # fmt: skip
    for layer, (b0, phase) in enumerate(((0.8, "ordered"), (2.0, "chaotic"))):
        r = ds.isel(layer=layer, head=0)
        grid = r.grid_beta_o.values
        lib = dmft.bifurcation(cfg, {"beta_o": grid}, steps=FAST["steps"], transient=FAST["transient"], n_orbit=100,
                               exponents=2)  # fmt: skip
        i0 = int(np.argmin(np.abs(grid - b0)))
        assert int(r.regime) == int(lib.regime.values[i0]) and int(r.period) == int(lib.period.values[i0])
        assert PHASES[int(r.phase)] == phase
        np.testing.assert_array_equal(r.grid_phase.values[grid <= 1.0], 0)  # the period-4 band of the paper
        np.testing.assert_array_equal(r.grid_phase.values, place_phase(lib, 4))
    assert float(ds.edge_distance.isel(layer=0, head=0)) > 0 > float(ds.edge_distance.isel(layer=1, head=0))


def place_phase(lib: xr.Dataset, L: int) -> np.ndarray:
    """The coarse phases of a library diagram (the rule of docs/theory/dmft_placement.md §4)."""
    from attnphys.dynamics.classify import REGIME_CODE as R

    reg, per = lib.regime.values, lib.period.values
    out = np.full(reg.shape, 3)
    out[np.isin(reg, [R["periodic"], R["quasi_periodic"]])] = 1
    out[(reg == R["fixed_point"]) | ((reg == R["periodic"]) & (per > 0) & (L % np.maximum(per, 1) == 0))] = 0
    out[np.isin(reg, [R["chaotic"], R["hyperchaotic"]])] = 2
    return out


def test_a_tiny_random_model_end_to_end():
    """A tiny random GPT-2 and its controls: every layer read and placed, one dataset (model, layer), the claim
    stored with its degrees of freedom, the section's table and the figure."""
    from matplotlib.figure import Figure

    from tests.probes.test_loaded_models import default_loaded

    ds = dmft_placement(default_loaded("gpt2"), **FAST)
    assert list(ds.model.values) == ["trained", "random", "shuffled"] and ds.sizes["layer"] == 2
    assert np.isfinite(ds.beta_o.values).all() and np.isfinite(ds.gamma.values).all()
    assert (ds.epsilon.values > 0).all()  # GPT-2 has a learned position table
    assert (ds.phase.values >= 0).all() and np.isfinite(ds.boundary_distance.values).all()
    assert set(ds.claim_p.control.values) == {"random", "shuffled"} and "claim_df" in ds
    assert ds.attrs["attnphys_version"] and '"patterns": "svd"' in ds.attrs["config"]
    text = dmft_section(ds)
    assert "| layer | trained | random | shuffled |" in text and "vs random" in text
    ax = plot_dmft_placement(ds, ax=Figure().subplots())
    assert ax.get_xlabel() == "β_o"


def test_a_rotary_model_has_no_positional_weight():
    from tests.probes.test_loaded_models import default_loaded

    ds = dmft_placement(default_loaded("llama"), control=None, heads="each", **FAST)
    assert ds.sizes["head"] == 4 and (ds.epsilon.values == 0).all() and ds.attrs["positional"] == "none"
    assert "claim_p" not in ds


def test_the_claim_counts_units_and_says_why():
    """Closed form on a hand-made placement: trained distances 0.1, 0.2, 0.3 against 1, 2, 3: Welch's t
    with its Satterthwaite ν and the verdict; the reverse is not supported, with its reason."""

    def fake(dT, dC):
        d = np.array([dT, dC])[:, :, None]
        return xr.Dataset({"boundary_distance": (("model", "layer", "head"), d),
                           "censored": (("model", "layer", "head"), np.zeros_like(d, int))},
                          coords={"model": ["trained", "random"]})  # fmt: skip

    c = dmft_claim(fake([0.1, 0.2, 0.3], [1.0, 2.0, 3.0]))
    vT, vC = 0.01 / 3, 1.0 / 3
    np.testing.assert_allclose(float(c.t[0]), 1.8 / np.sqrt(vT + vC), rtol=1e-12)
    np.testing.assert_allclose(float(c.df[0]), (vT + vC) ** 2 / (vT**2 / 2 + vC**2 / 2), rtol=1e-12)
    assert int(c.units_trained[0]) == 3
    r = dmft_claim(fake([1.0, 2.0, 3.0], [0.1, 0.2, 0.3]))
    assert int(r.supported[0]) == 0 and "not nearer" in str(r.reason.values[0])


@pytest.mark.slow
def test_minilm_is_placed_beside_its_controls():
    ds = dmft_placement("minilm")
    assert ds.sizes["layer"] == 6 and np.isfinite(ds.beta_o.values).all()
    assert (ds.phase.sel(model="trained").values >= 0).all()
    # every control is tested: by Welch's t (with its degrees of freedom) or, where distances are censored, by
    # the rank test, whose p then decides
    assert np.isfinite(ds.claim_p_holm.values).all()
    welch = ds.claim_test.values == "welch"
    assert (ds.claim_df.values[welch] > 0).all() and np.isfinite(ds.claim_p.values[welch]).all()
    assert set(ds.claim_test.values) <= {"welch", "mann_whitney_censored"}
    assert "| 5 |" in dmft_section(ds)


# -- bad inputs ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: paper_head(np.zeros((4, 3, 10)), **TRUE), "weights"),
        (lambda: paper_head(_weights(), beta_o=1.0, gamma=1.0, epsilon=1.5), "epsilon"),
        (lambda: paper_head(_weights(), beta_o=-1.0, gamma=1.0, epsilon=0.1), "beta_o"),
        (lambda: read_layer("not weights"), "heads"),
        (lambda: read_layer(paper_head(_weights(), **TRUE, P=P), patterns="rows"), "patterns"),
        (lambda: read_layer(paper_head(_weights(), **TRUE, P=P), M=0), "M"),
        (lambda: read_layer(paper_head(_weights(), **TRUE, P=P), positional=np.array([0, 0])), "positional"),
        (lambda: read_layer(paper_head(_weights(), **TRUE, P=P), patterns="embeddings"), "embeddings"),
        (lambda: read_layer(paper_head(_weights(), **TRUE, P=P), gain=np.ones(3)), "gain"),
        (lambda: place_layers([]), "layers"),
        (lambda: place_layers([paper_head(_weights(), **TRUE, P=P)], heads="all"), "heads"),
        (lambda: place_layers([paper_head(_weights(), **TRUE, P=P)], steps=100, transient=100), "transient"),
        (lambda: place_layers([paper_head(_weights(), **TRUE, P=P)], L=5), "L"),
        (lambda: place_layers([paper_head(_weights(), **TRUE, P=P)], n_beta=1), "n_beta"),
        (lambda: dmft_section(xr.Dataset()), "ds"),
        (lambda: plot_dmft_placement(xr.Dataset()), "ds"),
        (lambda: dmft_claim(xr.Dataset()), "ds"),
    ],
)
def test_bad_inputs_name_the_field(call, field):
    with pytest.raises(InputError) as e:
        call()
    assert e.value.field == field


def test_an_unknown_control_is_named():
    from tests.probes.test_loaded_models import default_loaded

    with pytest.raises(InputError, match="control"):
        dmft_placement(default_loaded("gpt2"), control="bogus")

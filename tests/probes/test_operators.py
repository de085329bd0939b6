"""The family adapters as cloud operators: the JAX sublayers reproduce the model's own stages, and the
probes' swapped normalizations are the clouds' norm objects."""

import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.clouds.norms import NORMS
from attnphys.clouds.pretrained import initial_model_cloud, model_operators, push, random_operators, theory_operators
from attnphys.probes import ADAPTERS, adapter_for, capture
from attnphys.probes.metrics import SWAPS, default_swaps, swap_norm, swap_normalization
from tests.probes.test_probes import SENTENCES, CharTokenizer, tiny

pytest.importorskip("transformers")


@pytest.fixture(params=sorted(ADAPTERS), scope="module")
def captured(request):
    model = tiny(request.param)
    return request.param, model, capture(model, CharTokenizer(), SENTENCES[:2], batch_size=1)


@pytest.mark.slow
def test_cloud_operators_reproduce_every_stage_of_the_model(captured):
    """Per sentence, the layer input pushed through the adapter's JAX operators gives every stage of the
    model: BERT (bidirectional), GPT-2 (causal mask), Llama (causal mask and rotary positions)."""
    kind, model, cap = captured
    ad = adapter_for(model)
    ops = model_operators(model, ad)
    n = int((cap.sentence == 0).sum())
    for layer, op in enumerate(ops):
        got = push([op], jnp.asarray(cap.get(layer, "input")[:n].astype(np.float64)), ad.pre_ln)[0]
        for stage in ad.stages:
            want = cap.get(layer, stage)[:n]
            np.testing.assert_allclose(got[stage], want, atol=2e-5, err_msg=f"{kind} layer {layer} {stage}")
        # norms and MLP from captured inputs (all families, including rotary ones)
        n1_in = "input" if ad.pre_ln else "attn_add"
        n2_in = "attn_add" if ad.pre_ln else "mlp_add"
        np.testing.assert_allclose(
            op.norm1(jnp.asarray(cap.get(layer, n1_in)[:n])), cap.get(layer, "attn_norm")[:n], atol=2e-5
        )
        np.testing.assert_allclose(
            op.norm2(jnp.asarray(cap.get(layer, n2_in)[:n])), cap.get(layer, "mlp_norm")[:n], atol=2e-5
        )
        mlp_in = "mlp_norm" if ad.pre_ln else "attn_norm"
        np.testing.assert_allclose(
            op.mlp(jnp.asarray(cap.get(layer, mlp_in)[:n])), cap.get(layer, "mlp_out")[:n], atol=2e-5
        )


@pytest.mark.slow
def test_random_and_theory_operators_have_the_models_shape(captured):
    kind, model, _ = captured
    ad = adapter_for(model)
    real = model_operators(model, ad)
    rnd = random_operators(real, seed=1)
    X0 = jnp.asarray(initial_model_cloud(ad, model, "gaussian", 40, seed=0))
    for ops in (real, rnd, theory_operators(len(real), X0.shape[1], ad.norm, ad.causal)):
        st = push(ops, X0, ad.pre_ln)
        assert len(st) == len(real) and all(st[-1][s] is None or st[-1][s].shape == X0.shape for s in ad.stages)
    for a, b in zip(real, rnd):
        np.testing.assert_allclose(
            np.linalg.norm(b.attention.Q, axis=(1, 2)), np.linalg.norm(a.attention.Q, axis=(1, 2)), rtol=1e-10
        )
    toks = initial_model_cloud(ad, model, "tokens", 40, noise=0.0, seed=0)
    E = ad.embeddings(model)
    if ad.embedding_norm(model) is None:  # noiseless token clouds are rows of the embedding matrix
        assert all(np.any(np.all(np.isclose(E, x), axis=1)) for x in toks)


@pytest.mark.slow
def test_swapped_norms_are_the_clouds_norms():
    assert set(SWAPS) <= set(NORMS)
    X = jnp.asarray(np.random.default_rng(0).normal(size=(30, 8)) * 3 + 1)
    np.testing.assert_allclose(jnp.linalg.norm(swap_norm("sphere", 8)(X), axis=1), np.sqrt(8), rtol=1e-12)
    np.testing.assert_allclose(jnp.cov(swap_norm("rn", 8)(X), rowvar=False, bias=True), np.eye(8), atol=1e-10)
    Y = swap_norm("diagonal_rn", 8)(X)
    np.testing.assert_allclose(Y.std(0), 1, rtol=1e-10)


def test_a_norm_of_an_outside_package_reaches_the_probes(monkeypatch, tmp_path):
    """A norm found through its entry point (not registered in this process) is a swap of the probes too."""
    import importlib.metadata as metadata

    (tmp_path / "probe_center_pkg.py").write_text(
        "from attnphys.clouds import Identity\n"
        "class Center(Identity):\n"
        "    name = 'probe_center'\n"
        "    tokenwise = False\n"
        "    def __call__(self, X):\n"
        "        return X - X.mean(0)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    real = metadata.entry_points

    def entry_points(**kw):
        eps = list(real(**kw))
        if kw.get("group") == "attnphys.norms":
            eps.append(metadata.EntryPoint("probe_center", "probe_center_pkg:Center", "attnphys.norms"))
        return metadata.EntryPoints(eps)

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    assert "probe_center" in NORMS.names() and "probe_center" not in NORMS.builtin_names()
    X = jnp.asarray(np.random.default_rng(1).normal(size=(12, 5)) + 2.0)
    np.testing.assert_allclose(swap_norm("probe_center", 5)(X).mean(0), 0.0, atol=1e-12)
    with pytest.raises(ValueError, match="unknown normalization 'thrice'"):
        swap_norm("thrice", 5)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(ADAPTERS))
def test_swap_normalization_runs_for_every_family(kind):
    model = tiny(kind)
    res = swap_normalization(model, CharTokenizer(), SENTENCES[:4], adapter_for(model))
    assert res["kinds"] == list(default_swaps(ADAPTERS[kind].causal))
    assert set(SWAPS) - {"rn", "diagonal_rn"} <= set(res["kinds"])
    ran = np.isfinite(res["token_cosine"])
    assert ran.sum() >= 3 and np.all(res["token_cosine"][ran] <= 1 + 1e-6)
    # replacing the family's own norm (without its affine) by itself changes nothing but eps
    own = swap_normalization(model, CharTokenizer(), SENTENCES[:4], adapter_for(model), kinds=(ADAPTERS[kind].norm,))
    assert own["token_cosine"][0] > 0.999
    # cloud-wise norms would let a causal model's tokens see their successors: not run there, with the reason
    # (left out of a causal model's default swaps, and said so; asked for, not run, with the reason)
    if ADAPTERS[kind].causal:
        assert not {"rn", "diagonal_rn"} & set(res["kinds"]) and set(res["not_run"]) == {"rn", "diagonal_rn"}
        asked = swap_normalization(model, CharTokenizer(), SENTENCES[:4], adapter_for(model), kinds=SWAPS)
        cloudwise = [i for i, k in enumerate(SWAPS) if k in ("rn", "diagonal_rn")]
        assert np.isnan(asked["token_cosine"][cloudwise]).all() and set(asked["not_run"]) == {"rn", "diagonal_rn"}
    else:
        assert {"rn", "diagonal_rn"} <= set(res["kinds"])
        assert np.isfinite(res["token_cosine"]).all() and not res["not_run"]

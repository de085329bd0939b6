"""Decoder-correct probes on a tiny randomly initialised Llama written here (grouped-query attention, rotary
positions, RMSNorm, gated MLP): the rotary handling against a hand computation, the head mapping, the causal
mask, the gradient of log Z against autograd, and the cloud operators against the model."""

import math

import jax.numpy as jnp
import numpy as np
import pytest
import torch

from attnphys.clouds.pretrained import model_operators, push
from attnphys.probes import adapter_for, capture
from attnphys.probes.metrics import head_scores, log_z_gradient
from tests.probes.test_probes import SENTENCES, CharTokenizer

transformers = pytest.importorskip("transformers")

H, HKV, D, THETA = 8, 2, 64, 500.0


def tiny_llama(seed=0):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=100, hidden_size=D, num_hidden_layers=2, num_attention_heads=H,
                                   num_key_value_heads=HKV, intermediate_size=96, max_position_embeddings=128,
                                   rope_theta=THETA)
    model = transformers.LlamaModel(cfg)
    model.config._attn_implementation = "eager"
    return model.eval()


@pytest.fixture(scope="module")
def llama():
    model = tiny_llama()
    return model, capture(model, CharTokenizer(), SENTENCES[:3], batch_size=2)


def hand_rotation(p: int, dh: int) -> np.ndarray:
    """R_p written out: coordinate pair (a, a + d/2) turned by p·θ^(−2a/d), as the rotary embedding defines."""
    R = np.zeros((dh, dh))
    for a in range(dh // 2):
        ang = p * THETA ** (-2 * a / dh)
        c, s = math.cos(ang), math.sin(ang)
        R[a, a], R[a, a + dh // 2] = c, -s
        R[a + dh // 2, a], R[a + dh // 2, a + dh // 2] = s, c
    return R


def test_rotary_against_a_hand_computation(llama):
    model, cap = llama
    rot = adapter_for(model).rotary(model)
    dh = D // H
    rng = np.random.default_rng(0)
    q = rng.normal(size=(5, dh))
    pos = np.arange(5) * 7
    want = np.stack([hand_rotation(int(p), dh) @ q[i] for i, p in enumerate(pos)])
    np.testing.assert_allclose(rot.inv_freq, THETA ** (-np.arange(0, dh, 2) / dh), rtol=1e-7)  # float32 in the model
    np.testing.assert_allclose(rot.apply(q, pos), want, atol=1e-5)
    with pytest.raises(AssertionError):  # the other pairing convention (2a, 2a + 1) is caught
        np.testing.assert_allclose(rot.apply(q[:, np.r_[0:dh:2, 1:dh:2]], pos)[:, np.argsort(np.r_[0:dh:2, 1:dh:2])],
                                   want, atol=1e-5)
    # the score depends on the offset only: (R_i q)·(R_j k) = qᵀ R(j − i) k
    k = rng.normal(size=dh)
    np.testing.assert_allclose((hand_rotation(9, dh) @ q[0]) @ (hand_rotation(4, dh) @ k), q[0] @ rot.matrix(-5) @ k,
                               atol=1e-5)
    # the average over offsets is the average of the rotations
    offs, w = np.array([0, -1, -3]), np.array([0.5, 0.3, 0.2])
    np.testing.assert_allclose(rot.offset_average(offs, w), sum(wi * hand_rotation(int(o), dh) for o, wi in zip(offs, w)),
                               atol=1e-6)


def test_head_mapping_of_grouped_query_attention(llama):
    model, _ = llama
    ad = adapter_for(model)
    layer = ad.layers(model)[0]
    hw = ad.heads(model, layer)
    assert hw.kv_heads().tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    dh = D // H
    Wk = layer.self_attn.k_proj.weight.detach().double().numpy().reshape(HKV, dh, D)
    Wv = layer.self_attn.v_proj.weight.detach().double().numpy().reshape(HKV, dh, D)
    for h in range(H):
        np.testing.assert_array_equal(hw.Wk[h], Wk[h // (H // HKV)])
        np.testing.assert_array_equal(hw.Wv[h], Wv[h // (H // HKV)])
    with pytest.raises(AssertionError):  # a wrong mapping (h mod H_kv) is caught
        np.testing.assert_array_equal(hw.Wk[1], Wk[1 % HKV])


def test_causal_mask_and_rotary_scores_reproduce_the_models_attention(llama):
    model, cap = llama
    ad = adapter_for(model)
    rot = ad.rotary(model)
    for layer in range(cap.n_layers):
        hw = ad.heads(model, ad.layers(model)[layer])
        X_all = cap.get(layer, ad.attn_input_stage).astype(np.float64)
        for P_model, (a, b) in zip(cap.attentions[layer], cap.sentences()):
            n = b - a
            assert np.all(P_model[:, ~np.tril(np.ones((n, n), bool))] == 0)  # the model's own mask
            S = head_scores(hw, X_all[a:b], cap.position[a:b], rot, causal=True)
            P = np.exp(S - S.max(-1, keepdims=True))
            P /= P.sum(-1, keepdims=True)
            np.testing.assert_allclose(P, P_model, atol=2e-6)
            # without the rotation or without the mask the weights differ
            S0 = head_scores(hw, X_all[a:b], cap.position[a:b], None, causal=True)
            assert np.abs(np.exp(S0 - S0.max(-1, keepdims=True)) / np.exp(S0 - S0.max(-1, keepdims=True)).sum(-1, keepdims=True)
                          - P_model).max() > 1e-4
            assert np.isfinite(head_scores(hw, X_all[a:b], cap.position[a:b], rot, causal=False)).all()


def test_gradient_of_log_z_with_rotary_positions_against_autograd(llama):
    """∇_{x_i} log Σ_{j≤i} exp((R_i W_q x_i)·(R_j k_j)/√d), keys fixed, by autograd through the model's own
    rotary code, equals log_z_gradient."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    model, cap = llama
    ad = adapter_for(model)
    hw = ad.heads(model, ad.layers(model)[1])
    a, b = cap.sentences()[0]
    n = b - a
    X = cap.get(1, ad.attn_input_stage)[a:b].astype(np.float64)
    pos = cap.position[a:b]
    rot = ad.rotary(model)
    S = head_scores(hw, X, pos, rot, causal=True)
    P = np.exp(S - S.max(-1, keepdims=True))
    P /= P.sum(-1, keepdims=True)
    G = log_z_gradient(hw, X, P, pos, rot)
    cos, sin = model.rotary_emb(torch.zeros(1, n, 1, dtype=torch.float64), torch.arange(n)[None])
    K = torch.tensor(np.einsum("hcd,nd->hnc", hw.Wk, X))
    for i in (0, n // 2, n - 1):
        x = torch.tensor(X[i], requires_grad=True)
        q = (torch.tensor(hw.Wq) @ x)[:, None, :].expand(H, n, -1)  # the query at every position, keep row i
        qr, kr = apply_rotary_pos_emb(q[None], K[None], cos.double(), sin.double())
        s = (qr[0, :, i, None] * kr[0, :, : i + 1]).sum(-1) / math.sqrt(D // H)  # (H, i + 1)
        torch.logsumexp(s, -1).sum().backward()
        # every head's gradient summed (autograd over the heads' sum) = Σ_h G_h
        np.testing.assert_allclose(x.grad.numpy(), G[:, i].sum(0), rtol=1e-4, atol=1e-8)


@pytest.mark.slow
def test_cloud_operators_reproduce_every_stage_of_the_llama(llama):
    """The JAX operators with the rotary positions and the causal mask give every stage of the model
    (attention included) on a sentence."""
    model, cap = llama
    ad = adapter_for(model)
    ops = model_operators(model, ad)
    a, b = cap.sentences()[0]
    for layer, op in enumerate(ops):
        got = push([op], jnp.asarray(cap.get(layer, "input")[a:b].astype(np.float64)), ad.pre_ln)[0]
        for stage in ad.stages:
            np.testing.assert_allclose(got[stage], cap.get(layer, stage)[a:b], atol=3e-5, err_msg=f"layer {layer} {stage}")


def test_temperature_of_the_particle_form_is_its_beta():
    """A head whose scores are β·cos(x_i, x_j) (unit tokens, W_qᵀW_k = β√d I) has β and alignment 1."""
    from attnphys.probes.adapters import HeadWeights
    from attnphys.probes.capture import Capture
    from attnphys.probes.particle import head_temperatures

    rng = np.random.default_rng(0)
    Dm, beta = 6, 3.7
    X = rng.normal(size=(30, Dm))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    Wq = np.eye(Dm)[None] * math.sqrt(beta) * Dm**0.25
    z = np.zeros((1, Dm))
    hw = HeadWeights(Wq, z, Wq, z, Wq, z, np.eye(Dm)[None])

    class Ad:
        causal, attn_input_stage, stages = True, "attn_norm", ("attn_norm",)

    cap = Capture(adapter=Ad(), stages={(0, "attn_norm"): X}, sentence=np.repeat([0, 1, 2], 10),  # pyright: ignore[reportArgumentType]
                  position=np.tile(np.arange(10), 3), special=np.zeros(30, bool), n_layers=1)
    t = head_temperatures(cap, [hw])
    np.testing.assert_allclose(t["beta"], [[beta]], rtol=1e-12)
    np.testing.assert_allclose(t["alignment"], [[1.0]], rtol=1e-12)

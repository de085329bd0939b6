"""The paper's proposed experiments on captured hidden states, each with null baselines and an
uncertainty (theory: docs/theory/probes.md §3, §4).

(a) :func:`cloud_stages` — all token-cloud statistics per layer and stage, with and without special
    tokens, norms also without their learned affine; standard errors from sentence folds.
(b) :func:`qk_vs_inverse_covariance` — cosine similarity of sym(W_qᵀW_k)/√d_h (per head and summed)
    with (Σ + λ·tr Σ/D·I)⁻¹ of the attention input, over a λ sweep (LayerNorm outputs have rank D − 1);
    nulls: random rotations of the target, the other layers' Σ⁻¹, Σ itself, heads of other layers.
(c) :func:`mlp_linearity` — held-out R² (split by sentence) of the best affine map from MLP input to
    output, of the identity, the relative update norm, and the affine R² of a random-initialised MLP.
(d) :func:`update_vs_gradient` — cosine between a head's real update W_o,h(W_v,h E_p[x] + b_v) and the
    gradient ∇_{x_i} log Σ_j e^{score_ij} of its own log-normalizer; null: other heads' gradients.
(e) :func:`swap_normalization` — replace every norm (keeping its affine) by another normalization of
    :mod:`attnphys.clouds.norms` (the same objects and names as the token clouds: ``rmsnorm``,
    ``sphere``, ``rn``, ``diagonal_rn``, ``none``), without retraining; how far the final embeddings move.
    The cloud-wise norms (``rn``, ``diagonal_rn``) take their statistics over the real (unpadded) tokens
    of the batch.

torch is imported only inside the functions that run the model.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnphys.clouds.norms import NORMS, AbstractNorm, Sphere
from attnphys.clouds.stats import STATISTICS, cloud_statistics
from attnphys.probes.capture import Capture

FOLDS = 4
"""Sentence folds of the cloud statistics' standard errors, and held-out splits of the MLP fit."""

MIN_FOLD_TOKENS = 8
"""Fewest sampled tokens per sentence fold for a standard error of the cloud statistics."""


def _folds(sentence: np.ndarray, k: int = FOLDS) -> list[np.ndarray]:
    ids = np.unique(sentence)
    return [np.isin(sentence, ids[i::k]) for i in range(k)]


def norm_input_stage(cap: Capture, norm_stage: str) -> str:
    """Which captured stage feeds a norm stage (theory: docs/theory/probes.md §1)."""
    st = cap.adapter.stages
    if cap.adapter.pre_ln:
        return {"attn_norm": "input", "mlp_norm": "attn_add"}[norm_stage]
    return st[st.index(norm_stage) - 1]


def cloud_stages(cap: Capture, max_tokens: int = 1024, seed: int = 0) -> dict:
    """Statistics (layer, stage, tokens ∈ {all, no_special}, statistic) and their fold standard errors
    (theory: docs/theory/probes.md §3.1, §4).

    Each token set is a fixed, seeded sample of ≤ ``max_tokens`` tokens used at every stage (so
    ``moved_apart`` compares each stage with the previous one on identical tokens); folds split it by
    sentence and are trimmed to a common size, so every call has one of a few array shapes (compiled once).
    With fewer than :data:`FOLDS` sentences, or a fold under :data:`MIN_FOLD_TOKENS` tokens, there is no
    standard error: ``se`` stays NaN and ``folds`` (per token set) is 0.
    """
    rng = np.random.default_rng(seed)
    stages = list(cap.adapter.stages) + ["attn_norm_noaffine", "mlp_norm_noaffine"]
    # the family's norm (LayerNorm or RMSNorm, which take eps) without its learned affine
    norm_obj = NORMS[cap.adapter.norm](eps=1e-12)  # pyright: ignore[reportCallIssue]

    def norm(X):
        return np.asarray(norm_obj(X))

    sets = []
    for drop in (False, True):
        pool = np.flatnonzero(~cap.special) if drop else np.arange(cap.sentence.size)
        sub = np.sort(rng.permutation(pool)[:max_tokens])
        folds = _folds(cap.sentence[sub])
        size = min(int(f.sum()) for f in folds)
        sets.append((sub, [np.flatnonzero(f)[:size] for f in folds] if size >= MIN_FOLD_TOKENS else []))
    L, S = cap.n_layers, len(stages)
    val = np.full((L, S, 2, len(STATISTICS)), np.nan)
    se = np.full_like(val, np.nan)

    def stats(X, before):
        st = cloud_statistics(X.astype(np.float32), None if before is None else before.astype(np.float32))
        return [st[k] for k in STATISTICS]

    for layer in range(L):
        prev = None
        for s, stage in enumerate(stages):
            if stage.endswith("_noaffine"):
                src = cap.get(layer, norm_input_stage(cap, stage[: -len("_noaffine")]))
                X, before = norm(src), src
            else:
                X, before = cap.get(layer, stage), prev
            for v, (sub, folds) in enumerate(sets):
                b = None if before is None else before[sub]
                val[layer, s, v] = stats(X[sub], b)
                per_fold = [stats(X[sub][f], None if b is None else b[f]) for f in folds]
                if len(per_fold) > 1:
                    se[layer, s, v] = np.std(per_fold, axis=0, ddof=1) / np.sqrt(len(per_fold))
            if not stage.endswith("_noaffine"):
                prev = X
    return dict(
        values=val,
        se=se,
        stages=stages,
        tokens=["all", "no_special"],
        n_tokens=int(sets[0][0].size),
        folds=[len(folds) for _, folds in sets],
    )


def _cos(A, B):
    return float(np.sum(A * B) / (np.linalg.norm(A) * np.linalg.norm(B) + 1e-300))


def _haar(rng, D):
    Q, R = np.linalg.qr(rng.normal(size=(D, D)))
    return Q * np.sign(np.diag(R))


def qk_vs_inverse_covariance(
    cap: Capture, heads: list, lams=(1e-4, 1e-3, 1e-2, 1e-1, 1.0), n_rot: int = 10, seed: int = 0
) -> dict:
    """Similarities (layer, head (H per-head + 1 summed), λ) and their nulls (see module doc)
    (theory: docs/theory/probes.md §3.3, §4)."""
    rng = np.random.default_rng(seed)
    L = cap.n_layers
    H = heads[0].n_heads
    D = heads[0].Wq.shape[2]
    forms = []
    for hw in heads:
        A = hw.bilinear()
        A = 0.5 * (A + A.transpose(0, 2, 1))
        forms.append(np.concatenate([A, A.sum(0, keepdims=True)]))  # (H + 1, D, D)
    forms = np.stack(forms)
    sigmas = [np.cov(cap.get(layer, cap.adapter.attn_input_stage), rowvar=False) for layer in range(L)]
    targets = np.empty((L, len(lams), D, D))
    for layer, S in enumerate(sigmas):
        w, V = np.linalg.eigh(S)
        w = np.maximum(w, 0)
        for j, lam in enumerate(lams):
            targets[layer, j] = (V / (w + lam * w.sum() / D)) @ V.T
    sim = np.einsum("lhde,lkde->lhk", forms, targets)
    sim /= np.linalg.norm(forms, axis=(2, 3))[:, :, None] * np.linalg.norm(targets, axis=(2, 3))[:, None, :]
    rots = [_haar(rng, D) for _ in range(n_rot)]
    rot = np.empty((n_rot, L, H + 1, len(lams)))
    for r, Q in enumerate(rots):
        Tr = Q @ targets @ Q.T  # rotated targets Q T Qᵀ (L, λ, D, D)
        rot[r] = np.einsum("lhde,lkde->lhk", forms, Tr) / (
            np.linalg.norm(forms, axis=(2, 3))[:, :, None] * np.linalg.norm(Tr, axis=(2, 3))[:, None, :]
        )
    other_layer = np.full((L, H + 1, len(lams)), np.nan)
    mismatched = np.full_like(other_layer, np.nan)
    sigma_itself = np.empty((L, H + 1))
    for layer in range(L):
        others = [m for m in range(L) if m != layer]
        for h in range(H + 1):
            sigma_itself[layer, h] = _cos(forms[layer, h], sigmas[layer])
            if others:
                other_layer[layer, h] = np.mean(
                    [[_cos(forms[layer, h], targets[m, j]) for j in range(len(lams))] for m in others], 0
                )
                mismatched[layer, h] = np.mean(
                    [[_cos(forms[m, h], targets[layer, j]) for j in range(len(lams))] for m in others], 0
                )
    return dict(
        similarity=sim,
        null_rotation_mean=rot.mean(0),
        null_rotation_std=rot.std(0, ddof=1),
        null_other_layer=other_layer,
        null_mismatched_head=mismatched,
        similarity_to_sigma=sigma_itself,
        lams=np.asarray(lams),
    )


def _affine_r2(X_tr, Y_tr, X_te, Y_te, ridge: float = 1e-3) -> float:
    mx, my = X_tr.mean(0), Y_tr.mean(0)
    Xc, Yc = X_tr - mx, Y_tr - my
    G = Xc.T @ Xc
    G[np.diag_indices_from(G)] += ridge * np.trace(G) / G.shape[0]
    B = np.linalg.solve(G, Xc.T @ Yc)
    pred = (X_te - mx) @ B + my
    return 1.0 - np.sum((Y_te - pred) ** 2) / np.sum((Y_te - Y_te.mean(0)) ** 2)


def mlp_linearity(cap: Capture, init_std: float = 0.02, seed: int = 0) -> dict:
    """Per layer: held-out affine R², identity R², relative update norm, random-MLP affine R², and the
    standard error of the affine R² over :data:`FOLDS` seeded held-out splits (30 % of the sentences each):
    std/√k over the k distinct ones, NaN when fewer than two are distinct (two or three sentences) (theory:
    docs/theory/probes.md §3.4). ``splits``: k."""
    rng = np.random.default_rng(seed)
    in_stage = "mlp_norm" if cap.adapter.pre_ln else "attn_norm"
    ids = np.unique(cap.sentence)
    held_out = [
        np.random.default_rng([seed, split]).permutation(ids)[: max(1, ids.size * 3 // 10)] for split in range(FOLDS)
    ]
    distinct = [i for i, t in enumerate(held_out) if all(set(t) != set(held_out[j]) for j in range(i))]
    out: dict[str, Any] = {
        k: np.empty(cap.n_layers) for k in ("r2_affine", "r2_affine_se", "r2_identity", "rel_update", "r2_random_mlp")
    }
    for layer in range(cap.n_layers):
        X, Y = cap.get(layer, in_stage), cap.get(layer, "mlp_out")
        r2s = []
        for split in distinct:
            te = np.isin(cap.sentence, held_out[split])
            r2s.append(_affine_r2(X[~te], Y[~te], X[te], Y[te]))
        out["r2_affine"][layer] = r2s[0]
        out["r2_affine_se"][layer] = np.std(r2s, ddof=1) / np.sqrt(len(r2s)) if len(r2s) > 1 else np.nan
        out["r2_identity"][layer] = 1.0 - np.sum((Y - X) ** 2) / np.sum((Y - Y.mean(0)) ** 2)
        out["rel_update"][layer] = float(np.mean(np.linalg.norm(Y, axis=1) / np.linalg.norm(X, axis=1)))
        D = X.shape[1]
        W1, W2 = rng.normal(0, init_std, (D, 4 * D)), rng.normal(0, init_std, (4 * D, D))
        Z = X @ W1
        Yr = (0.5 * Z * (1 + np.tanh(np.sqrt(2 / np.pi) * (Z + 0.044715 * Z**3)))) @ W2
        te = np.isin(cap.sentence, held_out[0])
        out["r2_random_mlp"][layer] = _affine_r2(X[~te], Yr[~te], X[te], Yr[te])
    out["splits"] = len(distinct)
    return out


def update_vs_gradient(cap: Capture, heads: list) -> dict:
    """Per (layer, head): mean cosine between the head's update and ∇ log Z of its own scores, and the
    mean over the other heads' gradients (null) (theory: docs/theory/probes.md §3.6)."""
    L, H = cap.n_layers, heads[0].n_heads
    cos_own = np.zeros((L, H))
    cos_null = np.zeros((L, H))
    for layer in range(L):
        hw = heads[layer]
        X_all = cap.get(layer, cap.adapter.attn_input_stage)
        sums = np.zeros((H, H))
        count = 0
        start = 0
        for P in cap.attentions[layer]:  # (H, n, n) per sentence
            n = P.shape[1]
            X = X_all[start : start + n]
            start += n
            K = np.einsum("hcd,nd->hnc", hw.Wk, X) + hw.bk[:, None, :]
            V = np.einsum("hcd,nd->hnc", hw.Wv, X) + hw.bv[:, None, :]
            U = np.einsum("hdc,hnc->hnd", hw.Wo, np.einsum("hij,hjc->hic", P, V))  # head updates (H, n, D)
            G = np.einsum("hcd,hnc->hnd", hw.Wq, np.einsum("hij,hjc->hic", P, K)) / np.sqrt(hw.head_dim)
            Un = U / (np.linalg.norm(U, axis=2, keepdims=True) + 1e-300)
            Gn = G / (np.linalg.norm(G, axis=2, keepdims=True) + 1e-300)
            sums += np.einsum("hnd,gnd->hg", Un, Gn)
            count += n
        C = sums / count
        cos_own[layer] = np.diag(C)
        cos_null[layer] = (C.sum(1) - np.diag(C)) / max(H - 1, 1)
    return dict(cos_update_gradient=cos_own, cos_null_other_heads=cos_null)


def swap_norm(kind: str, dim: int) -> AbstractNorm:
    """The replacement normalization ``kind`` (a name in :data:`attnphys.clouds.norms.NORMS`) for a model
    of width D, without affine: the sphere has radius √D, the scale of a LayerNorm output
    (theory: docs/theory/probes.md §3.5)."""
    if kind not in NORMS:
        raise ValueError(f"unknown normalization {kind!r}; choose from {', '.join(NORMS)}")
    return Sphere(radius=float(dim) ** 0.5) if kind == "sphere" else NORMS[kind]()


def _swap_forward(norm: AbstractNorm, mask):
    """A forward for a norm module: ``norm`` on the real tokens (``mask`` (B, T) bool) as one cloud, then
    the module's own affine parameters; padded positions are normalized token-wise or left as they are."""
    import jax.numpy as jnp
    import torch

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        keep = mask.reshape(-1) if mask is not None and mask.numel() == flat.shape[0] else None
        X = flat.detach().double().cpu().numpy()
        Y = X.copy()
        if keep is None or norm.tokenwise:
            Y = np.asarray(norm(jnp.asarray(X)))
        else:
            k = keep.cpu().numpy()
            Y[k] = np.asarray(norm(jnp.asarray(X[k])))
        y = torch.as_tensor(np.array(Y), dtype=x.dtype, device=x.device).reshape(x.shape)
        w = getattr(self, "weight", None)
        b = getattr(self, "bias", None)
        if w is not None:
            y = y * w
        if b is not None:
            y = y + b
        return y

    return forward


SWAPS = ("rmsnorm", "sphere", "rn", "diagonal_rn", "none")
"""Replacement normalizations tried by :func:`swap_normalization` (names of :data:`attnphys.clouds.norms.NORMS`)."""


def swap_normalization(model, tokenizer, sentences: list[str], adapter, kinds=SWAPS, max_length: int = 64) -> dict:
    """Per variant: mean cosine similarity of the final token embeddings with the original ones, relative
    L2 change, and the same for mean-pooled sentence embeddings; plus the per-layer relative change
    (theory: docs/theory/probes.md §3.5)."""
    import torch

    with torch.no_grad():
        return _swap_normalization(torch, model, tokenizer, sentences, adapter, kinds, max_length)


def _swap_normalization(torch, model, tokenizer, sentences, adapter, kinds, max_length) -> dict:
    import types

    enc = tokenizer(sentences, return_tensors="pt", padding=True, truncation=True, max_length=max_length)
    mask = enc["attention_mask"].bool()
    ref = model(**enc, output_hidden_states=True)
    out: dict[str, Any] = {k: np.empty(len(kinds)) for k in ("token_cosine", "relative_change", "sentence_cosine")}
    per_layer = np.empty((len(kinds), len(ref.hidden_states)))
    norms = adapter.norm_modules(model)
    for i, kind in enumerate(kinds):
        saved = [m.forward for _, m in norms]
        try:
            for _, m in norms:
                m.forward = types.MethodType(_swap_forward(swap_norm(kind, ref.last_hidden_state.shape[-1]), mask), m)
            new = model(**enc, output_hidden_states=True)
        finally:
            for (_, m), f in zip(norms, saved):
                m.forward = f
        a, b = ref.last_hidden_state[mask], new.last_hidden_state[mask]
        out["token_cosine"][i] = float(torch.nn.functional.cosine_similarity(a, b, dim=-1).mean())
        out["relative_change"][i] = float(((b - a).norm(dim=-1) / a.norm(dim=-1)).mean())
        mf = mask[..., None].to(a.dtype)
        pa = (ref.last_hidden_state * mf).sum(1) / mf.sum(1)
        pb = (new.last_hidden_state * mf).sum(1) / mf.sum(1)
        out["sentence_cosine"][i] = float(torch.nn.functional.cosine_similarity(pa, pb, dim=-1).mean())
        for j, (h0, h1) in enumerate(zip(ref.hidden_states, new.hidden_states)):
            per_layer[i, j] = float(((h1[mask] - h0[mask]).norm(dim=-1) / h0[mask].norm(dim=-1)).mean())
    out["per_layer_relative_change"] = per_layer
    out["kinds"] = list(kinds)
    return out

"""The paper's proposed experiments on captured hidden states, each with null baselines and an
uncertainty (theory: docs/theory/probes.md §3, §4), written for encoders and decoders alike.

(a) :func:`cloud_stages` — all token-cloud statistics per layer and stage, with and without special
    tokens, norms also without their learned affine; standard errors and per-fold values from sentence
    folds.
(b) :func:`qk_vs_inverse_covariance` — cosine similarity of sym(W_qᵀW_k)/√d_h (per head and summed)
    with (Σ + λ·tr Σ/D·I)⁻¹ of the attention input, over a λ sweep; for rotary models also the form
    averaged over the causal offsets of the text; nulls: Haar-random rotations of the target (exact mean
    and spread), the other layers' Σ⁻¹, Σ itself, heads of other layers.
(c) :func:`mlp_linearity` — held-out R² (split by sentence) of the best affine map from MLP input to
    output (plain or gated MLP alike), of the identity, the relative update norm, and the affine R² of a
    random-initialised MLP of the family's own shape.
(d) :func:`update_vs_gradient` — cosine between a head's real update W_o,h(W_v,h E_p[x] + b_v) and the
    gradient ∇_{x_i} log Σ_j e^{score_ij} of its own log-normalizer (rotary rotations and the causal mask
    included), against every other head's gradient.
(e) :func:`swap_normalization` — replace every norm (keeping its affine) by another normalization of
    :mod:`attnphys.clouds.norms` (the same objects and names as the token clouds; by default every
    registered one that can run on the model, :func:`default_swaps`), without retraining; how far the final
    embeddings move. The cloud-wise norms (``rn``, ``diagonal_rn``, an outside package's with
    ``tokenwise = False``) take their statistics over the real tokens of the batch, which a causal model
    must not see: they are not run on causal models (:func:`causal_safe`, read from each norm's class).

torch is imported only inside the functions that run the model.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from attnphys.clouds.norms import AbstractNorm, Sphere, norm_class
from attnphys.clouds.stats import STATISTICS, cloud_statistics
from attnphys.probes.adapters._base import project
from attnphys.probes.capture import Capture
from attnphys.probes.significance import rotation_null

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


TOKEN_SETS = ("all", "no_special", "no_sinks")
"""Token sets of the cloud statistics: every real token, without the tokenizer's special tokens, without
the sink positions (:func:`attnphys.probes.sinks.find_sinks`; the headline set)."""


def cloud_stages(cap: Capture, max_tokens: int = 1024, seed: int = 0) -> dict:
    """Statistics (layer, stage, tokens ∈ :data:`TOKEN_SETS`, statistic) and their fold standard errors
    (theory: docs/theory/probes.md §3.1, §3.7, §4).

    Each token set is a seeded sample of ≤ ``max_tokens`` tokens used at every stage of a layer (so
    ``moved_apart`` compares each stage with the previous one on identical tokens), drawn in one seeded
    order from the set's tokens whose states are not repeats of an earlier token's
    (:func:`attnphys.probes.sinks.duplicates`: identical states, such as the same prefix in a causal model,
    would leave the k-NN entropy undefined);
    folds split it by sentence and are trimmed to a common size, so every call has one of a few array
    shapes (compiled once). With fewer than :data:`FOLDS` sentences, or a fold under
    :data:`MIN_FOLD_TOKENS` tokens, there is no standard error: ``se`` stays NaN and ``folds`` (per token
    set, the fewest over the layers) is 0. ``folds_values`` (fold, layer, stage, tokens, statistic) keeps
    each fold's value, for paired tests between stages. A token set equal to the first one (no special
    tokens, no sinks) is not computed again. ``n_tokens`` (tokens,) the sample size of each set (the
    smallest over the layers) and ``duplicates`` (layer,) how many tokens repeat an earlier token's state.
    """
    from attnphys.probes.sinks import duplicates

    rng = np.random.default_rng(seed)
    stages = list(cap.adapter.stages) + ["attn_norm_noaffine", "mlp_norm_noaffine"]
    # the family's norm (LayerNorm or RMSNorm, which take eps) without its learned affine
    norm_obj = norm_class(cap.adapter.norm)(eps=1e-12)  # pyright: ignore[reportCallIssue]

    def norm(X):
        return np.asarray(norm_obj(X))

    T = cap.sentence.size
    order = rng.permutation(T)
    pools = [np.ones(T, bool), ~cap.special, ~cap.sinks]
    same = [False, not cap.special.any(), not cap.sinks.any()]
    L, S, K = cap.n_layers, len(stages), len(TOKEN_SETS)
    dups = [duplicates(cap, layer) for layer in range(L)] if cap.token_ids is None else [duplicates(cap)] * L

    def sample(v: int, layer: int):
        ok = pools[v] & ~dups[layer]
        sub = np.sort(order[ok[order]][:max_tokens])
        folds = _folds(cap.sentence[sub])
        size = min(int(f.sum()) for f in folds)
        return sub, ([np.flatnonzero(f)[:size] for f in folds] if size >= MIN_FOLD_TOKENS else [])

    sets = [[sample(v, layer) for v in range(K)] for layer in range(L)]
    val = np.full((L, S, K, len(STATISTICS)), np.nan)
    se = np.full_like(val, np.nan)
    per_fold_all = np.full((FOLDS, L, S, K, len(STATISTICS)), np.nan)

    def stats(X, before):
        st = cloud_statistics(X.astype(np.float32), None if before is None else before.astype(np.float32))
        return [st[k] for k in STATISTICS]

    def one_layer(layer: int) -> None:
        prev = None
        for s, stage in enumerate(stages):
            if stage.endswith("_noaffine"):
                src = cap.get(layer, norm_input_stage(cap, stage[: -len("_noaffine")]))
                X, before = norm(src), src
            else:
                X, before = cap.get(layer, stage), prev
            for v, (sub, folds) in enumerate(sets[layer]):
                if same[v]:
                    val[layer, s, v], se[layer, s, v] = val[layer, s, 0], se[layer, s, 0]
                    per_fold_all[:, layer, s, v] = per_fold_all[:, layer, s, 0]
                    continue
                b = None if before is None else before[sub]
                val[layer, s, v] = stats(X[sub], b)
                per_fold = [stats(X[sub][f], None if b is None else b[f]) for f in folds]
                if len(per_fold) > 1:
                    se[layer, s, v] = np.std(per_fold, axis=0, ddof=1) / np.sqrt(len(per_fold))
                    per_fold_all[: len(per_fold), layer, s, v] = per_fold
            if not stage.endswith("_noaffine"):
                prev = X

    # layers are independent: two at a time keep both cores busy through the statistics' serial parts
    # (each writes its own slice of the arrays; the values do not depend on the schedule)
    with (
        threadpool_limits(limits=1, user_api="blas"),
        ThreadPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1))) as pool,
    ):
        list(pool.map(one_layer, range(L)))
    return dict(
        values=val,
        se=se,
        folds_values=per_fold_all,
        stages=stages,
        tokens=list(TOKEN_SETS),
        n_tokens=[min(int(sets[layer][v][0].size) for layer in range(L)) for v in range(K)],
        folds=[min(len(sets[layer][v][1]) for layer in range(L)) for v in range(K)],
        duplicates=np.array([int(d.sum()) for d in dups]),
    )


def _cos(A, B):
    return float(np.sum(A * B) / (np.linalg.norm(A) * np.linalg.norm(B) + 1e-300))


def causal_offsets(cap: Capture) -> tuple[np.ndarray, np.ndarray]:
    """Key-minus-query offsets r ≤ 0 of the attended pairs of the captured text (a causal model: every
    j ≤ i of a sentence) and their frequencies (summing to 1)."""
    counts = np.zeros(int(cap.lengths.max()) if cap.lengths.size else 1)
    for n in cap.lengths:
        counts[:n] += np.arange(n, 0, -1)  # offset −r occurs n − r times in a sentence of n tokens
    return -np.arange(counts.size), counts / counts.sum()


def qk_vs_inverse_covariance(
    cap: Capture, heads: list, lams=(1e-4, 1e-3, 1e-2, 1e-1, 1.0), rotary=None, keep: np.ndarray | None = None
) -> dict:
    """Similarities (layer, head (H per-head + 1 summed), λ), their z-scores against Haar-random rotations
    of the target (exact moments, :func:`attnphys.probes.significance.rotation_null`) and the other nulls
    (see module doc) (theory: docs/theory/probes.md §3.3, §4), Σ over the tokens ``keep`` (T,) bool (all
    by default). With ``rotary`` (a :class:`~attnphys.probes.adapters.Rotary`),
    ``similarity_offset_average`` compares the form averaged over the text's causal offsets, W_qᵀ R̄ W_k;
    without, it is NaN. Specificity: ``best_other_layer`` the highest similarity of the layer's form with
    another layer's target, ``best_mismatched_head`` the highest of another layer's form with this layer's
    target, ``specificity`` the own similarity minus the larger of the two (> 0: the layer's own Σ⁻¹ fits
    its own form best)."""
    L = cap.n_layers
    H = heads[0].n_heads
    D = heads[0].Wq.shape[2]
    R = None if rotary is None else rotary.offset_average(*causal_offsets(cap))

    def forms_of(hw, rot):
        A = hw.bilinear(rot)
        A = 0.5 * (A + A.transpose(0, 2, 1))
        return np.concatenate([A, A.sum(0, keepdims=True)])  # (H + 1, D, D)

    targets = np.empty((L, len(lams), D, D), np.float32)
    sigmas = []
    sim = np.empty((L, H + 1, len(lams)))
    null_mean, null_std = np.empty_like(sim), np.empty_like(sim)
    sim_avg = np.full_like(sim, np.nan)
    sigma_itself = np.empty((L, H + 1))
    unit_forms = np.empty((L, H + 1, D, D), np.float32)
    for layer in range(L):
        X = cap.get(layer, cap.adapter.attn_input_stage)
        S = np.cov(X if keep is None else X[keep], rowvar=False)
        sigmas.append(S)
        w, V = np.linalg.eigh(S)
        w = np.maximum(w, 0)
        T = np.stack([(V / (w + lam * w.sum() / D)) @ V.T for lam in lams])  # (λ, D, D)
        Tn = T / np.linalg.norm(T, axis=(1, 2), keepdims=True)
        targets[layer] = Tn
        F = forms_of(heads[layer], None)
        Fn = F / np.linalg.norm(F, axis=(1, 2), keepdims=True)
        unit_forms[layer] = Fn
        sim[layer] = np.einsum("hde,kde->hk", Fn, Tn)
        null_mean[layer], null_std[layer] = rotation_null(Fn[:, None], Tn[None])
        sigma_itself[layer] = np.einsum("hde,de->h", Fn, S) / np.linalg.norm(S)
        if R is not None:
            Fa = forms_of(heads[layer], R)
            sim_avg[layer] = np.einsum("hde,kde->hk", Fa / np.linalg.norm(Fa, axis=(1, 2), keepdims=True), Tn)
    # other layers' targets and other layers' heads: all pairs at once (layers × heads against layers × λ)
    cross = (unit_forms.reshape(L * (H + 1), -1) @ targets.reshape(L * len(lams), -1).T).reshape(L, H + 1, L, len(lams))
    other_layer = np.full((L, H + 1, len(lams)), np.nan)
    mismatched = np.full_like(other_layer, np.nan)
    best_other, best_mis = np.full_like(other_layer, np.nan), np.full_like(other_layer, np.nan)
    if L > 1:
        off = ~np.eye(L, dtype=bool)
        for layer in range(L):
            other_layer[layer] = cross[layer][:, off[layer]].mean(1)
            mismatched[layer] = cross[off[layer], :, layer].mean(0)
            best_other[layer] = cross[layer][:, off[layer]].max(1)
            best_mis[layer] = cross[off[layer], :, layer].max(0)
    return dict(
        similarity=sim,
        null_rotation_mean=null_mean,
        null_rotation_std=null_std,
        null_other_layer=other_layer,
        null_mismatched_head=mismatched,
        best_other_layer=best_other,
        best_mismatched_head=best_mis,
        specificity=sim - np.fmax(best_other, best_mis),
        similarity_to_sigma=sigma_itself,
        similarity_offset_average=sim_avg,
        lams=np.asarray(lams),
    )


def random_twin(mlp, rng, init_std: float):
    """Weights of a random-initialised MLP of the same shape and activation as ``mlp`` (an
    :class:`~attnphys.clouds.mlp.MLP` or :class:`~attnphys.clouds.mlp.GatedMLP`, or None: a GELU MLP of
    width 4D), i.i.d. N(0, init_std²), zero biases, as a function X (T, D) → (T, D) in numpy, computed in the
    precision of X."""
    from attnphys.clouds.mlp import GatedMLP

    def act(name, Z):
        if name == "silu":
            return Z / (1 + np.exp(-Z))
        if name == "relu":
            return np.maximum(Z, 0)
        if name == "gelu":
            from scipy.special import erf

            return 0.5 * Z * (1 + erf(Z / np.sqrt(2)))
        return 0.5 * Z * (1 + np.tanh(np.sqrt(2 / np.pi) * (Z + 0.044715 * Z**3)))

    if isinstance(mlp, GatedMLP):
        F, D = mlp.Wg.shape
        Wg, Wu, Wd = rng.normal(0, init_std, (D, F)), rng.normal(0, init_std, (D, F)), rng.normal(0, init_std, (F, D))
        return lambda X: (act(mlp.activation, X @ Wg.astype(X.dtype)) * (X @ Wu.astype(X.dtype))) @ Wd.astype(X.dtype)
    name = "gelu_tanh" if mlp is None else mlp.activation

    def plain(X):
        D = X.shape[1]
        F = 4 * D if mlp is None else mlp.W1.shape[0]
        W1, W2 = rng.normal(0, init_std, (D, F)).astype(X.dtype), rng.normal(0, init_std, (F, D)).astype(X.dtype)
        return act(name, X @ W1) @ W2

    return plain


MLP_SPLITS = 10
"""Held-out splits of the MLP fit (each holds out :data:`MLP_TEST_FRACTION` of the sentences)."""

MLP_TEST_FRACTION = 0.3
"""Share of the sentences held out in each split of the MLP fit."""


def _gram(X, Y):
    mx, my = X.sum(0), Y.sum(0)
    return X.shape[0], mx, my, X.T @ X, X.T @ Y


def _affine_r2_from(total, part, X_te, Y_te, ridge: float = 1e-3) -> float:
    """Held-out R² of the ridge affine fit on the training rows, whose sufficient statistics are the
    total minus the held-out ``part`` (theory: docs/theory/probes.md §3.4)."""
    n, sx, sy, xx, xy = (a - b for a, b in zip(total, part))
    mx, my = sx / n, sy / n
    G = xx - n * np.outer(mx, mx)
    G[np.diag_indices_from(G)] += ridge * np.trace(G) / G.shape[0]
    B = np.linalg.solve(G, xy - n * np.outer(mx, my))
    pred = (X_te - mx) @ B + my
    return 1.0 - np.sum((Y_te - pred) ** 2) / np.sum((Y_te - Y_te.mean(0)) ** 2)


def mlp_linearity(
    cap: Capture,
    init_std: float = 0.02,
    seed: int = 0,
    mlps: list | None = None,
    keep: np.ndarray | None = None,
    splits: int = MLP_SPLITS,
) -> dict:
    """Per layer: held-out affine R², identity R², relative update norm, random-MLP affine R² (an MLP of
    the family's shape, ``mlps``: the layers' MLP objects, plain or gated; None: GELU of width 4D), and the
    standard error of the affine R² over ``splits`` seeded held-out splits (:data:`MLP_TEST_FRACTION` of
    the sentences each), corrected for the overlap of their training sets (Nadeau and Bengio:
    s·√(1/k + ρ/(1 − ρ))), NaN when fewer than two are distinct (two or three sentences), on the tokens
    ``keep`` (T,) bool (all by default) (theory: docs/theory/probes.md §3.4). ``r2_affine`` is the mean
    over the splits; ``splits``: k; ``r2_splits`` (layer, split) the R² of every split; ``test_fraction``: ρ.

    A fit is underdetermined where a split trains on fewer tokens than the affine map has parameters per
    output coordinate (D + 1: a row of W and its bias): the least-squares problem then has many exact
    solutions and the ridge term picks one, so its held-out R² measures the regularisation more than the
    map. ``train_tokens`` (layer,) the fewest training tokens of a split, ``parameters`` D + 1,
    ``underdetermined`` (layer,) bool, ``fit_reason`` (layer,) str (empty where the fit is determined)."""
    rng = np.random.default_rng(seed)
    in_stage = "mlp_norm" if cap.adapter.pre_ln else "attn_norm"
    keep = np.ones(cap.sentence.size, bool) if keep is None else keep
    sentence = cap.sentence[keep]
    ids = np.unique(sentence)
    n_test = max(1, int(round(ids.size * MLP_TEST_FRACTION)))
    held_out = [np.random.default_rng([seed, split]).permutation(ids)[:n_test] for split in range(splits)]
    distinct = [i for i, t in enumerate(held_out) if all(set(t) != set(held_out[j]) for j in range(i))]
    out: dict[str, Any] = {
        k: np.empty(cap.n_layers) for k in ("r2_affine", "r2_affine_se", "r2_identity", "rel_update", "r2_random_mlp")
    }
    out["r2_splits"] = np.full((cap.n_layers, splits), np.nan)
    rho = n_test / max(ids.size, 1)
    tests = [np.isin(sentence, held_out[split]) for split in distinct]
    for layer in range(cap.n_layers):
        X = cap.get(layer, in_stage)[keep].astype(np.float64)
        Y = cap.get(layer, "mlp_out")[keep].astype(np.float64)
        total = _gram(X, Y)
        r2s = [_affine_r2_from(total, _gram(X[te], Y[te]), X[te], Y[te]) for te in tests]
        out["r2_splits"][layer, : len(r2s)] = r2s
        out["r2_affine"][layer] = float(np.mean(r2s))
        k = len(r2s)
        out["r2_affine_se"][layer] = np.std(r2s, ddof=1) * np.sqrt(1 / k + rho / (1 - rho)) if k > 1 else np.nan
        out["r2_identity"][layer] = 1.0 - np.sum((Y - X) ** 2) / np.sum((Y - Y.mean(0)) ** 2)
        out["rel_update"][layer] = float(np.mean(np.linalg.norm(Y, axis=1) / np.linalg.norm(X, axis=1)))
        Yr = random_twin(None if mlps is None else mlps[layer], rng, init_std)(X.astype(np.float32)).astype(np.float64)
        te = tests[0]
        out["r2_random_mlp"][layer] = _affine_r2_from(_gram(X, Yr), _gram(X[te], Yr[te]), X[te], Yr[te])
    out["splits"] = len(distinct)
    out["test_fraction"] = rho
    D = cap.get(0, in_stage).shape[1]
    n_train = min((int((~te).sum()) for te in tests), default=0)
    out["train_tokens"] = np.full(cap.n_layers, n_train)
    out["parameters"] = D + 1
    under = n_train < D + 1
    out["underdetermined"] = np.full(cap.n_layers, under)
    out["fit_reason"] = np.full(
        cap.n_layers,
        f"underdetermined: {n_train} training tokens for {D + 1} parameters per output (D = {D} weights and a "
        "bias); the ridge solution's held-out R² says little about the map (give more sentences)"
        if under
        else "",
        dtype=object,
    )
    return out


def head_scores(
    hw, X: np.ndarray, positions: np.ndarray, rotary=None, causal: bool = False, window: int | None = None
) -> np.ndarray:
    """(H, n, n) scores s_ij = (R_i q_i)·(R_j k_j)/√d_h of one sentence's attention input X (n, D), with
    q = W_q x + b_q, k = W_k x + b_k of each query head and its key/value head, R_p the rotary rotation at
    position p (None: no rotation), −∞ where j > i when ``causal`` and where i − j ≥ ``window`` (a sliding
    window; None: none) (theory: docs/theory/probes.md §2.3). softmax over j gives the attention weights."""
    Q, K = project(hw.Wq, hw.bq, X), project(hw.Wk, hw.bk, X)
    if rotary is not None:
        Q, K = rotary.apply(Q, positions), rotary.apply(K, positions)
    return scores_of(Q, K, hw.head_dim, causal, window)


def attended(n: int, causal: bool, window: int | None = None) -> np.ndarray:
    """(n, n) bool: the key positions j each query position i sees: every j, j ≤ i when ``causal``, and
    i − j < ``window`` with a sliding window."""
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    keep = (j <= i) if causal else np.ones((n, n), bool)
    return keep if window is None else keep & (i - j < window)


def scores_of(Q: np.ndarray, K: np.ndarray, head_dim: int, causal: bool, window: int | None = None) -> np.ndarray:
    """(H, n, n) scores q_i·k_j/√d_h of (rotated) queries and keys (H, n, d); −∞ where the query does not
    see the key (:func:`attended`)."""
    S = np.matmul(Q, K.transpose(0, 2, 1)) / np.sqrt(head_dim)
    if causal or window is not None:
        S = np.where(attended(Q.shape[1], causal, window), S, -np.inf)
    return S


def log_z_gradient(hw, X: np.ndarray, P: np.ndarray, positions: np.ndarray, rotary=None) -> np.ndarray:
    """(H, n, D) the gradient of every head's log-normalizer log Σ_j e^{s_ij} with respect to the query token
    x_i (keys held fixed): W_qᵀ R_iᵀ Σ_j P_ij R_j k_j / √d_h, with P (H, n, n) the head's attention weights
    (causal where the model is), k = W_k x + b_k and R_p the rotary rotation at position p (None: no
    rotation) (theory: docs/theory/probes.md §3.6)."""
    K = project(hw.Wk, hw.bk, X)
    if rotary is None:
        ctx = np.matmul(P, K)
    else:  # rotate the keys at their positions, average, rotate back at the query's position (R_pᵀ = R_{−p})
        ctx = rotary.apply(np.matmul(P, rotary.apply(K, positions)), -np.asarray(positions))
    return np.matmul(ctx, hw.Wq) / np.sqrt(hw.head_dim)


def update_vs_gradient(cap: Capture, heads: list, rotary=None, keep: dict | None = None) -> dict:
    """Per layer: C[h, g], the mean over tokens of the cosine between head h's update
    W_o,h Σ_j P_ij (W_v,h x_j + b_v) and head g's gradient ∇_{x_i} log Σ_j e^{s_ij} with respect to the query
    token, W_q,gᵀ R_iᵀ Σ_j P_ij R_j k_j / √d_h (R: the rotary rotations, ``rotary``; P: the model's own
    attention weights, causal where the model is); its diagonal is each head's own alignment, the mean of
    its off-diagonal row the other heads' (theory: docs/theory/probes.md §3.6).

    The mean runs over the query tokens of each mask of ``keep`` ({name: (T,) bool}; default: every
    token, under the name ``all``).

    Returns:
        dict: ``cos_update_gradient`` (L, H), ``cos_null_other_heads`` (L, H), ``matrix`` (L, H, H) of the
        first mask; ``matrices`` {name: (L, H, H)} of every mask.

    Raises:
        ValueError: a capture without the attention weights of every sentence of every layer.
    """
    L, H = cap.n_layers, heads[0].n_heads
    if len(cap.attentions) != L or any(len(a) != len(cap.sentences()) for a in cap.attentions):
        raise ValueError("the capture holds no attention weights (captured with keep_attentions=False)")
    keep = {"all": np.ones(cap.sentence.size, bool)} if keep is None else keep
    all_mats = {name: np.zeros((L, H, H)) for name in keep}
    pos = cap.position
    spans = cap.sentences()
    for layer in range(L):
        hw = heads[layer]
        X = cap.get(layer, cap.adapter.attn_input_stage).astype(np.float64)
        K, V = project(hw.Wk, hw.bk, X), project(hw.Wv, hw.bv, X)  # (H, T, d) for every token at once
        if rotary is not None:
            K = rotary.apply(K, pos)
        ck, cv = np.empty_like(K), np.empty_like(V)
        for P, (a, b) in zip(cap.attentions[layer], spans):  # P: (H, n, n) per sentence
            P = P.astype(np.float64)
            ck[:, a:b], cv[:, a:b] = np.matmul(P, K[:, a:b]), np.matmul(P, V[:, a:b])
        if rotary is not None:
            ck = rotary.apply(ck, -pos)
        U = np.matmul(cv, hw.Wo.transpose(0, 2, 1))  # head updates (H, T, D)
        G = np.matmul(ck, hw.Wq) / np.sqrt(hw.head_dim)  # gradients (H, T, D)
        U /= np.linalg.norm(U, axis=2, keepdims=True) + 1e-300
        G /= np.linalg.norm(G, axis=2, keepdims=True) + 1e-300
        for name, m in keep.items():
            all_mats[name][layer] = np.einsum("htd,gtd->hg", U[:, m], G[:, m], optimize=True) / max(int(m.sum()), 1)
    mats = next(iter(all_mats.values()))
    own = np.diagonal(mats, axis1=1, axis2=2).copy()
    null = (mats.sum(2) - own) / max(H - 1, 1)
    return dict(cos_update_gradient=own, cos_null_other_heads=null, matrix=mats, matrices=all_mats)


def swap_norm(kind: str, dim: int) -> AbstractNorm:
    """The replacement normalization ``kind`` (any name of the norms' registry,
    :func:`attnphys.clouds.norms.norm_names`, an outside package's too) for a model of width D, without
    affine: the sphere has radius √D, the scale of a LayerNorm output (theory: docs/theory/probes.md §3.5).

    Raises:
        ValueError: an unknown name, listing the known ones.
    """
    cls = norm_class(kind)
    return Sphere(radius=float(dim) ** 0.5) if cls is Sphere else cls()


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


SWAP_SENTENCES = 64
"""Sentences (the first ones) run through the models with swapped normalizations, as one batch."""


def _earlier_swaps() -> tuple[str, ...]:
    from attnphys.clouds.registries import NORMS

    return tuple(n for n in NORMS.builtin_names() if n != "layernorm")


SWAPS = _earlier_swaps()
"""The library's own replacement normalizations of the probes before 0.4.6 (every built-in norm of the
registry but ``layernorm``; deprecated, kept one release). The probe's default is :func:`default_swaps`:
every registered norm that can run on the model, an outside package's too."""


def causal_safe(kind: str) -> bool:
    """Whether the normalization ``kind`` may be swapped into a causal model: read from its class's
    ``tokenwise`` capability (each token normalized on its own). A cloud-wise one (``tokenwise = False``)
    takes statistics over every token, the later ones included, which a causal model must not see; this
    holds for every registered norm, an outside package's too (theory: docs/theory/probes.md §3.5).

    Raises:
        ValueError: an unknown name, listing the known ones.
    """
    return bool(norm_class(kind).tokenwise)


def default_swaps(causal: bool) -> tuple[str, ...]:
    """The swaps a probe runs by default: every norm of the norms' registry
    (:func:`attnphys.clouds.norms.norm_names`: the library's own in their order, then those registered in
    this process and outside packages'), the cloud-wise ones left out on a causal model (:func:`causal_safe`)
    (theory: docs/theory/probes.md §3.5). An outside norm that fails to load is left out with an
    :class:`~attnphys.errors.ExtensionWarning` naming it."""
    return tuple(k for k, cls in _registered_norms().items() if not causal or cls.tokenwise)


def _registered_norms() -> dict[str, type[AbstractNorm]]:
    """Every norm class of the registry that loads (name → class; a broken outside one skipped, warned)."""
    from attnphys.clouds.norms import NORMS

    return NORMS.loaded()


NOT_CAUSAL = tuple(k for k in SWAPS if not causal_safe(k))
"""The library's own swaps that are cloud-wise (derived from the norms' ``tokenwise``; :func:`causal_safe`
decides for any norm): they are not swapped into causal models."""

NOT_CAUSAL_REASON = (
    "a cloud-wise normalization takes its statistics over every token of the sentence, so it "
    "would let each token see the tokens after it, which a causal model must not; a causal version "
    "(statistics of the prefix) is another operator than the theory's"
)


def not_causal_reason(kind: str) -> str:
    """Why the swap ``kind`` is not run on a causal model, naming it and its class (theory:
    docs/theory/probes.md §3.5)."""
    cls = norm_class(kind)
    return (
        f"{kind!r} ({cls.__module__}.{cls.__qualname__}) is cloud-wise (tokenwise = False), so it is not run "
        f"on a causal model: {NOT_CAUSAL_REASON}"
    )


def swap_normalization(
    model,
    tokenizer,
    sentences: list[str],
    adapter,
    kinds=None,
    max_length: int = 64,
    max_sentences: int = SWAP_SENTENCES,
) -> dict:
    """Per variant: mean cosine similarity of the final token embeddings with the original ones, relative
    L2 change, and the same for mean-pooled sentence embeddings; plus the per-layer relative change
    (theory: docs/theory/probes.md §3.5), on the first ``max_sentences`` sentences as one batch.

    The cosines and changes are computed in float64 from the model's states: a model whose norms are
    removed (``none``) can grow states whose squared norm overflows float32 while the states are finite.

    Args:
        kinds: names of the norms' registry; None: :func:`default_swaps` (every registered norm that can run
            on the model). A cloud-wise norm asked for on a causal model (:func:`causal_safe`) is not run:
            its numbers are NaN, with the reason, naming the norm, in ``not_run`` (and ``reason``); on a
            causal model ``not_run`` also names the registered cloud-wise norms the default leaves out.

    Returns:
        dict: ``token_cosine``, ``relative_change``, ``sentence_cosine`` (kinds,),
        ``per_layer_relative_change`` (kinds, hidden states), ``kinds``, ``not_run`` {name: why},
        ``reason`` (kinds,) why a swap's numbers are NaN (empty where they are finite).

    Raises:
        ValueError: an unknown name in ``kinds``, listing the known ones.
    """
    import torch

    from attnphys.probes.adapters._base import base_model

    causal = bool(adapter.causal)
    left_out: tuple[str, ...] = ()
    if kinds is None:  # every registered norm that can run here (default_swaps), and those that cannot
        registry = _registered_norms()
        kinds = tuple(k for k, c in registry.items() if not causal or c.tokenwise)
        left_out = tuple(k for k, c in registry.items() if causal and not c.tokenwise)
    else:
        kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
        for k in kinds:
            norm_class(k)  # an unknown name: refused before the model runs, listing the known ones
    side = getattr(tokenizer, "padding_side", None)
    if side not in (None, "right"):
        tokenizer.padding_side = "right"
    try:
        with torch.no_grad():
            out = _swap_normalization(
                torch, base_model(model), tokenizer, sentences[:max_sentences], adapter, kinds, max_length
            )
        for k in left_out:  # the default's registered norms that cannot run here: said, not measured
            out["not_run"].setdefault(k, not_causal_reason(k))
        return out
    finally:
        if side not in (None, "right"):
            tokenizer.padding_side = side


def _swap_normalization(torch, model, tokenizer, sentences, adapter, kinds, max_length) -> dict:
    import types

    enc = tokenizer(sentences, return_tensors="pt", padding=True, truncation=True, max_length=max_length)
    mask = enc["attention_mask"].bool()
    ref = model(**enc, output_hidden_states=True)
    out: dict[str, Any] = {k: np.empty(len(kinds)) for k in ("token_cosine", "relative_change", "sentence_cosine")}
    per_layer = np.full((len(kinds), len(ref.hidden_states)), np.nan)
    norms = adapter.norm_modules(model)
    for k in out:
        out[k][:] = np.nan
    out["not_run"] = {}
    finite = np.ones((len(kinds), len(ref.hidden_states)), bool)
    for i, kind in enumerate(kinds):
        if adapter.causal and not causal_safe(kind):
            out["not_run"][kind] = not_causal_reason(kind)
            continue
        saved = [m.forward for _, m in norms]
        try:
            for _, m in norms:
                m.forward = types.MethodType(_swap_forward(swap_norm(kind, ref.last_hidden_state.shape[-1]), mask), m)
            new = model(**enc, output_hidden_states=True)
        finally:
            for (_, m), f in zip(norms, saved):
                m.forward = f
        # float64: the states of a model without its norms can be finite with a squared norm beyond float32
        a, b = ref.last_hidden_state[mask].double(), new.last_hidden_state[mask].double()
        out["token_cosine"][i] = float(_cosines(torch, a, b).mean())
        out["relative_change"][i] = float(((b - a).norm(dim=-1) / a.norm(dim=-1)).mean())
        mf = mask[..., None].double()
        pa = (ref.last_hidden_state.double() * mf).sum(1) / mf.sum(1)
        pb = (new.last_hidden_state.double() * mf).sum(1) / mf.sum(1)
        out["sentence_cosine"][i] = float(_cosines(torch, pa, pb).mean())
        for j, (h0, h1) in enumerate(zip(ref.hidden_states, new.hidden_states)):
            h0, h1 = h0[mask].double(), h1[mask].double()
            finite[i, j] = bool(torch.isfinite(h1).all())
            per_layer[i, j] = float(((h1 - h0).norm(dim=-1) / h0.norm(dim=-1)).mean())
    out["per_layer_relative_change"] = per_layer
    out["kinds"] = list(kinds)
    out["reason"] = np.array(
        [
            _swap_reason(kind, out, per_layer[i], i, finite[i], str(ref.last_hidden_state.dtype))
            for i, kind in enumerate(kinds)
        ],
        dtype=object,
    )
    return out


def _cosines(torch, a, b):
    """Row-wise cosines of (n, D) float64 tensors; NaN for a row of zero norm (undefined, not 0)."""
    na, nb = a.norm(dim=-1), b.norm(dim=-1)
    return (a * b).sum(-1) / (na * nb)


def _swap_reason(
    kind: str, out: dict, change: np.ndarray, i: int, finite: np.ndarray | None = None, dtype: str = "the model's"
) -> str:
    """Why the swap ``kind``'s numbers are NaN (empty where they are all finite): not run, the swapped
    model's hidden states not finite from some hidden state on (``finite`` (hidden states,) bool; without
    it, read from the per-layer ``change``), or a final state of zero norm."""
    if kind in out["not_run"]:
        why = str(out["not_run"][kind])
        return why if "not run" in why else f"not run: {why}"
    if all(np.isfinite(out[k][i]) for k in ("token_cosine", "relative_change", "sentence_cosine")):
        return ""
    bad = np.flatnonzero(~np.asarray(finite, bool) if finite is not None else ~np.isfinite(change))
    if bad.size:
        return (
            f"the swapped model's hidden states are not finite from hidden state {int(bad[0])} on (they overflow "
            f"{dtype} without the {kind!r} normalization's rescaling): the model diverges"
        )
    return "a token's final state has zero norm: its cosine is undefined"

"""The claims of the probe report, each tested per layer against its null (theory: docs/theory/probes.md §4).

Every claim has a statistic per layer, a null hypothesis, a one-sided test giving a p-value and a z-score
(or t), and a verdict: supported in the layers whose p-value survives Holm's correction over the layers at
family-wise level :data:`attnphys.probes.significance.ALPHA`. Claims marked ``training`` say something
that a randomly initialised model of the family does not do (their nulls are what random weights give);
the others describe the architecture and hold, or not, without training.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnphys.clouds.stats import STATISTICS
from attnphys.probes.capture import Capture
from attnphys.probes.metrics import norm_input_stage
from attnphys.probes.significance import ALPHA, head_permutation_test, holm, log_cov_trace_ratio, normal_sf, t_test

MLP_AFFINE_R2 = 0.9
"""R² above which an MLP counts as affine (claim ``mlp_affine``)."""


@dataclass(frozen=True)
class Claim:
    """One claim: ``title``, its per-layer ``statistic``, the ``null`` hypothesis, the ``test`` and
    whether it depends on ``training``."""

    title: str
    statistic: str
    null: str
    test: str
    training: bool


CLAIMS: dict[str, Claim] = {
    "attention_expands_cov": Claim(
        "attention + residual expands the token cloud (covariance trace)",
        "log tr Σ(attn_add) / tr Σ(input), all tokens",
        "the trace does not grow (log ratio ≤ 0)",
        "one-sided z from a bootstrap over sentences (1000 resamples)",
        False,
    ),
    "attention_expands_knn": Claim(
        "attention + residual expands the token cloud (k-NN entropy)",
        "k-NN entropy of attn_add minus that of input, on the sampled tokens",
        "the entropy does not grow",
        "one-sided paired t-test over the sentence folds",
        False,
    ),
    "norm_contracts_cov": Claim(
        "the normalization next to attention contracts the cloud (covariance trace)",
        "log tr Σ(attn_norm) / tr Σ(its input), all tokens",
        "the trace does not shrink (log ratio ≥ 0)",
        "one-sided z from a bootstrap over sentences (1000 resamples)",
        False,
    ),
    "norm_contracts_knn": Claim(
        "the normalization next to attention contracts the cloud (k-NN entropy)",
        "k-NN entropy of attn_norm minus that of its input, on the sampled tokens",
        "the entropy does not shrink",
        "one-sided paired t-test over the sentence folds",
        False,
    ),
    "qk_inverse_covariance": Claim(
        "W_qᵀW_k (heads summed) is aligned with Σ⁻¹ of the attention input",
        "largest z over the λ sweep of cos(sym ΣW_qᵀW_k, Σ_λ⁻¹) against Haar-random rotations of the target",
        "the form is no more aligned than with a randomly rotated target (what random weights give)",
        "exact mean and variance of the rotation null, normal tail, Bonferroni over the λ values",
        True,
    ),
    "mlp_affine": Claim(
        "the MLP is close to an affine map",
        f"held-out affine R² (split by sentence) minus {MLP_AFFINE_R2}",
        f"R² ≤ {MLP_AFFINE_R2}",
        "one-sided t-test over the held-out splits",
        False,
    ),
    "head_own_gradient": Claim(
        "each head's update follows the gradient of its own log-normalizer",
        "mean over heads of cos(head update, own ∇ log Z)",
        "head labels exchangeable: own gradient no more aligned than another head's (as at random initialisation)",
        "permutation test over the heads' gradients (exact for ≤ 8 heads, else 20,000 permutations)",
        True,
    ),
}
"""The claims tested by every probe, in report order."""


def _fold_delta(clouds: dict, layer: int, after: str, before: str, stat: str = "knn_entropy") -> np.ndarray:
    st, fv = clouds["stages"], clouds["folds_values"]
    k = [str(x) for x in STATISTICS].index(stat)
    return fv[:, layer, st.index(after), 0, k] - fv[:, layer, st.index(before), 0, k]


def evaluate_claims(
    cap: Capture, clouds: dict, qk: dict, mlp: dict, grad: dict, seed: int = 0
) -> dict[str, np.ndarray]:
    """Statistic, z (or t), p-value, Holm-adjusted p-value and verdict of every claim of :data:`CLAIMS`
    in every layer, from the capture and the experiments' outputs.

    Returns:
        dict of (claims, L) arrays: ``statistic``, ``z``, ``p``, ``p_holm``, ``supported`` (bool).
    """
    L = cap.n_layers
    names = list(CLAIMS)
    out = {k: np.full((len(names), L), np.nan) for k in ("statistic", "z", "p")}

    def put(name, layer, stat, z, p):
        i = names.index(name)
        out["statistic"][i, layer], out["z"][i, layer], out["p"][i, layer] = stat, z, p

    norm_in = norm_input_stage(cap, "attn_norm")
    lams = len(qk["lams"])
    for layer in range(L):
        x, y = cap.get(layer, "input"), cap.get(layer, "attn_add")
        est, se, p_up, _ = log_cov_trace_ratio(x, y, cap.sentence, seed=seed + layer)
        put("attention_expands_cov", layer, est, est / se if se > 0 else np.nan, p_up)
        d = _fold_delta(clouds, layer, "attn_add", "input")
        t, p = t_test(d, 0.0, greater=True)
        put("attention_expands_knn", layer, float(np.nanmean(d)) if np.isfinite(d).any() else np.nan, t, p)
        est, se, _, p_down = log_cov_trace_ratio(
            cap.get(layer, norm_in), cap.get(layer, "attn_norm"), cap.sentence, seed=seed + L + layer
        )
        put("norm_contracts_cov", layer, est, -est / se if se > 0 else np.nan, p_down)
        d = _fold_delta(clouds, layer, "attn_norm", norm_in)
        t, p = t_test(d, 0.0, greater=False)
        put("norm_contracts_knn", layer, float(np.nanmean(d)) if np.isfinite(d).any() else np.nan, -t, p)
        z = (qk["similarity"][layer, -1] - qk["null_rotation_mean"][layer, -1]) / qk["null_rotation_std"][layer, -1]
        put(
            "qk_inverse_covariance",
            layer,
            float(np.max(z)),
            float(np.max(z)),
            float(min(1.0, lams * normal_sf(np.max(z)))),
        )
        r2 = mlp["r2_splits"][layer]
        t, p = t_test(r2, MLP_AFFINE_R2, greater=True)
        put("mlp_affine", layer, float(mlp["r2_affine"][layer]) - MLP_AFFINE_R2, t, p)
        C = grad["matrix"][layer]
        z, p = head_permutation_test(C, seed=seed + layer)
        put("head_own_gradient", layer, float(np.trace(C) / C.shape[0]), z, p)
    adj = np.full_like(out["p"], np.nan)
    sup = np.zeros(out["p"].shape, bool)
    for i in range(len(names)):
        adj[i], sup[i] = holm(out["p"][i])
    out["p_holm"], out["supported"] = adj, sup
    return out


def claim_verdict(supported, tested: int) -> str:
    """Words for a claim supported in ``supported`` (bool array) of the layers."""
    k, n = int(np.sum(supported)), len(supported)
    where = "" if tested == n else f" ({n - tested} not tested)"
    if tested == 0:
        return "not tested (no uncertainty available)"
    if k == n:
        return f"supported in every layer (Holm, α = {ALPHA:g}){where}"
    if k == 0:
        return f"not supported in any layer (Holm, α = {ALPHA:g}){where}"
    layers = ", ".join(str(i) for i in np.flatnonzero(supported))
    return f"supported in {k} of {n} layers ({layers}; Holm, α = {ALPHA:g}){where}"


__all__ = ["MLP_AFFINE_R2", "Claim", "CLAIMS", "evaluate_claims", "claim_verdict"]

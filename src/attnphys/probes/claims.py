"""The claims of the probe report, each tested per layer against its null (theory: docs/theory/probes.md §4).

A claim is one :class:`Claim` object: its title, the per-layer statistic it measures (``measure``, a
function of the :class:`Evidence` and the layer returning an :class:`Outcome`), the null hypothesis, the
test, the fewest degrees of freedom behind a "supported", whether it depends on training, and its report
lines. :data:`CLAIMS` is the one registry: :func:`register_claim` adds a claim, and the dataset's
``claim`` coordinate, the verdict table, the report's sections and the claims table of
docs/theory/probes.md §4 are generated from it. The library's claims outside this module are defined in
the modules :data:`CLAIM_MODULES` lists, which this module imports itself: a new claim of the library is
one new file calling :func:`register_claim` and one line there, and whatever imports the registry sees it
(an outside package's file registers its claims when it is imported).

Verdict: a layer supports a claim when its test has at least ``min_df`` degrees of freedom, its p-value
survives Holm's correction over the layers where the claim could be tested at family-wise level
:data:`attnphys.probes.significance.ALPHA`, and the outcome is ``eligible`` (the effect has the claimed
sign and, where the claim says so, is specific). A layer where the test cannot be run has a reason,
never a silent "not supported". Claims marked ``training`` say something that a randomly initialised
model of the family does not do; the others describe the architecture.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnphys.clouds.stats import STATISTICS
from attnphys.probes.capture import Capture
from attnphys.probes.metrics import FOLDS, norm_input_stage
from attnphys.probes.significance import (
    ALPHA,
    MIN_DF,
    head_permutation_test,
    holm,
    log_cov_trace_ratio,
    normal_two_sided,
    t_test,
)
from attnphys.registry import Registry

MLP_AFFINE_R2 = 0.9
"""R² above which an MLP counts as affine (claim ``mlp_affine``)."""


@dataclass(frozen=True)
class Evidence:
    """What the claims are tested on: the capture, the experiments' outputs (``clouds``
    :func:`~attnphys.probes.metrics.cloud_stages`, ``qk`` :func:`~attnphys.probes.metrics.qk_vs_inverse_covariance`,
    ``mlp`` :func:`~attnphys.probes.metrics.mlp_linearity`, ``grad``
    :func:`~attnphys.probes.metrics.update_vs_gradient`, all computed on the same tokens), ``tokens`` the
    token set's name in :data:`attnphys.probes.metrics.TOKEN_SETS` and ``keep`` (T,) its tokens, and the seed."""

    cap: Capture
    clouds: dict
    qk: dict
    mlp: dict
    grad: dict
    tokens: str = "no_sinks"
    keep: np.ndarray | None = None
    seed: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def mask(self) -> np.ndarray:
        return np.ones(self.cap.sentence.size, bool) if self.keep is None else self.keep


@dataclass(frozen=True)
class Outcome:
    """One layer's test: ``statistic`` (the effect size), ``z`` (or t), the p-value ``p`` (NaN: not
    tested, then ``reason`` says why), ``df`` degrees of freedom (inf for an exact null), ``eligible``
    (the effect has the claimed sign / is specific; otherwise ``reason`` says what is missing)."""

    statistic: float
    z: float = math.nan
    p: float = math.nan
    df: float = math.nan
    reason: str = ""
    eligible: bool = True


@dataclass(frozen=True)
class Claim:
    """One claim: ``title``, its per-layer ``statistic`` (words), the ``null`` hypothesis, the ``test``,
    whether it depends on ``training``, ``measure`` (Evidence, layer) → :class:`Outcome`, ``min_df`` the
    fewest degrees of freedom of a "supported", and ``report`` (dataset → extra Markdown lines, or None).
    ``section``: the report section that shows it (a built-in section's number, or None: its own)."""

    title: str
    statistic: str
    null: str
    test: str
    training: bool
    measure: Callable[[Evidence, int], Outcome] | None = None
    min_df: float = MIN_DF
    report: Callable[[Any], list[str]] | None = None
    section: int | None = None


def _is_claim(obj: object) -> Claim | None:
    return obj if isinstance(obj, Claim) and obj.measure is not None else None


CLAIMS: Registry[Claim] = Registry(
    "probe claim",
    group="attnphys.probe_claims",
    accept=_is_claim,
    field="claims",
    member="an `attnphys.probes.claims.Claim` with a `measure` ([probes page](probes.md) §4)",
    adding="one file calling `register_claim`, one line of `CLAIM_MODULES`",
    theory="probes.md §4",
    sort_added=False,
)
"""The registry of the claims tested by every probe, in report order (:class:`attnphys.registry.Registry`;
:func:`register_claim` adds one; complete once this module is imported: it imports :data:`CLAIM_MODULES`)."""

CLAIM_MODULES: tuple[str, ...] = ("attnphys.probes._collapse",)
"""The modules of the library's claims besides this module's own, in report order after them: each
registers its claims when imported, and this module imports them all (one line per new file of claims)."""


def register_claim(name: str, claim: Claim) -> Claim:
    """Add ``claim`` to :data:`CLAIMS` under ``name`` (a new name, or the same object again) (theory:
    docs/theory/probes.md §4).

    Raises:
        RegistryConflictError: the name is another claim's, or the claim has no measure (a ValueError).
    """
    if isinstance(claim, Claim) and claim.measure is None:
        from attnphys.registry import RegistryConflictError

        raise RegistryConflictError(f"the probe claim {name!r} has no measure")
    return CLAIMS.register(claim, name=name)


# --- the built-in claims -------------------------------------------------------------------------------


def _fold_delta(ev: Evidence, layer: int, after: str, before: str, stat: str = "knn_entropy") -> np.ndarray:
    c = ev.clouds
    st, fv = c["stages"], c["folds_values"]
    k = [str(x) for x in STATISTICS].index(stat)
    v = list(c["tokens"]).index(ev.tokens)
    n = c["folds"][v]
    return fv[:n, layer, st.index(after), v, k] - fv[:n, layer, st.index(before), v, k]


def _knn_outcome(ev: Evidence, layer: int, after: str, before: str, greater: bool) -> Outcome:
    d = _fold_delta(ev, layer, after, before)
    if d.size < 2:
        return Outcome(math.nan, reason=f"no sentence folds (fewer than {FOLDS} sentences or too few tokens per fold)")
    bad = int((~np.isfinite(d)).sum())
    if bad:
        return Outcome(
            math.nan,
            df=d.size - 1,
            reason=f"k-NN entropy undefined in {bad} of {d.size} folds (more than k = 3 tokens coincide, "
            "or a token far outside the cloud sets its scale)",
        )
    t, p = t_test(d, 0.0, greater=greater)
    return Outcome(float(d.mean()), t if greater else -t, p, d.size - 1)


def _trace_outcome(ev: Evidence, layer: int, before: str, after: str, up: bool, seed: int) -> Outcome:
    keep = ev.mask
    sent = ev.cap.sentence[keep]
    n_sent = np.unique(sent).size
    est, se, p_up, p_down = log_cov_trace_ratio(
        ev.cap.get(layer, before)[keep], ev.cap.get(layer, after)[keep], sent, seed=seed
    )
    if not se > 0:
        return Outcome(est, df=n_sent - 1, reason="no bootstrap spread (fewer than two sentences)")
    return Outcome(est, (est if up else -est) / se, p_up if up else p_down, n_sent - 1)


def _attention_expands_cov(ev: Evidence, layer: int) -> Outcome:
    return _trace_outcome(ev, layer, "input", "attn_add", True, ev.seed + layer)


def _attention_expands_knn(ev: Evidence, layer: int) -> Outcome:
    return _knn_outcome(ev, layer, "attn_add", "input", True)


def _norm_contracts_cov(ev: Evidence, layer: int) -> Outcome:
    norm_in = norm_input_stage(ev.cap, "attn_norm")
    return _trace_outcome(ev, layer, norm_in, "attn_norm", False, ev.seed + ev.cap.n_layers + layer)


def _norm_contracts_knn(ev: Evidence, layer: int) -> Outcome:
    return _knn_outcome(ev, layer, "attn_norm", norm_input_stage(ev.cap, "attn_norm"), False)


def _qk_inverse_covariance(ev: Evidence, layer: int) -> Outcome:
    qk = ev.qk
    sim = qk["similarity"][layer, -1]
    z = (sim - qk["null_rotation_mean"][layer, -1]) / qk["null_rotation_std"][layer, -1]
    if not np.isfinite(z).any():
        return Outcome(math.nan, reason="the rotation null has no spread")
    k = int(np.nanargmax(np.abs(z)))
    p = float(min(1.0, len(z) * normal_two_sided(z[k])))
    margin = float(qk["specificity"][layer, -1, k])
    reason, ok = "", True
    if not np.isfinite(margin):
        reason, ok = "one layer: its specificity to the layer cannot be tested", False
    elif z[k] < 0:
        reason, ok = f"anti-aligned with Σ⁻¹ (z = {z[k]:.3g})", False
    elif not margin > 0:
        reason, ok = (
            "not specific to its layer: another layer's Σ⁻¹ or another layer's heads fit as well "
            f"(margin {margin:.3g})",
            False,
        )
    return Outcome(float(sim[k]), float(z[k]), p, math.inf, reason, ok)


def _mlp_affine(ev: Evidence, layer: int) -> Outcome:
    mlp = ev.mlp
    r2 = mlp["r2_splits"][layer]
    r2 = r2[: mlp["splits"]]
    if "underdetermined" in mlp and bool(mlp["underdetermined"][layer]):
        return Outcome(
            float(np.mean(r2)) - MLP_AFFINE_R2 if r2.size else math.nan, reason=str(mlp["fit_reason"][layer])
        )
    if r2.size < 2:
        return Outcome(float(mlp["r2_affine"][layer]) - MLP_AFFINE_R2, reason="fewer than two held-out splits")
    t, p = t_test(r2, MLP_AFFINE_R2, greater=True, test_fraction=mlp["test_fraction"])
    if not np.isfinite(p):
        return Outcome(float(np.mean(r2)) - MLP_AFFINE_R2, df=r2.size - 1, reason="a held-out R² is not finite")
    return Outcome(float(np.mean(r2)) - MLP_AFFINE_R2, t, p, r2.size - 1)


def _head_own_gradient(ev: Evidence, layer: int) -> Outcome:
    C = ev.grad["matrix"][layer]
    H = C.shape[0]
    if H < 2:
        return Outcome(float(np.trace(C) / max(H, 1)), reason="one head: no other head to compare with")
    z, p = head_permutation_test(C, seed=ev.seed + layer)
    return Outcome(float(np.trace(C) / H), z, p, H - 1)


register_claim(
    "attention_expands_cov",
    Claim(
        "attention + residual expands the token cloud (covariance trace)",
        "log tr Σ(attn_add) / tr Σ(input)",
        "the trace does not grow (log ratio ≤ 0)",
        "one-sided z from a bootstrap over sentences (1000 resamples); df: sentences − 1",
        False,
        _attention_expands_cov,
        section=1,
    ),
)
register_claim(
    "attention_expands_knn",
    Claim(
        "attention + residual expands the token cloud (k-NN entropy)",
        "k-NN entropy of attn_add minus that of input, on the sampled distinct tokens",
        "the entropy does not grow",
        "one-sided paired t-test over the sentence folds (df: folds − 1; a fold without a value leaves it untested)",
        False,
        _attention_expands_knn,
        section=1,
    ),
)
register_claim(
    "norm_contracts_cov",
    Claim(
        "the normalization next to attention contracts the cloud (covariance trace)",
        "log tr Σ(attn_norm) / tr Σ(its input)",
        "the trace does not shrink (log ratio ≥ 0)",
        "one-sided z from a bootstrap over sentences (1000 resamples); df: sentences − 1",
        False,
        _norm_contracts_cov,
        section=2,
    ),
)
register_claim(
    "norm_contracts_knn",
    Claim(
        "the normalization next to attention contracts the cloud (k-NN entropy)",
        "k-NN entropy of attn_norm minus that of its input, on the sampled distinct tokens",
        "the entropy does not shrink",
        "one-sided paired t-test over the sentence folds (df: folds − 1; a fold without a value leaves it untested)",
        False,
        _norm_contracts_knn,
        section=2,
    ),
)
register_claim(
    "qk_inverse_covariance",
    Claim(
        "W_qᵀW_k (heads summed) is aligned with Σ⁻¹ of the attention input, specifically its own layer's",
        "cos(sym W_qᵀW_k, Σ_λ⁻¹) at the λ of the largest |z| against Haar-random rotations of the target",
        "the form is no more and no less aligned than with a randomly rotated target (what random weights give)",
        "exact mean and variance of the rotation null, two-sided normal tail, Bonferroni over the λ values; "
        "supported only where the alignment is positive and beats every other layer's Σ⁻¹ and every other "
        "layer's heads",
        True,
        _qk_inverse_covariance,
        section=3,
    ),
)
register_claim(
    "mlp_affine",
    Claim(
        "the MLP is close to an affine map",
        f"held-out affine R² (split by sentence) minus {MLP_AFFINE_R2}, mean over the splits",
        f"R² ≤ {MLP_AFFINE_R2}",
        "one-sided t-test over the held-out splits with Nadeau and Bengio's correction for their overlap "
        "(df: splits − 1)",
        False,
        _mlp_affine,
        section=4,
    ),
)
register_claim(
    "head_own_gradient",
    Claim(
        "each head's update follows the gradient of its own log-normalizer",
        "mean over heads of cos(head update, own ∇ log Z)",
        "head labels exchangeable: own gradient no more aligned than another head's (as at random initialisation)",
        "permutation test over the heads' gradients (exact for ≤ 8 heads, else 20,000 permutations); df: heads − 1",
        True,
        _head_own_gradient,
        section=5,
    ),
)


def evaluate_claims(ev: Evidence, claims: Mapping[str, Claim] | None = None) -> dict[str, np.ndarray]:
    """Statistic, z (or t), p-value, degrees of freedom, Holm-adjusted p-value, verdict and reason of
    every claim of ``claims`` (default :data:`CLAIMS`) in every layer.

    Holm's correction runs over the layers where the claim was tested with at least its ``min_df``
    degrees of freedom; a layer below that is not tested (its reason says so).

    Returns:
        dict of (claims, L) arrays: ``statistic``, ``z``, ``p``, ``df``, ``p_holm``, ``supported`` (bool),
        ``reason`` (str, empty where tested and eligible).
    """
    claims = CLAIMS if claims is None else claims
    L = ev.cap.n_layers
    names = list(claims)
    out: dict[str, Any] = {k: np.full((len(names), L), np.nan) for k in ("statistic", "z", "p", "df")}
    out["reason"] = np.full((len(names), L), "", dtype=object)
    eligible = np.ones((len(names), L), bool)
    for i, name in enumerate(names):
        c = claims[name]
        for layer in range(L):
            o = c.measure(ev, layer)  # pyright: ignore[reportOptionalCall]  (registered claims have one)
            p, reason = o.p, o.reason
            if np.isfinite(p) and not o.df >= c.min_df:
                p, reason = math.nan, f"{o.df:g} degrees of freedom, fewer than the {c.min_df:g} a verdict needs"
            out["statistic"][i, layer], out["z"][i, layer], out["p"][i, layer] = o.statistic, o.z, p
            out["df"][i, layer], out["reason"][i, layer] = o.df, reason
            eligible[i, layer] = o.eligible
    adj = np.full_like(out["p"], np.nan)
    sup = np.zeros(out["p"].shape, bool)
    for i in range(len(names)):
        adj[i], sup[i] = holm(out["p"][i])
    # a reason stays where the layer was not tested, or where its test rejected but the effect is not the claim's
    out["reason"][np.isfinite(out["p"]) & ~(sup & ~eligible)] = ""
    out["p_holm"], out["supported"] = adj, sup & eligible
    return out


def claim_verdict(supported, tested: int) -> str:
    """Words for a claim supported in ``supported`` (bool array) of the layers, ``tested`` of them tested."""
    k, n = int(np.sum(supported)), len(supported)
    where = "" if tested == n else f" ({n - tested} not tested)"
    if tested == 0:
        return "not tested in any layer (see the reasons)"
    if k == n:
        return f"supported in every layer (Holm, α = {ALPHA:g}){where}"
    if k == 0:
        return f"not supported in any of the {tested} tested layers (Holm, α = {ALPHA:g}){where}"
    layers = ", ".join(str(i) for i in np.flatnonzero(supported))
    return f"supported in {k} of {n} layers ({layers}; Holm, α = {ALPHA:g}){where}"


def claim_counts(ds) -> dict[str, str]:
    """Per claim of a probe dataset, its verdict in a few words for a console: ``k of n tested layers``,
    or ``not tested`` (never a bare 0 for a claim that could not be tested)."""
    out = {}
    for c in ds.claim.values:
        sup = int(ds.claim_supported.sel(claim=c).sum())
        tested = int(np.isfinite(ds.claim_p.sel(claim=c).values).sum())
        L = ds.sizes["layer"]
        out[str(c)] = (
            "not tested"
            if tested == 0
            else f"{sup} of {tested} tested layers" + ("" if tested == L else f" ({L - tested} untested)")
        )
    return out


def _load_claim_modules() -> Mapping[str, Claim]:
    """Import every module of :data:`CLAIM_MODULES` (each registers its claims; importing this module does
    it once) and return :data:`CLAIMS` (theory: docs/theory/probes.md §4)."""
    from importlib import import_module

    for module in CLAIM_MODULES:
        import_module(module)
    return CLAIMS


__all__ = [
    "MLP_AFFINE_R2",
    "Claim",
    "Evidence",
    "Outcome",
    "CLAIMS",
    "register_claim",
    "evaluate_claims",
    "claim_verdict",
    "claim_counts",
]

_load_claim_modules()  # the library's claims of the other modules: registered wherever CLAIMS is read

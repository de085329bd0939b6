"""Each attention head's inverse temperature against its own critical one (theory:
docs/theory/critical_temperatures.md).

A softmax row over n scores is a random-energy model (REM): below a critical inverse temperature β_c the
weights spread over a share of the n keys that shrinks as β grows, above it they freeze on the top few
scores. For scores in the Gumbel domain β_c is the hazard rate h(u_n) of the scores' tail at the level u_n
that one of n scores exceeds, and the gaps between the top scores are exponential with mean 1/h(u_n).

* :func:`critical_rows` — a pure function of score rows (…, n): per row the top-k gap estimate of β_c, its
  χ² interval, the row entropy S/ln n at the head's β and the ratio β/β_c;
* :func:`critical_temperatures` — every head of every layer of a real model (and of its control models)
  placed against its own β_c, pooled over its rows, with a bootstrap interval over sentences, with and
  without the sink columns;
* :func:`critical_claim` — the test of "trained heads sit nearer their critical β than the controls' heads";
* :func:`critical_section`, :func:`plot_critical` — the report's section and figure.
"""

from __future__ import annotations

import functools
import json
import time
import warnings

import numpy as np
import xarray as xr

from attnphys._checks import check_count, check_positive
from attnphys.errors import InputError
from attnphys.probes.capture import MAX_LENGTH

GAP_K = 2
"""Top gaps per row of the estimator of β_c (fewer where a row has fewer than k + 1 keys): the weighted
gaps i·(x_(i) − x_(i+1)) of the top k scores, whose mean estimates 1/h at a level that drifts below u_n as k
grows (docs/theory/critical_temperatures.md §3.2: k = 2 keeps the Gaussian's finite-n bias within 2 % of
h(u_n) for 10² ≤ n ≤ 10⁴)."""

CONFIDENCE = 0.95
"""Coverage of the per-row χ² intervals and of the heads' bootstrap intervals."""

N_BOOT = 1000
"""Bootstrap resamples of the sentences behind each head's interval."""

SENTENCE_BLOCK = 64
"""Sentences whose padded score arrays (heads, sentences, n, n) are placed at once."""

KEY_SETS = ("all", "no_sinks")
"""The key columns a head is placed with: every key, or every key but the sink positions."""

LONG_NAMES = {
    "beta_c": "critical inverse temperature of the rows, k / sum of the top-k excesses (pooled over rows)",
    "ratio": "beta / beta_c: the head's inverse temperature over its critical one (pooled over rows)",
    "ratio_lo": "lower end of the bootstrap interval of the ratio over sentences",
    "ratio_hi": "upper end of the bootstrap interval of the ratio over sentences",
    "entropy": "mean row entropy S / ln n of the head's attention at its beta",
    "entropy_rem": "mean of the Gaussian REM's row entropy max(0, 1 - ratio_row^2)",
    "frozen_share": "share of the head's rows with beta / beta_c > 1 (frozen)",
    "rows": "rows (queries) with at least two keys behind the head's numbers",
    "reason": "why the head's numbers are NaN (empty: finite)",
}


def _check_scores(scores) -> np.ndarray:
    x = np.asarray(scores)
    if x.dtype == object or not np.issubdtype(x.dtype, np.number):
        raise InputError(f"must be a numeric array of score rows (…, n), got dtype {x.dtype}", "scores")
    if x.ndim < 1 or x.shape[-1] < 1:
        raise InputError(f"must have shape (…, n) with n ≥ 1 keys, got shape {x.shape}", "scores")
    x = x.astype(np.float64)
    if np.isposinf(x).any():
        raise InputError("holds +inf; absent keys are -inf or NaN, present ones finite", "scores")
    return x


def _row_core(x: np.ndarray, beta: float, k: int) -> dict[str, np.ndarray]:
    """Per row of x (…, n) (−inf: absent key): keys n, gaps used k_eff = min(k, n − 1), the sum of the top
    k_eff excesses E = Σ_{i≤k_eff} (x_(i) − x_(k_eff+1)), and the entropy S of softmax(βx) (float64, JAX)."""
    import jax

    with jax.enable_x64(True):
        out = _row_kernel()(jax.numpy.asarray(x, jax.numpy.float64), float(beta), min(k + 1, x.shape[-1]))
        return {name: np.asarray(v) for name, v in zip(("n", "k", "excess", "entropy"), out)}


@functools.cache
def _row_kernel():
    """The compiled kernel of :func:`_row_core` (built once, on first use)."""
    import jax
    import jax.numpy as jnp

    @functools.partial(jax.jit, static_argnums=2)
    def kernel(x, beta, kk):
        finite = jnp.isfinite(x)
        n = finite.sum(-1)
        xm = jnp.where(finite, x, -jnp.inf)
        top = jax.lax.top_k(xm, kk)[0]
        keff = jnp.clip(n - 1, 0, kk - 1)
        ref = jnp.take_along_axis(top, keff[..., None], -1)
        use = jnp.arange(kk) < keff[..., None]
        E = jnp.sum(jnp.where(use, jnp.where(use, top, 0.0) - jnp.where(use, ref, 0.0), 0.0), -1)
        logits = jnp.where(finite, beta * xm, -jnp.inf)
        lse = jax.scipy.special.logsumexp(jnp.where(n[..., None] > 0, logits, 0.0), axis=-1, keepdims=True)
        logp = jnp.where(finite, logits - lse, 0.0)
        S = -jnp.sum(jnp.where(finite, jnp.exp(logp) * logp, 0.0), -1)
        return n, keff, E, S

    return kernel


def critical_rows(
    scores,
    *,
    beta: float = 1.0,
    k: int = GAP_K,
    confidence: float = CONFIDENCE,
    dims: tuple[str, ...] | None = None,
) -> xr.Dataset:
    """The critical inverse temperature of every score row, its interval, and the row's place against it
    (theory: docs/theory/critical_temperatures.md §2, §3).

    For a row x_1 … x_n (the present keys), with x_(1) ≥ x_(2) ≥ … its order statistics and
    k_eff = min(k, n − 1),

        E = Σ_{i=1}^{k_eff} (x_(i) − x_(k_eff+1)) = Σ_{i=1}^{k_eff} i (x_(i) − x_(i+1)),
        β̂_c = k_eff / E,    ratio = β / β̂_c = β E / k_eff,

    the top-gap (Weissman) estimate of the hazard rate h(u_n) of the scores' tail at the level u_n exceeded
    by one score in n, which is the REM's freezing point (§2.3); the χ² interval 2 h E ~ χ²_{2k_eff} (exact
    for an exponential tail, §3.3) gives [χ²_{2k_eff}((1−c)/2), χ²_{2k_eff}((1+c)/2)] / (2E). The row's
    entropy is S = −Σ_j p_j ln p_j with p = softmax(β x), reported as S / ln n; the Gaussian REM predicts
    S / ln n = 1 − (β/β_c)² below β_c (§2.2).

    Args:
        scores: (…, n) score rows; −inf or NaN marks a key the query does not see (a causal row i has i + 1
            keys), so rows of different lengths share one array. beta: the inverse temperature the softmax
            applies to the scores (1 for the logits q·k/√d_h of a head). k: top gaps per row. confidence:
            coverage of the intervals. dims: names of the leading dimensions (default ``row`` for a 2-D
            array, ``dim_0`` … otherwise).

    Returns:
        Dataset over the leading dims: ``beta_c``, ``beta_c_lo``, ``beta_c_hi``, ``ratio``, ``entropy``
        (S / ln n), ``entropy_rem`` (max(0, 1 − ratio²)), ``n_keys``, ``k``, ``excess`` (E), ``reason``
        (why a row is NaN: fewer than two keys); ``beta_c`` is +inf (ratio 0) where the top k_eff + 1
        scores tie. Attributes: beta, k, confidence and the package version.

    Raises:
        InputError: non-numeric ``scores``, a +inf score, no key axis (field ``scores``); a non-positive
            ``beta`` or ``k``, a ``confidence`` outside (0, 1), ``dims`` of the wrong length.
    """
    from scipy import stats

    from attnphys.metadata import base_attrs

    x = _check_scores(scores)
    check_positive(beta, "beta")
    beta = float(beta)
    k = check_count(k, "k")
    if not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise InputError(f"must lie in (0, 1), got {confidence!r}", "confidence")
    lead = x.shape[:-1]
    if dims is None:
        dims = ("row",) if len(lead) == 1 else tuple(f"dim_{i}" for i in range(len(lead)))
    dims = tuple(dims)
    if len(dims) != len(lead):
        raise InputError(f"names {len(dims)} dimensions for scores of shape {x.shape} ({len(lead)} leading)", "dims")
    x = np.where(np.isnan(x), -np.inf, x)
    r = _row_core(x, beta, k)
    n, keff, E = r["n"], r["k"], r["excess"]
    ok = n >= 2
    with np.errstate(divide="ignore", invalid="ignore"):
        bc = np.where(ok, keff / E, np.nan)
        ratio = np.where(ok, beta * E / np.maximum(keff, 1), np.nan)
        df = 2 * np.maximum(keff, 1)
        lo = np.where(ok, stats.chi2.ppf((1 - confidence) / 2, df) / (2 * E), np.nan)
        hi = np.where(ok, stats.chi2.ppf((1 + confidence) / 2, df) / (2 * E), np.nan)
        ent = np.where(ok, r["entropy"] / np.log(np.maximum(n, 2)), np.nan)
    rem = np.where(ok, np.maximum(0.0, 1.0 - ratio**2), np.nan)
    reason = np.where(ok, "", np.where(n == 1, "one key: no gap", "no keys")).astype(str)
    ds = xr.Dataset(
        {
            "beta_c": (dims, bc, {"long_name": "critical inverse temperature k_eff / E of the row"}),
            "beta_c_lo": (dims, lo, {"long_name": f"lower end of the {confidence:.0%} chi-square interval"}),
            "beta_c_hi": (dims, hi, {"long_name": f"upper end of the {confidence:.0%} chi-square interval"}),
            "ratio": (dims, ratio, {"long_name": "beta / beta_c of the row"}),
            "entropy": (dims, ent, {"long_name": "row entropy S / ln n of softmax(beta x)"}),
            "entropy_rem": (dims, rem, {"long_name": "Gaussian REM entropy max(0, 1 - ratio^2)"}),
            "n_keys": (dims, n.astype(np.int64), {"long_name": "keys the row's query sees"}),
            "k": (dims, keff.astype(np.int64), {"long_name": "top gaps used, min(k, n - 1)"}),
            "excess": (dims, E, {"long_name": "sum of the top-k excesses over x_(k+1)"}),
            "reason": (dims, reason, {"long_name": "why the row is NaN (empty: finite)"}),
        }
    )
    ds = ds.assign_coords({d: np.arange(size) for d, size in zip(dims, lead)})
    ds.attrs.update(base_attrs(None, beta=beta, k=k, confidence=float(confidence)))
    return ds


def _head_sums(
    S: np.ndarray, beta: float, k: int, keep: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per (head, sentence) sums over the rows of padded scores S (H, s, n, n) (−inf absent, NaN padding),
    with the key columns ``keep`` (s, n) bool: Σ E, Σ k_eff, Σ S/ln n, Σ Gaussian-REM entropy, frozen rows, rows."""
    x = np.where(np.isnan(S), -np.inf, S)
    if keep is not None:
        x = np.where(keep[None, :, None, :], x, -np.inf)
    r = _row_core(x, beta, k)
    ok = r["n"] >= 2
    keff = np.where(ok, r["k"], 0)
    E = np.where(ok, r["excess"], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(ok, beta * E / np.maximum(keff, 1), 0.0)
        ent = np.where(ok, r["entropy"] / np.log(np.maximum(r["n"], 2)), 0.0)
    rem = np.where(ok, np.maximum(0.0, 1 - ratio**2), 0.0)
    return (E.sum(-1), keff.sum(-1).astype(float), ent.sum(-1), rem.sum(-1),
            (ok & (ratio > 1)).sum(-1).astype(float), ok.sum(-1).astype(float))  # fmt: skip


def _place_model(model, tokenizer, sentences, max_length, beta, k, log):
    """Per key set, layer: the (H, S) sums of :func:`_head_sums` of every head of ``model``."""
    from attnphys.probes.capture import capture
    from attnphys.probes.metrics import head_scores
    from attnphys.probes.sinks import find_sinks

    cap = capture(model, tokenizer, list(sentences), max_length=max_length, log=log)
    ad = cap.adapter
    heads = [ad.heads(model, layer) for layer in ad.layers(model)]
    rot = ad.rotary(model)
    spans = cap.sentences()
    n_max = int(cap.lengths.max())
    sink = np.asarray(cap.sinks, bool) | np.asarray(find_sinks(cap)["attention_sink"], bool)
    keep = np.zeros((len(spans), n_max), bool)
    for s, (a, b) in enumerate(spans):
        keep[s, : b - a] = ~sink[a:b]
    out = np.zeros((len(KEY_SETS), cap.n_layers, 6, heads[0].n_heads, len(spans)))
    for layer, hw in enumerate(heads):
        X = cap.get(layer, ad.attn_input_stage).astype(np.float64)
        for lo in range(0, len(spans), SENTENCE_BLOCK):  # blocks of sentences bound the padded arrays
            block = spans[lo : lo + SENTENCE_BLOCK]
            S = np.full((hw.n_heads, len(block), n_max, n_max), np.nan)
            for s, (a, b) in enumerate(block):
                S[:, s, : b - a, : b - a] = head_scores(
                    hw, X[a:b], cap.position[a:b], rot, ad.causal, cap.windows[layer]
                )
            for t, kp in enumerate((None, keep[lo : lo + len(block)])):
                out[t, layer, :, :, lo : lo + len(block)] = np.stack(_head_sums(S, beta, k, kp))
    info = dict(family=ad.family, causal=int(ad.causal), n_heads=heads[0].n_heads, n_sinks=int(sink.sum()),
                n_tokens=int(cap.sentence.size), attn_captured=cap.attn_captured or "unknown")  # fmt: skip
    return out, info


def critical_temperatures(
    model="minilm",
    sentences: list[str] | None = None,
    *,
    tokenizer=None,
    max_sentences: int | None = 64,
    max_length: int = MAX_LENGTH,
    control: str | list[str] | tuple[str, ...] | None = ("random", "shuffled"),
    k: int = GAP_K,
    n_boot: int = N_BOOT,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    progress: bool = False,
    log=None,
) -> xr.Dataset:
    """Every head of every layer of a real model, and of its control models, placed against its own
    critical inverse temperature (theory: docs/theory/critical_temperatures.md §4, §5).

    Head h of layer ℓ applies β = 1 to its logits s_ij = (R_i q_i)·(R_j k_j)/√d_h (the scores softmax
    reads, rotary scaling included: :func:`~attnphys.probes.metrics.head_scores`). Over its rows r (every
    query of every sentence with at least two keys; a causal row i has i + 1 keys) the head's place is the
    pooled ratio

        ρ_h = β Σ_r E_r / Σ_r k_r,     β_c,h = β / ρ_h,

    with E_r, k_r of :func:`critical_rows` (the row-weighted mean of 1/β̂_c: each row's gap sum is an
    estimate of k_r / h(u_{n_r})); ρ < 1 is the liquid side, ρ > 1 frozen. Its interval is the percentile
    bootstrap over sentences (resampled with replacement, seeded). ``no_sinks`` recomputes everything with
    the sink columns removed from every row (massive-norm and attention sinks,
    :func:`~attnphys.probes.sinks.find_sinks`, found on each model's own capture). The claim of
    :func:`critical_claim` is stored as ``claim_*`` variables.

    Args:
        model: a short name (``minilm``, ``smollm2``), a local model folder, a hub name or a loaded model
            (then ``tokenizer`` is needed). sentences: the text (default: the built-in corpus), the first
            ``max_sentences`` kept (None: all). max_length: tokens kept per sentence. control: control
            kinds (:data:`attnphys.probes.controls.CONTROLS`; a list or ``"random,shuffled"``; None: none).
            k: top gaps per row. n_boot: bootstrap resamples. confidence: coverage of the intervals. seed:
            seed of the control weights and of the bootstrap. progress: a progress bar. log: a line per step.

    Returns:
        Dataset over (model, keys, layer, head): ``ratio``, ``ratio_lo``, ``ratio_hi``, ``beta_c``,
        ``entropy``, ``entropy_rem``, ``frozen_share``, ``rows``, ``reason``; over (control, keys): the
        claim's ``claim_*``. ``model`` is ``trained`` then the control kinds. Attributes: the model, its
        family, the settings, the sinks found per model.

    Raises:
        InputError: fewer than two sentences (field ``sentences``), an unknown control (``control``), a
            non-positive ``k``, ``n_boot``, ``max_length`` below 2 or beyond the model's positions.
    """
    from attnphys.metadata import base_attrs
    from attnphys.probes.capture import builtin_corpus
    from attnphys.probes.controls import control_model
    from attnphys.probes.run import control_kinds, resolve_model
    from attnphys.probes.significance import attach_claim, bootstrap_counts
    from attnphys.progress import progress_bar

    k = check_count(k, "k")
    n_boot = check_count(n_boot, "n_boot")
    if not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise InputError(f"must lie in (0, 1), got {confidence!r}", "confidence")
    if max_sentences is not None:
        max_sentences = check_count(max_sentences, "max_sentences")
    kinds = control_kinds(control)
    sentences = builtin_corpus() if sentences is None else list(sentences)
    if not all(isinstance(s, str) for s in sentences):
        raise InputError("must be a list of strings, one sentence per item", "sentences")
    sentences = sentences[:max_sentences] if max_sentences else sentences
    if len(sentences) < 2:
        raise InputError(f"needs at least two sentences for the bootstrap over sentences, got {len(sentences)}",
                         "sentences")  # fmt: skip
    t0 = time.perf_counter()
    log = log or (print if progress else (lambda *a: None))
    name, model, tokenizer = resolve_model(model, tokenizer, log, progress)
    beta = 1.0
    sums, infos = [], []
    with progress_bar(1 + len(kinds), "models", enabled=progress) as advance:
        for kind in ("trained", *kinds):
            log(f"{kind}: capturing {len(sentences)} sentences and placing every head")
            m = model if kind == "trained" else control_model(model, kind, seed)
            s, info = _place_model(m, tokenizer, sentences, max_length, beta, k, log)
            sums.append(s)
            infos.append(info)
            advance()
    A = np.stack(sums)  # (model, keys, layer, 6, head, sentence)
    E, K, ENT, REM, FROZ, ROWS = (A[:, :, :, i] for i in range(6))
    C = bootstrap_counts(len(sentences), n_boot, seed)  # (B, S)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = beta * E.sum(-1) / K.sum(-1)
        boot = beta * np.einsum("bs,...s->b...", C, E) / np.einsum("bs,...s->b...", C, K)
        q = [(1 - confidence) / 2 * 100, (1 + confidence) / 2 * 100]
        with warnings.catch_warnings():  # a head without rows has no resample: its interval is NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            lo, hi = np.nanpercentile(boot, q, axis=0)
        rows = ROWS.sum(-1)
        ent, rem, froz = ENT.sum(-1) / rows, REM.sum(-1) / rows, FROZ.sum(-1) / rows
    none = rows == 0
    ratio, lo, hi = (np.where(none, np.nan, v) for v in (ratio, lo, hi))
    reason = np.where(none, "no row with two keys or more", "").astype(str)
    dims = ("model", "keys", "layer", "head")
    ds = xr.Dataset(
        {
            "ratio": (dims, ratio),
            "ratio_lo": (dims, lo),
            "ratio_hi": (dims, hi),
            "beta_c": (dims, np.where(none, np.nan, beta / ratio)),
            "entropy": (dims, ent),
            "entropy_rem": (dims, rem),
            "frozen_share": (dims, froz),
            "rows": (dims, rows.astype(np.int64)),
            "reason": (dims, reason),
        },
        coords={
            "model": ["trained", *kinds],
            "keys": list(KEY_SETS),
            "layer": np.arange(ratio.shape[2]),
            "head": np.arange(ratio.shape[3]),
        },
    )
    for v, text in LONG_NAMES.items():
        ds[v].attrs["long_name"] = text
    ds.attrs.update(
        base_attrs(
            None,
            model=name,
            family=infos[0]["family"],
            causal=infos[0]["causal"],
            controls=json.dumps(list(kinds)),
            n_sentences=len(sentences),
            n_tokens=infos[0]["n_tokens"],
            max_length=int(max_length),
            beta=beta,
            beta_source="the logits q.k/sqrt(d_head) that the softmax reads (rotary scaling included): beta = 1",
            k=k,
            n_boot=n_boot,
            confidence=float(confidence),
            seed=int(seed),
            n_sinks=json.dumps({m: i["n_sinks"] for m, i in zip(ds.model.values.tolist(), infos)}),
            attn_captured=infos[0]["attn_captured"],
            wall_time_s=round(time.perf_counter() - t0, 2),
        )
    )
    if kinds:
        attach_claim(ds, critical_claim(ds))
    return ds


CLAIM = "trained heads sit nearer their critical beta than the controls' heads"
"""The claim :func:`critical_claim` tests."""


def critical_claim(ds: xr.Dataset, alpha: float = 0.05) -> xr.Dataset:
    """The test of "trained heads sit nearer their critical β than the controls' heads", against each
    control and with each key set (theory: docs/theory/critical_temperatures.md §5).

    The units are heads, not rows: the rows of one head share its weights and its sentences, so they are
    not independent draws of the head's place. With d_h = |ln ρ_h| the distance of head h from its
    critical point (ρ = β/β_c), the trained model's heads d_T (m of them) against a control's d_C (m'),

        H₀: E d_T ≥ E d_C,    t = (d̄_C − d̄_T) / √(s_T²/m + s_C²/m'),
        ν = (s_T²/m + s_C²/m')² / ((s_T²/m)²/(m − 1) + (s_C²/m')²/(m' − 1))   (Welch),

    one-sided p = P(t_ν ≥ t); beside it the one-sided Mann–Whitney p (no normality). ``supported`` is 1
    where the Welch p, Holm-corrected over the controls of a key set, is at most ``alpha`` with ν ≥ 3;
    both verdicts are reported whatever they are.

    Args:
        ds: a :func:`critical_temperatures` dataset with at least one control. alpha: family-wise level.

    Returns:
        Dataset over (control, keys): ``statistic`` (d̄_C − d̄_T), ``median_trained``, ``median_control``
        (median d), ``t``, ``df``, ``p``, ``p_holm``, ``p_mann_whitney``, ``heads_trained``,
        ``heads_control``, ``supported``, ``reason``.

    Raises:
        InputError: a dataset without the ``ratio`` variable or without a control (field ``ds``).
    """
    from scipy import stats

    from attnphys.probes.significance import MIN_DF, holm, welch_test

    if not isinstance(ds, xr.Dataset) or "ratio" not in ds or "model" not in ds.coords:
        raise InputError("must be a dataset of critical_temperatures (with 'ratio' over 'model')", "ds")
    ctl = [str(m) for m in ds.model.values if str(m) != "trained"]
    if "trained" not in ds.model.values or not ctl:
        raise InputError("needs the trained model and at least one control (control=...)", "ds")
    keys = [str(t) for t in ds["keys"].values]
    shape = (len(ctl), len(keys))
    out = {v: np.full(shape, np.nan) for v in ("statistic", "median_trained", "median_control", "t", "df", "p",
                                                 "p_holm", "p_mann_whitney", "heads_trained", "heads_control")}  # fmt: skip
    reason = np.full(shape, "", dtype=object)
    for j, key in enumerate(keys):
        dT = np.abs(np.log(ds.ratio.sel(model="trained", keys=key).values.ravel()))
        dT = dT[np.isfinite(dT)]
        for i, c in enumerate(ctl):
            dC = np.abs(np.log(ds.ratio.sel(model=c, keys=key).values.ravel()))
            dC = dC[np.isfinite(dC)]
            out["heads_trained"][i, j], out["heads_control"][i, j] = dT.size, dC.size
            if dT.size < 2 or dC.size < 2:
                reason[i, j] = "fewer than two heads with a finite ratio in a model"
                continue
            out["statistic"][i, j] = dC.mean() - dT.mean()
            out["median_trained"][i, j], out["median_control"][i, j] = np.median(dT), np.median(dC)
            t, df, p = welch_test(dT, dC)
            if not np.isfinite(t):
                reason[i, j] = "no spread of the distances in either model"
                continue
            out["t"][i, j], out["df"][i, j], out["p"][i, j] = t, df, p
            out["p_mann_whitney"][i, j] = stats.mannwhitneyu(dT, dC, alternative="less").pvalue
        out["p_holm"][:, j] = holm(out["p"][:, j])[0]
    sup = (out["p_holm"] <= alpha) & (out["df"] >= MIN_DF) & (out["statistic"] > 0)
    for i in range(shape[0]):
        for j in range(shape[1]):
            if not reason[i, j]:
                if sup[i, j]:
                    reason[i, j] = ""
                elif out["statistic"][i, j] <= 0:
                    reason[i, j] = "the trained heads are not nearer their critical beta on average"
                elif out["df"][i, j] < MIN_DF:
                    reason[i, j] = f"fewer than {MIN_DF} degrees of freedom"
                else:
                    reason[i, j] = f"not significant at {alpha} after Holm over the controls"
    dims = ("control", "keys")
    res = xr.Dataset(
        {v: (dims, a) for v, a in out.items()}
        | {"supported": (dims, sup.astype(np.int8)), "reason": (dims, reason.astype(str))},
        coords={"control": ctl, "keys": keys},
    )
    res["statistic"].attrs["long_name"] = "mean |ln ratio| of the control's heads minus the trained model's"
    res["df"].attrs["long_name"] = "Welch-Satterthwaite degrees of freedom (units: heads)"
    res["p"].attrs["long_name"] = "one-sided Welch p-value (H0: trained heads are not nearer)"
    res["p_mann_whitney"].attrs["long_name"] = "one-sided Mann-Whitney p-value of the same comparison"
    res["supported"].attrs["long_name"] = f"1 where Holm-corrected p <= {alpha}, df >= {MIN_DF}, statistic > 0"
    res.attrs.update(claim=CLAIM, units="heads (layer x head); rows are not independent units", alpha=alpha)
    return res


def _fmt(x: float) -> str:
    return "NaN" if not np.isfinite(x) else f"{x:.3g}"


def critical_section(ds: xr.Dataset, keys: str = "no_sinks") -> str:
    """The report's markdown section: per layer and model the heads placed, the median β/β_c with its range
    over heads; then the claim's verdicts (theory: docs/theory/critical_temperatures.md §5, §6).

    Raises:
        InputError: a dataset that is not of :func:`critical_temperatures`, or an unknown ``keys``.
    """
    if not isinstance(ds, xr.Dataset) or "ratio" not in ds:
        raise InputError("must be a dataset of critical_temperatures", "ds")
    if keys not in ds["keys"].values:
        raise InputError(f"unknown key set {keys!r}; choose from {', '.join(map(str, ds['keys'].values))}", "keys")
    models = [str(m) for m in ds.model.values]
    lines = [
        "## Heads against their critical temperature",
        "",
        f"β/β_c per head (β = 1 on the logits; β_c from the top-{ds.attrs.get('k', GAP_K)} gaps of each row), "
        f"keys: `{keys}`, {ds.attrs.get('n_sentences', '?')} sentences. Cells: heads placed, median [min, max].",
        "",
        "| layer | " + " | ".join(models) + " |",
        "|---|" + "---|" * len(models),
    ]
    for layer in ds.layer.values:
        cells = []
        for m in models:
            r = ds.ratio.sel(model=m, keys=keys, layer=layer).values
            r = r[np.isfinite(r)]
            cells.append(f"{r.size}: {_fmt(np.median(r))} [{_fmt(r.min())}, {_fmt(r.max())}]" if r.size else "0: —")
        lines.append(f"| {int(layer)} | " + " | ".join(cells) + " |")
    if "claim_p" in ds:
        lines += ["", f"Claim: {ds.attrs.get('claim', CLAIM)} (units: heads).", ""]
        for c in ds.claim_p.control.values:
            for key in ds.claim_p["keys"].values:
                sel = dict(control=c, keys=key)
                verdict = "supported" if int(ds.claim_supported.sel(sel)) else "not supported"
                why = str(ds.claim_reason.sel(sel).values)
                lines.append(
                    f"- vs {c}, keys `{key}`: {verdict}; mean |ln ρ| gap {_fmt(float(ds.claim_statistic.sel(sel)))}, "
                    f"t = {_fmt(float(ds.claim_t.sel(sel)))}, df = {_fmt(float(ds.claim_df.sel(sel)))}, "
                    f"p = {_fmt(float(ds.claim_p.sel(sel)))} (Holm {_fmt(float(ds.claim_p_holm.sel(sel)))}; "
                    f"Mann–Whitney {_fmt(float(ds.claim_p_mann_whitney.sel(sel)))})" + (f" — {why}" if why else "")
                )
    return "\n".join(lines) + "\n"


def plot_critical(ds: xr.Dataset, ax=None, keys: str = "no_sinks"):
    """β/β_c of every head against its layer, one colour per model, the critical line ρ = 1 dashed
    (theory: docs/theory/critical_temperatures.md §5). Returns the axes.

    Raises:
        InputError: a dataset that is not of :func:`critical_temperatures`.
    """
    if not isinstance(ds, xr.Dataset) or "ratio" not in ds:
        raise InputError("must be a dataset of critical_temperatures", "ds")
    if ax is None:
        from matplotlib.figure import Figure

        ax = Figure(figsize=(6, 3.5)).subplots()
    models = [str(m) for m in ds.model.values]
    for i, m in enumerate(models):
        r = ds.ratio.sel(model=m, keys=keys).values
        L, H = r.shape
        xs = np.repeat(np.arange(L), H) + (i - (len(models) - 1) / 2) * 0.2
        ax.scatter(xs, r.ravel(), s=10, label=m)
    ax.axhline(1.0, ls="--", c="k", lw=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("layer")
    ax.set_ylabel("β / β_c")
    ax.legend(fontsize="small")
    return ax


__all__ = [
    "GAP_K",
    "CONFIDENCE",
    "N_BOOT",
    "KEY_SETS",
    "CLAIM",
    "critical_rows",
    "critical_temperatures",
    "critical_claim",
    "critical_section",
    "plot_critical",
]

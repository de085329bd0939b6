"""A readable Markdown report: per claim of the paper, what the numbers support, with each claim's test
(theory: docs/theory/probes.md §3–§5).

Each claim's section opens with its figure (when the report is written to a folder) and a short table —
the layers supporting it out of those tested, the range of its effect, each control's verdict, whether it
is about training — then the test in words; the per-layer numbers (effects, z, p, degrees of freedom and
the measurements behind them) are in the appendix at the end. The placements on the theory's diagrams
(:mod:`attnphys.probes.critical`, :mod:`~attnphys.probes.propagation_placement`,
:mod:`~attnphys.probes.dmft_placement`) add their sections when their datasets are given."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import xarray as xr

from attnphys.probes._placement_report import FIGURES, check_placements, placement_sections, save_png
from attnphys.probes.claims import CLAIMS, MLP_AFFINE_R2, claim_verdict
from attnphys.probes.significance import ALPHA


def _fmt(xs, p=3):
    return ", ".join(f"{x:.{p}g}" for x in np.asarray(xs, float))


def _uncertainty(ds: xr.Dataset) -> str:
    """Where the standard errors come from, or which are missing (stores without the counts: 4 folds)."""
    folds = {t: int(ds.attrs.get(f"stat_se_folds_{t}", 4)) for t in ("all", "no_special")}
    splits = int(ds.attrs.get("mlp_se_splits", 4))
    if all(folds.values()):
        cloud = f"standard errors from {folds['all']} sentence folds"
    elif folds["all"]:
        cloud = f"standard errors from {folds['all']} sentence folds (none without the special tokens: too few of them per fold)"
    else:
        cloud = "no standard errors of the cloud statistics (too few sentences, or too few tokens per sentence fold)"
    mlp = (
        f"MLP R² over {splits} held-out splits"
        if splits > 1
        else "none of the MLP R² (fewer than two distinct held-out splits)"
    )
    return f"{cloud}; {mlp}."


def _claim_line(ds: xr.Dataset, name: str) -> str:
    """A claim's test, null, number of comparisons and verdict in words (its per-layer numbers:
    :func:`_claim_arrays`, in the appendix)."""
    if "claim" not in ds.coords or name not in ds.claim.values:
        return "- no test stored for this claim (a store written by an older version)."
    c = CLAIMS.get(name)
    sup = ds.claim_supported.sel(claim=name).values.astype(bool)
    tested = int(np.isfinite(ds.claim_p.sel(claim=name).values).sum())
    test = f"- test: {c.test}; null: {c.null}; " if c else "- "
    lines = (
        f"{test}{tested} comparisons (one per tested layer), Holm-corrected (effect, z, p and degrees of "
        "freedom per layer: appendix);"
    )
    lines += "\n" + f"- **verdict: {claim_verdict(sup, tested)}**"
    lines += _training_words(ds, name) if c is not None and c.training else "."
    if "claim_reason" in ds:
        why = _reasons(ds.claim_reason.sel(claim=name).values)
        if why:
            lines += "\n- " + why
    if "claim_supported_with_sinks" in ds and int(ds.attrs.get("n_sinks", 0)):
        with_sinks = ds.claim_supported_with_sinks.sel(claim=name).values.astype(bool)
        t_ws = int(np.isfinite(ds.claim_p_with_sinks.sel(claim=name).values).sum())
        lines += f"\n- with the sink positions included: {claim_verdict(with_sinks, t_ws)}."
    return lines


def _claim_arrays(ds: xr.Dataset, name: str) -> list[str]:
    """The appendix lines of a claim: its effect, z (or t), p and degrees of freedom per layer."""
    if "claim" not in ds.coords or name not in ds.claim.values:
        return []
    c = CLAIMS.get(name)
    line = (
        f"- {c.title if c else name}: effect per layer: {_fmt(ds.claim_statistic.sel(claim=name).values)}; "
        f"z (or t) per layer: {_fmt(ds.claim_z.sel(claim=name).values)}; "
        f"p: {_fmt(ds.claim_p.sel(claim=name).values, 2)}"
    )
    if "claim_df" in ds:
        line += (
            f"; degrees of freedom: {_fmt(ds.claim_df.sel(claim=name).values)} (a verdict needs at least "
            f"{float(ds.claim_min_df.sel(claim=name)):g})"
        )
    return [line + "."]


def _effect_range(effect, tested) -> str:
    """The smallest and largest effect over the tested layers (— when none is tested)."""
    v = np.asarray(effect, float)[np.asarray(tested, bool)]
    v = v[np.isfinite(v)]
    if not v.size:
        return "—"
    lo, hi = float(v.min()), float(v.max())
    return f"{lo:.3g}" if f"{lo:.3g}" == f"{hi:.3g}" else f"{lo:.3g} to {hi:.3g}"


def _claim_table(ds: xr.Dataset, names: list[str]) -> list[str]:
    """The short table that opens a claim's section: per claim the layers supporting it out of those
    tested, the range of its effect over the tested layers, each control's layers and whether it is about
    training."""
    if "claim" not in ds.coords:
        return []
    from attnphys.probes.run import control_prefixes

    L = ds.sizes["layer"]
    prefixes = control_prefixes(ds)
    cols = ["claim", "layers supporting", "effect range (tested layers)"]
    cols += [f"{kind} control: layers passing" for kind in prefixes] or ["controls"]
    cols.append("depends on training")
    rows = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for name in names:
        c = CLAIMS.get(name)
        cells = [c.title if c else name]
        if name not in ds.claim.values:
            rows.append("| " + " | ".join(cells + ["not stored"] * (len(cols) - 1)) + " |")
            continue
        p = ds.claim_p.sel(claim=name).values
        cells += [_where(ds.claim_supported.sel(claim=name).values, p, L)]
        cells += [_effect_range(ds.claim_statistic.sel(claim=name).values, np.isfinite(p))]
        for pre in prefixes.values():
            cells.append(
                _where(
                    ds[f"{pre}claim_supported"].sel(claim=name).values, ds[f"{pre}claim_p"].sel(claim=name).values, L
                )
                if f"{pre}claim_supported" in ds
                else "not stored"
            )
        if not prefixes:
            cells.append("none run")
        cells.append("yes" if c and c.training else "no")
        rows.append("| " + " | ".join(cells) + " |")
    return rows + [""]


def _claim_figure(ds: xr.Dataset, names: list[str], path: Path) -> Path | None:
    """Each claim's effect per layer (filled: the layers supporting it), its controls' dashed, the null's
    boundary dotted at 0 (theory: docs/theory/probes.md §4); written to ``path`` (PNG). None without a
    stored claim. Matplotlib's object API: the backend is left as it is."""
    names = [n for n in names if "claim" in ds.coords and n in ds.claim.values]
    if not names:
        return None
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    from attnphys.probes.run import control_prefixes

    prefixes = control_prefixes(ds)
    fig = Figure(figsize=(4.6 * len(names), 3.4), layout="constrained")
    x = ds.layer.values
    for ax, name in zip(fig.subplots(1, len(names), squeeze=False)[0], names):
        y = ds.claim_statistic.sel(claim=name).values.astype(float)
        sup = ds.claim_supported.sel(claim=name).values.astype(bool)
        ax.plot(x, y, "-", color="C0", lw=1)
        ax.plot(x[sup], y[sup], "o", color="C0", ms=6, label="trained: supports it")
        ax.plot(x[~sup], y[~sup], "o", mfc="none", mec="C0", ms=6, label="trained: does not (or untested)")
        for i, (kind, pre) in enumerate(prefixes.items()):
            if f"{pre}claim_statistic" in ds:
                yc = ds[f"{pre}claim_statistic"].sel(claim=name).values
                ax.plot(x, yc, "--", marker="s^v"[i % 3], ms=4, color=f"C{i + 1}", label=f"{kind} control")
        ax.axhline(0.0, color="0.5", lw=0.8, ls=":")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("layer")
        ax.set_ylabel("effect (the claim's statistic)")
        c = CLAIMS.get(name)
        ax.set_title(textwrap.fill(c.title if c else name, 50), fontsize=8)
        ax.legend(fontsize=6)
    return save_png(fig, path)


def _lead(ds: xr.Dataset, names: list[str], key: str, out: Path | None) -> list[str]:
    """What opens a claim's section: its figure (written into ``out``/figures when the report goes to a
    folder) and its short table."""
    lines: list[str] = []
    if out is not None:
        path = _claim_figure(ds, names, out / FIGURES / f"claims_{key}.png")
        if path is not None:
            lines += [f"![each claim's effect per layer ({', '.join(names)})]({FIGURES}/{path.name})", ""]
    return lines + _claim_table(ds, names)


def _section_claims(number: int) -> list[str]:
    """The registered claims a built-in section shows."""
    return [name for name, c in CLAIMS.items() if c.section == number]


def _training_words(ds: xr.Dataset, name: str) -> str:
    """What the controls say about a claim about training: run and failed, run and passed in some layers
    (those are not counted), or not run."""
    from attnphys.probes.run import control_prefixes

    prefixes = control_prefixes(ds)
    if not prefixes:
        return (
            " — a claim about training, but no control model was run: this run does not show that an untrained "
            "model fails it (run with control='random,shuffled')."
        )
    kinds = " and ".join(prefixes)
    passes = (
        ds.claim_control_passes.sel(claim=name).values
        if "claim_control_passes" in ds
        else sum(ds[f"{pre}claim_supported"].sel(claim=name).values.astype(int) for pre in prefixes.values())
    )
    where = np.flatnonzero(np.asarray(passes) > 0)
    if not where.size:
        return f" — a claim about training: the {kinds} control{'s' if len(prefixes) > 1 else ''} pass it in no layer."
    return (
        f" — a claim about training: a control passes it in layer{'s' if where.size > 1 else ''} "
        f"{', '.join(map(str, where))} too, which {'are' if where.size > 1 else 'is'} therefore not counted for "
        f"the trained model (controls run: {kinds})."
    )


def _reasons(reasons) -> str:
    """The layers not tested (or not counted) grouped by reason."""
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(reasons):
        if str(r):
            groups.setdefault(str(r), []).append(i)
    return "; ".join(f"layer{'s' if len(ls) > 1 else ''} {', '.join(map(str, ls))}: {r}" for r, ls in groups.items())


def _attention_sink_lines(ds: xr.Dataset) -> list[str]:
    """The sinks by attention share (the second criterion), beside the massive-norm ones."""
    if "token_attention_sink" not in ds:
        return []
    r = float(ds.attrs.get("sink_attention_ratio_threshold", 3))
    m = float(ds.attrs.get("sink_attention_min_share", 0.1))
    rule = (
        f"a token receiving more than {r:g} times the share of its sentence's attention that uniform attention "
        f"would give it, and at least {m:.0%} of it, in some layer"
    )
    att = ds.token_attention_sink.values.astype(bool)
    if not att.any():
        return [f"By attention share ({rule}): no attention-sink positions.", ""]
    pos = ds.token_position.values[att]
    special = ds.token_special.values.astype(bool)[att] if "token_special" in ds else None
    counts = {int(p): int((pos == p).sum()) for p in np.unique(pos)}
    n_sent = int(ds.attrs["n_sentences"])
    extra = "" if special is None else f" ({int(special.sum())} of them special tokens)"
    return [
        f"By attention share ({rule}): {int(att.sum())} tokens{extra}, at positions "
        + ", ".join(f"{p} ({k} of {n_sent} sentences)" for p, k in counts.items())
        + ".",
        f"- the attention weight they receive (mean over queries and heads), per layer: "
        f"{_fmt(ds.attention_sink_share.values, 2)}; under uniform attention: "
        f"{_fmt(ds.attention_sink_uniform.values, 2)};",
        f"- their share of the covariance trace of the residual stream, per layer: "
        f"{_fmt(ds.attention_sink_trace_share_residual.values, 2)}; of the attention input: "
        f"{_fmt(ds.attention_sink_trace_share.values, 2)};",
        "- they stay in the headline statistics (at ordinary norms they do not decide a cloud statistic by "
        "themselves); the massive-norm positions are the ones left out.",
        "",
    ]


def _sink_section(ds: xr.Dataset) -> list[str]:
    if "token_sink" not in ds:
        return []
    n = int(ds.attrs.get("n_sinks", int(ds.token_sink.sum())))
    thr = ds.attrs.get("sink_norm_ratio_threshold", 10)
    lines = ["## Attention sinks (massive-norm and attention-share positions)", ""]
    if not n:
        lines += [
            f"By norm: no token's residual-stream norm exceeds {thr:g} times its layer's median in any layer: no "
            "massive-norm positions; the statistics without sinks are those of all tokens.",
            "",
        ]
        return lines + _attention_sink_lines(ds)
    sink = ds.token_sink.values.astype(bool)
    pos = ds.token_position.values[sink]
    first = np.flatnonzero(ds.sink_massive.values.any(1))
    counts = {int(p): int((pos == p).sum()) for p in np.unique(pos)}
    n_sent = int(ds.attrs["n_sentences"])
    lines += [
        f"By norm, a finding of its own: {n} tokens have a residual-stream norm above {thr:g} times their layer's "
        f"median (from layer {int(first[0]) if first.size else '?'} on), at positions "
        + ", ".join(f"{p} ({k} of {n_sent} sentences)" for p, k in counts.items())
        + ".",
        f"- their median norm over the other tokens' median, per layer: {_fmt(ds.sink_norm_ratio.values)}"
        " (NaN: no massive token in that layer);",
    ]
    if "sink_trace_share_residual" in ds:
        lines.append(
            f"- their share of the covariance trace of the residual stream, per layer: "
            f"{_fmt(ds.sink_trace_share_residual.values, 2)};"
        )
    lines += [
        f"- their share of the covariance trace of the attention input, per layer: {_fmt(ds.sink_trace_share.values, 2)};",
        f"- the attention weight they receive (mean over queries and heads), per layer: "
        f"{_fmt(ds.sink_attention_share.values, 2)}; under uniform attention: {_fmt(ds.sink_attention_uniform.values, 2)}.",
        "",
        "Every statistic and claim below is computed without them (the headline); the verdicts with them "
        "included follow each claim, and the dataset keeps both (`tokens = all`, `claim_*_with_sinks`).",
        "",
    ]
    return lines + _attention_sink_lines(ds)


def _header(ds: xr.Dataset) -> list[str]:
    pre = bool(ds.attrs["pre_ln"])
    causal, rotary = bool(ds.attrs.get("causal", 0)), bool(ds.attrs.get("rotary", 0))
    kind = "decoder (causal attention)" if causal else "encoder (bidirectional attention)"
    lines = [
        f"# Probing `{ds.attrs['model']}` ({ds.attrs['family']}, {kind}, {'pre' if pre else 'post'}-norm, {ds.attrs['norm']})",
        "",
        f"{ds.attrs['n_sentences']} sentences, {ds.attrs['n_tokens']} tokens ({ds.attrs['n_special']} special); "
        f"cloud statistics on {ds.attrs['stats_tokens']} tokens (same tokens at every stage); "
        + _uncertainty(ds)
        + " attnphys "
        + ds.attrs["attnphys_version"]
        + ".",
        "",
    ]
    cut = int(ds.attrs.get("n_truncated", 0))
    if cut:
        lines += [
            f"**{cut} of {ds.attrs['n_sentences']} sentences were cut at max_length = {ds.attrs.get('max_length')} "
            "tokens**: their tails are in no statistic below (raise max_length to keep them whole).",
            "",
        ]
    loaded, ran = str(ds.attrs.get("attn_implementation", "")), str(ds.attrs.get("attn_captured", ""))
    if loaded and ran and loaded != ran and "unknown" not in (loaded, ran):
        lines += [
            f"The model was loaded with the `{loaded}` attention, which does not return its weights; it was "
            f"captured with the `{ran}` attention (the same function of the same weights) and switched back.",
            "",
        ]
    how = []
    if causal:
        how.append(
            "every attention statistic uses the causal mask (a token attends to itself and the tokens before it)"
        )
    if rotary:
        how.append(
            "queries and keys are rotated at their positions wherever scores or gradients are computed; "
            "the position-free W_qᵀW_k (offset 0) is compared separately from the form averaged over the "
            "text's offsets"
        )
    kv = json.loads(ds.attn_head.attrs.get("kv_head", "[]") or "[]")
    if kv and len(set(kv)) < len(kv):
        how.append(
            f"{len(kv)} query heads share {len(set(kv))} key/value heads (query head → key/value head: "
            + ", ".join(f"{h}→{g}" for h, g in enumerate(kv))
            + ")"
        )
    if how:
        lines += ["How the experiments read this model: " + "; ".join(how) + ".", ""]
    if "q4" in str(ds.attrs["model"]).lower() or str(ds.attrs["model"]) == "smollm2":
        lines += [
            "The weights are 4-bit quantized (GGUF Q4_1: blocks of 32 weights sharing a scale and an offset) and "
            "dequantized to float32: every number describes this quantized model, whose weights differ from "
            "the original SmolLM2's by up to half a quantization step.",
            "",
        ]
    return lines


def _where(sup, p, L: int) -> str:
    n = int(np.isfinite(p).sum())
    return "not tested" if n == 0 else f"{int(np.sum(sup))} of {n} tested" + ("" if n == L else f" ({L - n} untested)")


def _verdict_table(ds: xr.Dataset) -> list[str]:
    if "claim" not in ds.coords:
        return []
    L = ds.sizes["layer"]
    sinks = "claim_supported_with_sinks" in ds and int(ds.attrs.get("n_sinks", 0)) > 0
    from attnphys.probes.run import control_prefixes

    prefixes = control_prefixes(ds)
    cols = ["claim", "depends on training", "supported in (layers)"]
    cols += ["with the sinks"] if sinks else []
    cols += [f"{kind} control" for kind in prefixes]
    rows = [
        "## Verdicts",
        "",
        f"Each claim is tested in every layer against its null; a layer supports it when its test has enough "
        f"degrees of freedom, its p-value survives Holm's correction over the tested layers (of {L}) at "
        f"family-wise level {ALPHA:g}, and the effect is the claimed one; for a claim about training, no control "
        "model may pass it in that layer. A layer that could not be tested, or is not counted, says why under "
        "its claim.",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    for name in ds.claim.values:
        c = CLAIMS.get(str(name))
        cells = [c.title if c else str(name), "yes" if c and c.training else "no"]
        cells.append(_where(ds.claim_supported.sel(claim=name).values, ds.claim_p.sel(claim=name).values, L))
        if sinks:
            cells.append(
                _where(
                    ds.claim_supported_with_sinks.sel(claim=name).values,
                    ds.claim_p_with_sinks.sel(claim=name).values,
                    L,
                )
            )
        for pre in prefixes.values():
            cells.append(
                _where(
                    ds[f"{pre}claim_supported"].sel(claim=name).values, ds[f"{pre}claim_p"].sel(claim=name).values, L
                )
            )
        rows.append("| " + " | ".join(cells) + " |")
    return rows + [""]


def _control_section(ds: xr.Dataset, appendix: list[str] | None = None) -> list[str]:
    """One section per control model: where the trained model and the control differ, in words; the same
    per-layer numbers (effect, z, p, degrees of freedom) as the claims' go to ``appendix``."""
    from attnphys.probes.run import control_prefixes

    lines: list[str] = []
    for kind, pre in control_prefixes(ds).items():
        if f"{pre}claim_supported" not in ds:
            continue
        lines += _one_control(ds, kind, pre, appendix if appendix is not None else [])
    return lines


def _one_control(ds: xr.Dataset, kind: str, pre: str, appendix: list[str]) -> list[str]:
    what = {
        "random": "every weight drawn again as the family initialises it",
        "shuffled": "the entries of every weight tensor permuted within the tensor",
    }.get(str(kind), "")
    heading = f"Trained beside the {kind} control"
    lines = [f"## {heading}", "", f"The same probe on a {kind} copy of the model ({what}).", ""]
    numbers = [f"### {heading}", ""]
    for name in ds.claim.values:
        raw = ds.claim_supported.sel(claim=name).values.astype(bool)
        if "claim_reason" in ds:  # the trained verdict before the controls discounted it
            raw = raw | np.char.startswith(ds.claim_reason.sel(claim=name).values.astype(str), "not counted:")
        b = ds[f"{pre}claim_supported"].sel(claim=name).values.astype(bool)
        dropped = raw & ~ds.claim_supported.sel(claim=name).values.astype(bool)  # another control passes there
        only = np.flatnonzero(raw & ~b & ~dropped)
        also = np.flatnonzero(raw & b)
        c = CLAIMS.get(str(name))
        title = c.title if c else str(name)
        diff = (
            f"supported in the trained model only in layers {', '.join(map(str, only))}"
            if only.size
            else "no layer supported by the trained model only"
        )
        both = f"; also in the control: layers {', '.join(map(str, also))}" if also.size else ""
        elsewhere = np.flatnonzero(dropped & ~b)
        if elsewhere.size:
            both += f"; not counted in layers {', '.join(map(str, elsewhere))} (another control passes it there)"
        if both and c is not None and c.training:
            both += " (not counted for the trained model)"
        ctl_only = np.flatnonzero(b & ~raw)
        c_only = f"; in the control only: layers {', '.join(map(str, ctl_only))}" if ctl_only.size else ""
        stats = (
            f"effect trained {_fmt(ds.claim_statistic.sel(claim=name).values)} vs control "
            f"{_fmt(ds[f'{pre}claim_statistic'].sel(claim=name).values)}"
        )
        if f"{pre}claim_z" in ds:
            stats += (
                f"; control z (or t) per layer: {_fmt(ds[f'{pre}claim_z'].sel(claim=name).values)}; p: "
                f"{_fmt(ds[f'{pre}claim_p'].sel(claim=name).values, 2)}"
            )
        if f"{pre}claim_df" in ds:
            stats += f"; degrees of freedom: {_fmt(ds[f'{pre}claim_df'].sel(claim=name).values)}"
        lines.append(f"- {title}: {diff}{both}{c_only}.")
        numbers.append(f"- {title}: {stats}.")
        if f"{pre}claim_reason" in ds:
            why = _reasons(ds[f"{pre}claim_reason"].sel(claim=name).values)
            if why:
                lines.append(f"  - control: {why}")
    if "beta" in ds and f"{pre}beta" in ds:
        numbers.append(
            f"- β (signed), median over heads per layer: trained {_fmt(np.nanmedian(ds.beta.values, axis=1))}; "
            f"control {_fmt(np.nanmedian(ds[f'{pre}beta'].values, axis=1))}; alignment median trained "
            f"{_fmt(np.nanmedian(ds.beta_alignment.values, axis=1), 2)}, control "
            f"{_fmt(np.nanmedian(ds[f'{pre}beta_alignment'].values, axis=1), 2)}."
        )
    for var, words in (
        ("mlp_r2_affine", "MLP affine R²"),
        ("grad_cosine", "update–gradient cosine (mean over heads)"),
    ):
        if var in ds and f"{pre}{var}" in ds:
            t, k = ds[var].values, ds[f"{pre}{var}"].values
            if t.ndim > 1:
                t, k = t.mean(1), k.mean(1)
            numbers.append(f"- {words}: trained {_fmt(t)}; control {_fmt(k)}.")
    lines.append(f"- the per-layer numbers beside the control's: appendix, {heading.lower()}.")
    appendix += numbers + [""]
    return lines + [""]


def _registered_sections(ds: xr.Dataset, out: Path | None = None, appendix: list[str] | None = None) -> list[str]:
    """A section for every registered claim without a built-in one, led by its figure and table (theory:
    docs/theory/probes.md §4); its per-layer numbers go to ``appendix``."""
    lines: list[str] = []
    if "claim" not in ds.coords:
        return lines
    for name in ds.claim.values:
        c = CLAIMS.get(str(name))
        if c is None or c.section is not None:
            continue
        lines += [f"## Claim: {c.title}", ""] + _lead(ds, [str(name)], str(name), out)
        lines += [f"- statistic: {c.statistic};", _claim_line(ds, str(name))]
        if c.report is not None:
            lines += list(c.report(ds))
        lines.append("")
        if appendix is not None:
            appendix += [f"### Claim: {c.title}", "", *_claim_arrays(ds, str(name)), ""]
    return lines


def _temperature_section(ds: xr.Dataset) -> list[str]:
    if "beta" not in ds:
        return []
    beta = ds.beta.values
    med = ds.beta_layer.values
    one = ds.beta_one_cluster.values.astype(bool)
    align = ds.beta_alignment.values
    particle = ds.beta_particle.values.astype(bool) if "beta_particle" in ds else np.isfinite(beta)
    amin = ds.attrs.get("alignment_min", 0.3)
    lines = [
        "## 7. The particle picture's parameters: temperatures and clustering",
        "",
        "Per layer and head, the signed effective inverse temperature β of the attention: the least-squares slope "
        "of the head's within-query centred scores on the cosines of the same tokens' directions, on the layer's "
        "normalised hidden states without the sink positions (exactly β for the particle model's scores "
        "β⟨x_i, x_j⟩; negative where the scores oppose the cosines). These are parameters, not claims: no test.",
        "",
        f"- β over all heads: min {np.nanmin(beta):.3g}, median {np.nanmedian(beta):.3g}, max {np.nanmax(beta):.3g}; "
        f"{int(np.sum(beta < 0))} of {beta.size} heads have β < 0;",
        f"- alignment of the scores with the cosines (correlation; 1: the particle form), median per layer: "
        f"{_fmt(np.nanmedian(align, axis=1), 2)};",
    ]
    if "beta_spread" in ds:
        rel = np.abs(ds.beta_spread.values) / np.maximum(np.abs(beta), 1e-300)
        lines.append(
            f"- spread of β over texts (standard deviation over {int(ds.attrs.get('beta_spread_folds', 4))} "
            f"sentence folds), median over heads per layer: {_fmt(np.nanmedian(ds.beta_spread.values, axis=1))} "
            f"(median relative spread {np.nanmedian(rel):.2g});"
        )
    if "beta_scale" in ds:
        lines.append(
            f"- the unsigned score scale (spread of the scores per unit spread of the cosines), median per layer: "
            f"{_fmt(np.nanmedian(ds.beta_scale.values, axis=1))} — it also measures the weights' scale;"
        )
    times = ds.layer_time.values if "layer_time" in ds else None
    clock = (
        f"the flow's time per layer is the measured update size ‖attn_out‖/‖x‖ ({_fmt(times, 2)}), "
        f"t = {ds.attrs.get('flow_horizon'):.3g} through the whole model"
        if times is not None
        else f"t = {ds.attrs.get('flow_horizon')} (one unit per layer)"
    )
    lines += [
        f"- particle heads (β > 0 and alignment ≥ {amin:g}): {int(particle.sum())} of {particle.size}; only these "
        f"get a regime. β per layer (median over its particle heads): {_fmt(med)};",
        f"- regimes: the particle flow at a particle head's β, started from its layer's own token clouds "
        f"({ds.attrs.get('flow_clouds')} clouds of {ds.attrs.get('flow_tokens')} tokens); {clock}: it ends in one "
        f"cluster for {int(one.sum())} of the {int(particle.sum())} particle heads and stays on a metastable "
        f"plateau of several clusters for the other {int((particle & ~one).sum())};",
        f"- the model's own clouds (attention input, per sentence), mean cosine between tokens per layer: "
        f"{_fmt(ds.cluster_model_mean_cosine.values, 2)};",
        f"- the particle flow from the first layer's clouds at each layer's β: {_fmt(ds.cluster_flow_mean_cosine.values, 2)} "
        f"(clusters: model {_fmt(ds.cluster_model_count.values, 2)}; flow {_fmt(ds.cluster_flow_count.values, 2)}).",
        "",
    ]
    return lines


def _special_line(ds: xr.Dataset, grows, L: int) -> str:
    """The k-NN entropy without the special tokens, or why there is no such set."""
    if not int(ds.attrs.get("n_special", 1)):
        return (
            "- the tokenizer adds no special tokens: the set without them is all tokens (sink positions "
            "included), so there is no separate count without special tokens."
        )
    sinks = " (sink positions included)" if int(ds.attrs.get("n_sinks", 0)) else ""
    return (
        f"- without special tokens{sinks} the k-NN entropy grows in {int(np.sum(grows))} of {L} layers "
        "(special tokens are outliers that can flip it)."
    )


def _mlp_fit_line(ds: xr.Dataset) -> list[str]:
    """The layers whose affine fits are underdetermined (fewer training tokens than parameters per output)."""
    if "mlp_underdetermined" not in ds or not int(ds.mlp_underdetermined.sum()):
        return []
    layers = ", ".join(str(i) for i in np.flatnonzero(ds.mlp_underdetermined.values))
    return [
        f"- **underdetermined fits** in layers {layers}: a split trains on {int(ds.mlp_train_tokens.min())} tokens "
        f"for {int(ds.attrs.get('mlp_parameters', 0))} parameters per output (D weights and a bias), so the "
        "least-squares map is the ridge term's choice and its held-out R² says little about the MLP; the claim "
        "is not tested there (give more sentences)."
    ]


def _built_in(
    ds: xr.Dataset, title: str, number: int, out: Path | None, words: list[str], numbers: list[str], appendix: list[str]
) -> list[str]:
    """A built-in claim section: heading, figure and table, then ``words`` (the claims' tests and verdicts);
    ``numbers`` (the per-layer measurements) and the claims' per-layer tests go to ``appendix``."""
    names = _section_claims(number)
    head = f"{number}. {title}"
    appendix += [f"### {head}", "", *numbers]
    for name in names:
        appendix += _claim_arrays(ds, name)
    appendix.append("")
    return [f"## {head}", "", *_lead(ds, names, str(number), out), *words, ""]


def report(
    ds: xr.Dataset,
    s: dict | None = None,
    figures=(),
    *,
    out: str | Path | None = None,
    critical: xr.Dataset | None = None,
    propagation: xr.Dataset | None = None,
    dmft: xr.Dataset | None = None,
) -> str:
    """The Markdown report of a probe: the verdict of every claim of the paper in every layer, with its test
    against its null, Holm's correction over the tested layers at family-wise level α and the controls
    (theory: docs/theory/probes.md §4): layer ℓ supports a claim when its test has df_ℓ ≥ min_df, its effect
    has the claimed sign and its Holm-adjusted p-value over the m tested layers,
    p̃_(j) = max_{i ≤ j} min(1, (m − i + 1) p_(i)) (p_(1) ≤ … ≤ p_(m)), is at most α.

    Each claim's section opens with a short table — the layers supporting the claim out of those tested,
    the range of its effect over them, each control's layers, whether it is about training — and, when the
    report goes to a folder, its figure; the per-layer numbers (effect, z, p, degrees of freedom, and the
    measurements behind them) follow in an appendix at the end. The placements on the theory's diagrams add
    their sections, each opened by its figure and short table, when their datasets are given.

    Args:
        ds: a :func:`~attnphys.probes.run.probe` dataset. s: its :func:`~attnphys.probes.run.summary`
            (computed when None). figures: paths of figures already written, relative to the report's
            folder (listed under "Figures"). out: the folder the report is written into: the sections'
            figures are written into ``out/figures`` (PNG) and linked; None: no figure, the tables only.
        critical, propagation, dmft: datasets of :func:`~attnphys.probes.critical.critical_temperatures`,
            :func:`~attnphys.probes.propagation_placement.propagation_placement` and
            :func:`~attnphys.probes.dmft_placement.dmft_placement` (or
            :func:`~attnphys.probes.dmft_placement.place_layers`): each adds its section.

    Raises:
        InputError: a placement dataset of another kind (field: the argument's name).
    """
    placed = check_placements(critical=critical, propagation=propagation, dmft=dmft)
    if s is None:
        from attnphys.probes.run import summary

        s = summary(ds)
    folder = None if out is None else Path(out)
    appendix: list[str] = []
    L = ds.sizes["layer"]
    st_ns = ds.stat.sel(tokens="no_special")
    lines = _header(ds) + _sink_section(ds) + _verdict_table(ds)

    ent_ns = (
        st_ns.sel(stage="attn_add", statistic="knn_entropy") - st_ns.sel(stage="input", statistic="knn_entropy")
    ).values > 0
    lines += _built_in(
        ds,
        "Attention + residual expands the token cloud",
        1,
        folder,
        [
            _claim_line(ds, "attention_expands_cov"),
            _claim_line(ds, "attention_expands_knn"),
            _special_line(ds, ent_ns, L),
        ],
        [
            f"- covariance trace after/before the attention add, per layer: {_fmt(s['attention_residual_cov_trace_ratio'])};",
            f"- k-NN entropy change: {_fmt(s['attention_residual_knn_entropy_change'])};",
        ],
        appendix,
    )
    lines += _built_in(
        ds,
        "Normalization contracts it",
        2,
        folder,
        [
            _claim_line(ds, "norm_contracts_cov"),
            _claim_line(ds, "norm_contracts_knn"),
            "- the statistics disagree where the norm's learned affine rescales features: compare the "
            "`*_noaffine` stages in the dataset.",
        ],
        [
            f"- covariance trace after/before the norm next to attention: {_fmt(s['norm_cov_trace_ratio'])};",
            f"- k-NN entropy change across that norm: {_fmt(s['norm_knn_entropy_change'])};",
        ],
        appendix,
    )
    words = []
    numbers = [
        f"- best cosine similarity over the regularization sweep (heads summed), per layer: {_fmt(s['qk_sum_best_similarity'])};",
        f"- z-score against randomly rotated targets (two-sided: negative is anti-aligned): "
        f"{_fmt(s['qk_sum_z_vs_rotations'])}; other layers' Σ⁻¹ (mean): "
        f"{_fmt(s['qk_sum_null_other_layer'])}; Σ itself: {_fmt(s['qk_sum_similarity_to_sigma'])};",
    ]
    if "qk_specificity" in ds:
        bo = ds.qk_best_other_layer.sel(head="sum").max("lam").values
        bm = ds.qk_best_mismatched_head.sel(head="sum").max("lam").values
        words.append(
            "- specificity: a layer supports the claim only where its own Σ⁻¹ beats both the best similarity "
            "of the layer's form with another layer's Σ⁻¹ and that of another layer's heads with this layer's Σ⁻¹;"
        )
        numbers.append(
            f"- specificity: the best similarity of the layer's form with another layer's Σ⁻¹: {_fmt(bo)}; of "
            f"another layer's heads with this layer's Σ⁻¹: {_fmt(bm)};"
        )
    if bool(ds.attrs.get("rotary", 0)) and "qk_similarity_offset_average" in ds:
        avg = ds.qk_similarity_offset_average.sel(head="sum").max("lam").values
        words.append(
            "- with rotary positions the score form depends on the offset between query and key: the numbers "
            "are the position-free form (offset 0, W_qᵀW_k); the form averaged over the causal offsets of this "
            "text (W_qᵀ R̄ W_k) is in the appendix;"
        )
        numbers.append(
            f"- averaged over the causal offsets of this text (W_qᵀ R̄ W_k), the best similarity: {_fmt(avg)};"
        )
    words += [
        _claim_line(ds, "qk_inverse_covariance"),
        "- a similarity close to 0 in absolute terms means the affine (Fisher) approximation does not describe "
        "the learned bilinear forms even where it beats the null.",
    ]
    lines += _built_in(
        ds, "W_qᵀW_k ≈ Σ⁻¹ (inverse covariance of the attention input)", 3, folder, words, numbers, appendix
    )
    lines += _built_in(
        ds,
        "The MLP is close to the identity / to an affine map",
        4,
        folder,
        [
            *_mlp_fit_line(ds),
            _claim_line(ds, "mlp_affine"),
            f"- the threshold is R² > {MLP_AFFINE_R2}; a random MLP at initialisation can be almost affine (a plain "
            "MLP) or clearly not (a gated MLP multiplies two projections), so the gap to it measures what training did.",
        ],
        [
            f"- held-out R² of the best affine map (split by sentence): {_fmt(s['mlp_r2_affine'])}; identity R²: "
            f"{_fmt(s['mlp_r2_identity'])}; random-initialised MLP of the same shape (affine R²): "
            f"{_fmt(s['mlp_r2_random_mlp'])};",
        ],
        appendix,
    )
    lines += _built_in(
        ds,
        "Heads take the gradient step of log Z",
        5,
        folder,
        [_claim_line(ds, "head_own_gradient")],
        [
            f"- mean cosine between a head's real update W_o W_v E_p[x] and ∇ log Z of its own scores: "
            f"{_fmt(s['grad_cosine_mean'])}; other heads' gradients: {_fmt(s['grad_cosine_null_mean'])};",
        ],
        appendix,
    )
    lines += _swap_section(ds, s)
    lines += _registered_sections(ds, folder, appendix)
    lines += _temperature_section(ds)
    lines += _control_section(ds, appendix)
    lines += placement_sections(placed, folder)
    lines += ["## Figures", ""] + [f"![{Path(p).stem}]({Path(p).as_posix()})" for p in figures] + [""]
    lines += [
        "## Appendix: the numbers per layer",
        "",
        "Every list has one number per layer, layer 0 first (NaN: not measured or not tested there); the "
        "dataset holds them all (`claim_statistic`, `claim_z`, `claim_p`, `claim_df`, and the measurements).",
        "",
        *appendix,
    ]
    return "\n".join(lines)


def _swap_section(ds: xr.Dataset, s: dict) -> list[str]:
    """Section 6: the normalizations swapped without retraining (a measurement, not a claim)."""
    sw = s["swap_token_cosine"]
    not_run = json.loads(ds.attrs.get("swap_not_run", "{}") or "{}")
    lines = [
        "## 6. Swapping the normalization without retraining",
        "",
        f"- a measurement, not a claim (no null hypothesis), on {ds.attrs.get('swap_sentences', ds.attrs['n_sentences'])} "
        "sentences: mean cosine similarity of the final token embeddings with the original model: "
        + ", ".join(f"{k}: {v:.3f}" for k, v in sw.items() if k not in not_run and v is not None and np.isfinite(v))
        + ";",
    ]
    for k, why in not_run.items():
        lines.append(f"- {k}: {why}.")
    for k in ds.norm_swap.values:
        k = str(k)
        if k in not_run or np.isfinite(ds.swap_token_cosine.sel(norm_swap=k).item()):
            continue
        if "swap_reason" in ds and str(ds.swap_reason.sel(norm_swap=k).item()):
            lines.append(f"- {k}: NaN because {ds.swap_reason.sel(norm_swap=k).item()}.")
            continue
        change = ds.swap_per_layer_change.sel(norm_swap=k).values
        bad = np.flatnonzero(~np.isfinite(change))
        where = (
            f" from hidden state {bad[0]} on (relative change before it: {_fmt(change[: bad[0]])})" if bad.size else ""
        )
        lines.append(f"- {k}: the hidden states overflow (non-finite){where}: without it the model diverges.")
    return lines + [""]

"""The placements' sections of the probe report: each opened by its figure and a short table of its claims'
verdicts, then the placement's own section (theory: docs/theory/critical_temperatures.md §5,
docs/theory/propagation_placement.md §4, docs/theory/dmft_placement.md §5, §6).

The text and figures come from the placements' own functions (:func:`~attnphys.probes.critical.critical_section`,
:func:`~attnphys.probes.critical.plot_critical` and their propagation and DMFT counterparts); this module
only checks the datasets, writes the figures beside the report and adds the short tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from attnphys.errors import InputError

FIGURES = "figures"
"""The folder, beside the report, that holds its figures."""

KINDS = ("critical", "propagation", "dmft")
"""The placements a probe report shows, in report order."""

NEEDS = {
    "critical": (("ratio",), "critical_temperatures (β/β_c per head: the variable ratio)"),
    "propagation": (
        ("cosine_out_mean", "predicted_mean", "agreement_within"),
        "propagation_placement (measured and predicted cosines per layer)",
    ),
    "dmft": (("boundary_distance", "grid_phase"), "dmft_placement or place_layers (layers on the DMFT diagram)"),
}
"""Per placement: the variables its dataset must hold, and what it is (for the refusal)."""


def _what(ds) -> str:
    if not isinstance(ds, xr.Dataset):
        return f"a {type(ds).__name__}"
    names = sorted(map(str, ds.data_vars))
    return "a dataset with " + (", ".join(names[:5]) + (", …" if len(names) > 5 else "") if names else "no variables")


def check_placements(**given) -> dict[str, xr.Dataset]:
    """The placement datasets given (None: not given), each checked to be of its kind.

    Raises:
        InputError: a dataset of another kind, named by its argument (``critical``, ``propagation``, ``dmft``).
    """
    out = {}
    for kind in KINDS:
        ds = given.get(kind)
        if ds is None:
            continue
        needs, what = NEEDS[kind]
        if not isinstance(ds, xr.Dataset) or any(v not in ds for v in needs):
            raise InputError(f"must be a dataset of {what}; got {_what(ds)}", kind)
        out[kind] = ds
    return out


def _fmt(x: float) -> str:
    return "NaN" if not np.isfinite(x) else f"{x:.3g}"


def _span(v) -> str:
    v = np.asarray(v, float).ravel()
    v = v[np.isfinite(v)]
    if not v.size:
        return "—"
    lo, hi = _fmt(float(v.min())), _fmt(float(v.max()))
    return lo if lo == hi else f"{lo} to {hi}"


def _cell(text: str) -> str:
    """A table cell: its own | escaped (Markdown reads a bare one as a column break)."""
    return str(text).replace("|", "\\|")


def _table(cols: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)] + [
        "| " + " | ".join(map(_cell, r)) + " |" for r in rows
    ]


def critical_keys(ds: xr.Dataset) -> str:
    """The headline key set of a critical placement: without the sink columns where it has them."""
    keys = [str(k) for k in ds["keys"].values] if "keys" in ds.coords else []
    return "no_sinks" if "no_sinks" in keys else (keys[0] if keys else "all")


def _verdict(ok: bool, p: float, test: str = "Holm p") -> str:
    if not np.isfinite(p):
        return "not tested (the reason is below)"
    return f"{'supported' if ok else 'not supported'} ({test} = {_fmt(p)})"


def critical_table(ds: xr.Dataset) -> list[str]:
    """The claim "trained heads sit nearer their critical β than the controls' heads": the trained heads
    placed, the range of their β/β_c, each control's verdict (Welch over heads, Holm over the controls)."""
    from attnphys.probes.critical import CLAIM

    keys = critical_keys(ds)
    r = ds.ratio.sel(model="trained", keys=keys).values if "model" in ds.dims else ds.ratio.sel(keys=keys).values
    placed = f"{int(np.isfinite(r).sum())} of {r.size} heads placed (keys `{keys}`)"
    effect = f"β/β_c {_span(r)} (median {_fmt(float(np.nanmedian(r))) if np.isfinite(r).any() else '—'})"
    controls = [str(c) for c in ds.claim_p.control.values] if "claim_p" in ds else []
    cells = [CLAIM, placed, effect]
    for c in controls:
        sel = dict(control=c, keys=keys)
        cells.append(_verdict(bool(int(ds.claim_supported.sel(sel))), float(ds.claim_p_holm.sel(sel))))
    cols = ["claim", "trained model", "effect range"] + [f"vs {c}" for c in controls]
    if not controls:
        cols.append("controls")
        cells.append("none run: not tested")
    return _table([*cols, "depends on training"], [[*cells, "yes"]])


def propagation_table(ds: xr.Dataset) -> list[str]:
    """The two claims of the propagation placement: the theory predicts every layer's mean cosine within the
    tolerance (in the trained model and each control), and the trained layers sit nearer the collapse line
    than each control's."""
    from attnphys.probes.propagation_placement import TOLERANCE

    tok = "no_sinks" if int(ds.attrs.get("n_sinks", 0)) else "all"  # the section's headline tokens
    tol = float(ds.attrs.get("tolerance", TOLERANCE))
    controls = [str(c) for c in ds.control.values] if "control" in ds.coords else []

    def agree(model: str) -> str:
        a = ds.sel(model=model, tokens=tok)
        within = "within" if int(a.agreement_within) else "not within"
        return f"{within} {tol:g} (largest mean |Δ| {_fmt(float(a.agreement_statistic))})"

    t = ds.sel(model="trained", tokens=tok)
    delta = np.abs(t.cosine_out_mean.values - t.predicted_mean.values)
    good = np.isfinite(delta)
    agreement = [
        f"the theory at the measured parameters predicts each layer's mean cosine within {tol:g}",
        f"{agree('trained')}; {int((delta[good] < tol).sum())} of {int(good.sum())} layers within it",
        f"|measured − predicted| per layer {_span(delta)}",
        *(agree(c) for c in controls),
        "no",
    ]
    dist = np.abs(t.collapse_distance_mean.values) if "collapse_distance_mean" in t else np.full(delta.shape, np.nan)
    nearer = ["trained layers sit nearer the collapse line than the control's",
              f"{int(np.sum(t.collapse_distance_mean.values > 0)) if 'collapse_distance_mean' in t else 0} of "
              f"{delta.size} layers on the condensed side", f"|log β/β_c| per layer {_span(dist)}"]  # fmt: skip
    for c in controls:
        p = float(ds.nearer_p.sel(control=c, tokens=tok))
        # the verdict of propagation_section: a one-sided p below 0.05
        nearer.append(f"{'nearer' if p < 0.05 else 'not shown nearer'} (p = {_fmt(p)})")
    nearer.append("yes")
    cols = ["claim", "trained model", "effect range"] + [f"{c} control" for c in controls]
    if not controls:
        cols.append("controls")
        agreement.insert(-1, "none run")
        nearer.insert(-1, "none run: not tested")
    return _table([*cols, "depends on training"], [agreement, nearer])


def dmft_table(ds: xr.Dataset) -> list[str]:
    """The claim "trained layers sit nearer a regime boundary of the DMFT diagram than the controls'": the
    trained units placed, the range of their boundary distances, each control's verdict."""
    from attnphys.probes.dmft_placement import CLAIM

    t = ds.sel(model="trained") if "model" in ds.dims else ds
    d = t.boundary_distance.values
    censored = bool(np.any(t.censored.values)) if "censored" in t else False
    units = "layers" if str(ds.attrs.get("heads", "layer")) == "layer" else "heads"
    placed = f"{int(np.isfinite(d).sum())} of {d.size} {units} placed"
    effect = f"distance to a boundary {_span(d)} e-folds" + (" (≥: some have none on the grid)" if censored else "")
    controls = [str(c) for c in ds.claim_p.control.values] if "claim_p" in ds else []
    cells = [CLAIM, placed, effect]
    for c in controls:
        s = ds.sel(control=c)
        cells.append(_verdict(bool(int(s.claim_supported)), float(s.claim_p_holm)))
    cols = ["claim", "trained model", "effect range"] + [f"vs {c}" for c in controls]
    if not controls:
        cols.append("controls")
        cells.append("none run: not tested")
    return _table([*cols, "depends on training"], [[*cells, "yes"]])


def save_png(fig, path: Path, dpi: int = 110) -> Path:
    """Write the figure ``fig`` to ``path`` as PNG, complete or not at all (the bytes written to a hidden sibling,
    then renamed), the margins fitted to the labels; missing folders are made. Returns the path."""
    import io

    from attnphys._paths import write_bytes_atomic

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, buf.getvalue())
    return path


def _figure(kind: str, ds: xr.Dataset, path: Path) -> Path:
    """The placement's own figure (its ``plot_*`` function, on a figure of its own) written to ``path``."""
    if kind == "critical":
        from attnphys.probes.critical import plot_critical

        ax = plot_critical(ds, keys=critical_keys(ds))
    elif kind == "propagation":
        from attnphys.probes.propagation_placement import plot_propagation_placement

        ax = plot_propagation_placement(ds)
    else:
        from attnphys.probes.dmft_placement import plot_dmft_placement

        ax = plot_dmft_placement(ds)
    fig = ax.get_figure(root=True)
    assert fig is not None  # an axes of a figure function always has one
    return save_png(fig, path)


CAPTIONS = {
    "critical": "heads against their critical line",
    "propagation": "per-layer mean cosine against the theory's prediction",
    "dmft": "layers on the DMFT diagram",
}


def placement_section(kind: str, ds: xr.Dataset, out: Path | None = None) -> list[str]:
    """One placement's section: its heading, its figure (written into ``out``/figures when given), its short
    table, then the placement's own section text."""
    if kind == "critical":
        from attnphys.probes.critical import critical_section

        text, table = critical_section(ds, critical_keys(ds)), critical_table(ds)
    elif kind == "propagation":
        from attnphys.probes.propagation_placement import propagation_section

        text, table = propagation_section(ds), propagation_table(ds)
    else:
        from attnphys.probes.dmft_placement import dmft_section

        text, table = dmft_section(ds), dmft_table(ds)
    head, _, rest = text.partition("\n")
    lines = [head, ""]
    if out is not None:
        path = _figure(kind, ds, out / FIGURES / f"{kind}.png")
        lines += [f"![{CAPTIONS[kind]}]({FIGURES}/{path.name})", ""]
    return lines + table + ["", rest.strip("\n"), ""]


def placement_sections(placed: dict[str, xr.Dataset], out: Path | None = None) -> list[str]:
    """The sections of the placements given (:func:`check_placements`), in report order."""
    lines: list[str] = []
    for kind in KINDS:
        if kind in placed:
            lines += placement_section(kind, placed[kind], out)
    return lines


__all__ = ["FIGURES", "KINDS", "check_placements", "placement_section", "placement_sections"]

"""Helpers shared by the figure modules: figures of their own (object API, no pyplot, no backend switch),
titles that name what differs from a preset, axis labels from CF attributes, robust limits and saving."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure, SubFigure

from attnphys.plots._figure import new_figure

PARAM_LABELS = {
    "beta_o": "β_o",
    "beta_att": "β_att",
    "epsilon": "ε",
    "scaling_att": "s_att",
    "scaling_o": "s_o",
    "n_se": "N_se",
    "seed": "seed",
    "beta": "β",
    "n": "N",
}
"""Short symbols of parameters, for axis labels and titles."""

TITLE_KEYS = ("M", "L", "P", "n_se", "beta_o", "beta_att", "epsilon", "scaling_att", "scaling_o")


def figure(fig: Figure | SubFigure | None = None, figsize=None) -> Figure | SubFigure:
    """The figure to draw into: ``fig`` when given (a :class:`~matplotlib.figure.Figure` or a
    :class:`~matplotlib.figure.SubFigure` of a larger one), else a new Figure with constrained layout, so
    that titles, labels and colour bars never overlap."""
    return new_figure(figsize) if fig is None else fig


def root(fig: Figure | SubFigure) -> Figure:
    """The Figure a (sub)figure belongs to (what every figure function returns)."""
    return fig if isinstance(fig, Figure) else fig.figure  # pyright: ignore[reportReturnType]


def subplots(nrows: int = 1, ncols: int = 1, *, figsize=None, fig=None, **kw):
    """(figure, axes) on a figure of its own (or ``fig``): no pyplot, no global backend."""
    fig = figure(fig, figsize)
    return fig, fig.subplots(nrows, ncols, **kw)


def save_figure(fig: Figure, path: str | Path, dpi: int = 120) -> Path:
    """Write ``fig`` to ``path`` (format from the suffix: .png, .pdf, .svg), creating missing folders; the
    file appears complete or not at all (written to a hidden sibling, then renamed). Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=dpi)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def check_component(component: int, n_features: int) -> int:
    """The plotted component of an M-vector observable, checked to lie in [0, n_features - 1].

    Raises:
        ValueError: naming the range.
    """
    if not 0 <= component < n_features:
        raise ValueError(f"component {component} is not in [0, {n_features - 1}]")
    return component


def param_label(ds: xr.Dataset | None, name: str) -> str:
    """An axis label for a coordinate: its CF ``long_name`` (with units), else the parameter's symbol."""
    if ds is not None and name in ds.coords:
        a = ds[name].attrs
        if a.get("long_name"):
            return a["long_name"] + (f" ({a['units']})" if a.get("units") not in (None, "", "1") else "")
    return PARAM_LABELS.get(name, name)


def _flat(cfg: dict) -> dict:
    out = {k: v for k, v in cfg.items() if k != "correlations"}
    for k, v in (cfg.get("correlations") or {}).items():
        out["seed" if k == "seed" else f"correlations.{k}"] = v
    return out


def _nearest_preset(flat: dict) -> tuple[str | None, list[str]]:
    """The preset with the fewest differing fields and those fields."""
    try:
        from attnphys.dmft.config import PRESETS, DMFTConfig
    except ImportError:  # pragma: no cover
        return None, sorted(flat)
    best: tuple[str | None, list[str]] = (None, sorted(flat))
    for name, fields in PRESETS.items():
        ref = _flat(DMFTConfig(**fields).to_attrs())
        diff = [k for k in flat if flat.get(k) != ref.get(k)]
        if len(diff) < len(best[1]):
            best = (name, diff)
    return best


def _value(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def config_title(ds: xr.Dataset, keys=TITLE_KEYS) -> str:
    """A one-line title naming the configuration by its nearest preset and every field that differs from
    it (the correlation seed included), swept coordinates by their range, and the start; without a preset
    close by, ``keys`` and every correlation field."""
    try:
        cfg = json.loads(ds.attrs.get("config", "{}"))
    except json.JSONDecodeError:
        cfg = {}
    flat = _flat(cfg)
    swept = {k for k in list(flat) + ["seed"] if k in ds.coords and ds[k].size > 1}
    name, diff = _nearest_preset(flat) if flat else (None, [])
    if name is not None and len(diff) <= 4:
        head = [f"{name} preset"]
        shown = [k for k in diff if k not in swept]
    else:
        head = []
        shown = [k for k in keys if k in flat and k not in swept] + [
            k for k in flat if (k == "seed" or k.startswith("correlations.")) and k not in swept
        ]
    parts = head + [f"{PARAM_LABELS.get(k, k)}={_value(flat[k])}" for k in shown]
    for k in sorted(swept):
        v = ds[k].values
        parts.append(f"{PARAM_LABELS.get(k, k)} ∈ [{v.min():g}, {v.max():g}]")
    for k in ("seed", "beta_o", "beta_att", "epsilon"):  # a single swept value replaces the configuration's
        if k in ds.coords and ds[k].size == 1 and k not in swept:
            text = f"{PARAM_LABELS.get(k, k)}={float(ds[k].values.ravel()[0]):g}"
            parts = [p for p in parts if not p.startswith(f"{PARAM_LABELS.get(k, k)}=")] + [text]
    if "start" in ds.attrs:
        parts.append(f"start: {ds.attrs['start']}")
    return ", ".join(parts)


def warnings_text(ds: xr.Dataset) -> str:
    """The dataset's recorded warnings, one line each prefixed ``warning:`` (empty if none)."""
    lines = [w for w in str(ds.attrs.get("warnings", "")).split("\n") if w]
    return "\n".join(f"warning: {w}" for w in lines)


def suptitle(fig, ds: xr.Dataset | None, text: str, fontsize: float = 9) -> None:
    """The figure title, with the dataset's warnings below it, each line wrapped to the figure's width."""
    import textwrap

    width_in = float(root(fig).get_figwidth()) if not isinstance(fig, SubFigure) else _subfigure_width(fig)
    chars = max(40, int(width_in * 72 / (0.55 * fontsize)))
    lines = [text] + (warnings_text(ds).split("\n") if ds is not None and warnings_text(ds) else [])
    fig.suptitle("\n".join(textwrap.fill(line, chars) for line in lines), fontsize=fontsize)


def _subfigure_width(sub: SubFigure) -> float:
    return float(sub.bbox_relative.width * root(sub).get_figwidth())


def robust_limits(ax, y, spread: float = 10.0) -> int:
    """Keep a few extreme values from flattening a panel: when the full range of ``y`` exceeds ``spread``
    times its 5–95 % range, the y-limits are set to the 2–98 % range (padded) and the values beyond are
    drawn as triangles on the edge. Returns how many values lie beyond."""
    y = np.asarray(y, float).ravel()
    y = y[np.isfinite(y)]
    if y.size < 5:
        return 0
    lo, hi = np.percentile(y, [5, 95])
    if not (np.ptp(y) > spread * max(hi - lo, 1e-300)):
        return 0
    lo, hi = np.percentile(y, [2, 98])
    if hi - lo <= 1e-9 * max(1.0, abs(hi)):
        return 0  # nearly every value the same (a count of 256 with one 255): the full range is the view
    pad = 0.1 * max(hi - lo, abs(hi) * 1e-6, 1e-12)
    ax.set_ylim(lo - pad, hi + pad)
    return int(np.sum((y < lo - pad) | (y > hi + pad)))


def mark_beyond(ax, x, y) -> None:
    """Triangles on the edge of the y-limits for the values of (x, y) outside them."""
    x, y = np.asarray(x, float).ravel(), np.asarray(y, float).ravel()
    lo, hi = ax.get_ylim()
    for sel, edge, marker in ((y > hi, hi, "^"), (y < lo, lo, "v")):
        if sel.any():
            ax.plot(x[sel], np.full(sel.sum(), edge), marker, ms=4, color="0.3", clip_on=False, ls="none")


def time_text(t: float) -> str:
    """A time for a panel title: ``1333``, ``24.5``, ``0.125`` — no exponent notation in ordinary ranges."""
    t = float(t)
    if t == 0 or 1e-3 <= abs(t) < 1e6:
        return f"{t:.0f}" if abs(t) >= 100 else f"{t:.3g}"
    return f"{t:.3g}"

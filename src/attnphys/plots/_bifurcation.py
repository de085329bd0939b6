"""Bifurcation diagrams with their Lyapunov exponents and zero-plane points (theory: docs/theory/dmft.md §7.1,
§7.2, §7.4).

Input: a dataset of :func:`attnphys.dmft.analysis.analyse` (or ``attnphys dmft bifurcation``) with one
swept parameter, and optionally a ``direction`` dimension from continuation. What is drawn above each
parameter value is decided by a **filter**:

* ``library`` (default): the library's regime labels. Fixed points and periodic orbits show the distinct
  values of their recorded orbit; quasi-periodic and chaotic orbits their zero-plane section points
  (component ``f`` where |component ``g``| ≤ tol), or their orbit samples when they never crossed it.
* ``reference``: the count filter of the published figures (§7.4). With Y the largest value of the
  observable over the whole diagram and R = 5001 levels, U is the number of distinct
  ⌊R(y/Y + 1)/2⌋ over the stored samples of component f: U < 80 draws every distinct quantised value
  ("periodic"), otherwise the quantised section points (80 ≤ U < 2500 "quasi-periodic", U ≥ 2500
  "chaotic"; U is counted over the stored samples: with fewer than 2500 of them the two are not told
  apart and are labelled "not periodic").

The plotted component and the section pair (``f|g``, one of the stored pairs), and the largest number of
points drawn per parameter value are options.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from attnphys.dynamics.classify import REGIMES
from attnphys.plots._common import check_component, config_title, figure, param_label, root, suptitle

REGIME_COLORS = {
    "divergent": "#7f7f7f",
    "fixed_point": "#1f77b4",
    "periodic": "#2ca02c",
    "quasi_periodic": "#ff7f0e",
    "chaotic": "#d62728",
    "hyperchaotic": "#9467bd",
    "undetermined": "#bcbd22",
}
"""One colour per regime of :data:`attnphys.dynamics.classify.REGIMES` (a test checks that none is missing)."""

Filter = Literal["library", "reference"]
FILTERS: tuple[str, ...] = ("library", "reference")

COUNT_LEVELS = 5001
"""R of the reference's count filter (theory: docs/theory/dmft.md §7.4)."""
COUNT_PERIODIC, COUNT_CHAOTIC = 80, 2500
"""Thresholds of the count U: below 80 periodic, from 2500 chaotic, quasi-periodic between."""


def _param(ds: xr.Dataset) -> str:
    names = [d for d in ds.regime.dims if d != "direction"]
    if len(names) != 1:
        raise ValueError(f"a bifurcation diagram needs exactly one swept parameter, got {names}")
    return names[0]


def _directions(ds: xr.Dataset) -> list[xr.Dataset]:
    if "direction" in ds.dims:
        return [ds.sel(direction=d) for d in ds.direction.values]
    return [ds]


def stored_pairs(ds: xr.Dataset) -> list[str]:
    """Names ``f|g`` of the section pairs stored in a diagram dataset."""
    return [str(p) for p in ds.pair.values] if "pair" in ds.coords and "section" in ds else []


def choose_pair(
    pairs: list[str], n_features: int, component: int | None = None, pair: str | None = None
) -> tuple[int, int | None, int | None]:
    """(plotted component f, section component g, index of the pair ``f|g`` in ``pairs``) from the options
    (theory: docs/theory/dmft.md §7.1). With only ``component``: the first pair whose first component it
    is; with ``pair``: its f; both must agree. g and the index are None when no pair fits.

    Raises:
        ValueError: naming the available pairs when the choice is not among them.
    """
    if pair is not None:
        try:
            f, g = (int(x) for x in pair.split("|"))
        except ValueError:
            raise ValueError(f"a section pair is written f|g, e.g. 0|1; got {pair!r}") from None
        if component is not None and component != f:
            raise ValueError(f"component {component} is not the plotted component of the section pair {pair}")
        if pair not in pairs:
            raise ValueError(f"section pair {pair} is not stored; stored pairs: {', '.join(pairs) or 'none'}")
        return f, g, pairs.index(pair)
    f = check_component(0 if component is None else int(component), n_features)
    for i, name in enumerate(pairs):
        a, b = (int(x) for x in name.split("|"))
        if a == f:
            return f, b, i
    return f, None, None


def section_pair(ds: xr.Dataset, component: int | None = None, pair: str | None = None):
    """:func:`choose_pair` among the pairs stored in ``ds``."""
    return choose_pair(stored_pairs(ds), ds.sizes.get("feature", 1), component, pair)


def count_scale(ds: xr.Dataset) -> float:
    """Y of the count filter: the largest stored value of the observable over the whole diagram (all
    points, directions and components; the largest value, not the largest magnitude) (theory:
    docs/theory/dmft.md §7.4). Falls back to the largest magnitude when no value is positive."""
    orb = ds.orbit.values
    Y = float(np.nanmax(orb)) if np.isfinite(orb).any() else 1.0
    return Y if Y > 0 else float(np.nanmax(np.abs(orb))) or 1.0


def quantise(y: np.ndarray, Y: float, R: int = COUNT_LEVELS) -> np.ndarray:
    """⌊R(y/Y + 1)/2⌋ (theory: docs/theory/dmft.md §7.4)."""
    return np.floor(R * (np.asarray(y) / Y + 1.0) / 2.0).astype(np.int64)


def dequantise(q: np.ndarray, Y: float, R: int = COUNT_LEVELS) -> np.ndarray:
    """The centre of quantisation level q: (2(q + ½)/R − 1)·Y."""
    return (2.0 * (np.asarray(q) + 0.5) / R - 1.0) * Y


NOT_PERIODIC = -2
"""Label of the count filter for U ≥ 80 when fewer than 2500 samples are stored (quasi-periodic and
chaotic cannot be told apart by the count; both are drawn as sections)."""


def count_labels(ds: xr.Dataset, feature: int = 0, Y: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(U, label code) per point of one direction: U distinct quantised values of component ``feature``
    among the stored samples, and its label — a code of :data:`REGIMES`, or :data:`NOT_PERIODIC` for
    U ≥ 80 when fewer than 2500 samples are stored (theory: docs/theory/dmft.md §7.4)."""
    Y = count_scale(ds) if Y is None else Y
    orb = ds.orbit.values[..., feature]
    U = np.array([np.unique(quantise(o[np.isfinite(o)], Y)).size for o in orb.reshape(-1, orb.shape[-1])])
    U = U.reshape(orb.shape[:-1])
    above = REGIMES.index("chaotic") if orb.shape[-1] >= COUNT_CHAOTIC else NOT_PERIODIC
    qp = REGIMES.index("quasi_periodic") if orb.shape[-1] >= COUNT_CHAOTIC else NOT_PERIODIC
    code = np.where(U < COUNT_PERIODIC, REGIMES.index("periodic"), np.where(U < COUNT_CHAOTIC, qp, above))
    return U, code


def diagram_points(
    ds: xr.Dataset,
    feature: int = 0,
    pair: int | None = None,
    max_points: int | None = None,
    filter: Filter = "library",
    Y: float | None = None,
) -> tuple[np.ndarray, ...]:
    """(parameter, value, regime code) of the points drawn in the diagram, for one direction (theory:
    docs/theory/dmft.md §7.1, §7.4).

    Args:
        feature: plotted component f. pair: index of the stored section pair (f|g) (None: orbit samples
            only). max_points: most points drawn per parameter value (None: all). filter: ``library``
            (regime labels) or ``reference`` (count filter, with scale ``Y`` of the whole diagram).
    """
    p = _param(ds)
    xs, ys, cs = [], [], []
    periodic = {REGIMES.index("fixed_point"), REGIMES.index("periodic")}
    has_section = pair is not None and "section" in ds and ds.sizes.get("pair", 0) > pair
    if filter == "reference":
        Y = count_scale(ds) if Y is None else Y
        _, codes = count_labels(ds, feature, Y)
    elif filter == "library":
        codes = ds.regime.values.astype(int)
    else:
        raise ValueError(f"filter must be one of {FILTERS}, got {filter!r}")
    for i, value in enumerate(ds[p].values):
        code = int(codes[i])
        orb = ds.orbit.values[i, :, feature]
        orb = orb[np.isfinite(orb)]
        sec = ds.section.values[i, pair] if has_section else np.empty(0)
        sec = sec[np.isfinite(sec)]
        if filter == "reference":
            src = orb if code == REGIMES.index("periodic") or not sec.size else sec  # U < 80: every value
            assert Y is not None  # set above for the reference filter
            y = dequantise(np.unique(quantise(src, Y)), Y)
        elif code in periodic:
            y = np.unique(np.round(orb, 10))
        else:
            y = sec if sec.size else orb
        if max_points is not None:
            y = y[:max_points] if y is sec else y[-max_points:]
        xs.append(np.full(y.size, value))
        ys.append(y)
        cs.append(np.full(y.size, code))
    if not xs:
        return np.empty(0), np.empty(0), np.empty(0, int)
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(cs)


def draw_diagram(
    ax,
    ds: xr.Dataset,
    *,
    feature: int = 0,
    pair: int | None = None,
    max_points: int | None = None,
    filter: Filter = "library",
    Y: float | None = None,
    legend: bool = True,
    marker: str = ",",
    size: float = 1.0,
) -> None:
    """Draw the points of one direction on ``ax``, coloured by regime (theory: docs/theory/dmft.md §7.1)."""
    x, y, c = diagram_points(ds, feature, pair, max_points, filter, Y)
    labels = [
        *((code, name, REGIME_COLORS[name], name.replace("_", " ")) for code, name in enumerate(REGIMES)),
        (NOT_PERIODIC, "not_periodic", "#444444", f"not periodic (count ≥ {COUNT_PERIODIC})"),
    ]
    for code, _, color, text in labels:
        sel = c == code
        if sel.any():
            if marker == ",":
                ax.plot(x[sel], y[sel], ",", color=color, alpha=0.7, rasterized=True)
            else:
                ax.scatter(x[sel], y[sel], s=size, color=color, marker=marker, lw=0, rasterized=True)
            ax.plot([], [], "s", color=color, label=text)
    if legend:
        ax.legend(fontsize=7, loc="best", markerscale=1.5)


EXPONENT_COLORS = ("#000000", "#d62728", "#1f77b4", "#2ca02c")
"""λ₁ black, then red, blue, green."""


def draw_exponents(ax, ds: xr.Dataset, n: int = 4) -> None:
    """The leading Lyapunov exponents against the parameter, with 0 marked (theory: docs/theory/dmft.md §6):
    λ₁ a wide black line drawn above the others (dashed, dotted), so that it stays visible where λ₂ equals
    it (a complex pair). Values of −∞ (an exactly annihilated direction, as at β_o = 0) and the few most
    negative values are left off the scale, which follows the finite values."""
    p = _param(ds)
    ex = ds.exponents.values
    k = min(ex.shape[-1], n)
    styles = ("-", "--", ":", "-.")
    # drawn from the last to λ₁, each above the ones after it and λ₁ widest: where exponents coincide (a
    # complex pair of multipliers gives λ₁ = λ₂) λ₁ stays in view, the others dashed around it
    for i in reversed(range(k)):
        ax.plot(
            ds[p].values,
            ex[:, i],
            styles[i % len(styles)],
            lw=1.4 if i == 0 else 0.8,
            color=EXPONENT_COLORS[i % len(EXPONENT_COLORS)],
            zorder=3 + k - i,
            label=f"λ{i + 1}",
        )
    ax.axhline(0, color="k", lw=0.5, zorder=1)
    shown = ex[:, : min(ex.shape[-1], n)]
    shown = shown[np.isfinite(shown)]
    if shown.size:
        lo, hi = np.percentile(shown, 2), np.max(shown)  # degenerate points (β_o = 0) off-scale
        if hi > lo:
            ax.set_ylim(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
    ax.set_ylabel("Lyapunov exponent (per step)")
    handles, labels = ax.get_legend_handles_labels()
    order = np.argsort(labels)  # λ1 first in the legend although drawn last
    ax.legend([handles[i] for i in order], [labels[i] for i in order], fontsize=7, ncol=4)


def _degenerate(ds: xr.Dataset, f: int, g: int) -> int:
    """+1 / −1 when components f and g of the stored orbit are identical / opposite at every sample, else 0."""
    if "orbit" not in ds or f == g:
        return 0
    a, b = ds.orbit.values[..., f], ds.orbit.values[..., g]
    ok = np.isfinite(a) & np.isfinite(b)
    if not ok.any():
        return 0
    return 1 if np.array_equal(a[ok], b[ok]) else -1 if np.array_equal(a[ok], -b[ok]) else 0


def bifurcation_figure(
    ds: xr.Dataset,
    *,
    component: int | None = None,
    pair: str | None = None,
    max_points: int | None = None,
    filter: Filter = "library",
    title: str | None = None,
    fig=None,
) -> Figure:
    """The diagram (one column per direction) with the exponents below (theory: docs/theory/dmft.md §7.1–7.2).

    Args:
        component: plotted component (default: 0, or the first component of ``pair``). pair: section pair
            ``f|g`` among the stored ones. max_points: most points per parameter value (None: all stored).
            filter: ``library`` or ``reference`` (the published count filter). title: instead of the
            configuration's. fig: a Figure or SubFigure to draw into (default: a new Figure).
    """
    p = _param(ds)
    f, g, idx = section_pair(ds, component, pair)
    dirs = _directions(ds)
    has_exp = "exponents" in ds
    nrows = 2 if has_exp else 1
    fig = figure(fig, figsize=(max(9, 7 * len(dirs)), 3.2 * nrows + 1.0))
    axes = fig.subplots(nrows, len(dirs), squeeze=False, sharex=True)
    Y = count_scale(ds) if filter == "reference" else None
    label = ds.attrs.get("observable", "mo_se")
    for j, d in enumerate(dirs):
        ax = axes[0, j]
        draw_diagram(ax, d, feature=f, pair=idx, max_points=max_points, filter=filter, Y=Y)
        ax.set_ylabel(f"{label}[{f}]")
        where = "cold starts" if "direction" not in ds.dims else f"continuation {d.direction.values!s}"
        if g is None:
            drawn = "every stored value"
        else:
            drawn = f"periodic: every value; other regimes: the section at {label}[{g}] = 0"
            deg = _degenerate(ds, f, g)
            if deg:
                drawn += f" (degenerate: {label}[{f}] ≡ {'' if deg > 0 else '−'}{label}[{g}])"
        ax.set_title(f"{where}; {filter} filter; {drawn}", fontsize=8)
        if has_exp:
            draw_exponents(axes[1, j], d)
        axes[-1, j].set_xlabel(param_label(ds, p))
    suptitle(fig, ds, title or config_title(ds))
    return root(fig)


def sections_figure(ds: xr.Dataset, *, fig=None) -> Figure:
    """Every stored zero-plane section against the parameter (theory: docs/theory/dmft.md §7.1); a pair whose
    two components are identical or opposite at every step (a degenerate section) is marked so.

    Args:
        fig: a Figure or SubFigure to draw into (default: a new Figure)."""
    p = _param(ds)
    dirs = _directions(ds)
    pairs = list(ds.pair.values)
    label = ds.attrs.get("observable", "mo_se")
    fig = figure(fig, figsize=(7 * len(dirs), 2.2 * len(pairs) + 1.0))
    axes = fig.subplots(len(pairs), len(dirs), squeeze=False, sharex=True)
    for j, d in enumerate(dirs):
        for i, name in enumerate(pairs):
            sec = d.section.values[:, i]
            xx = np.broadcast_to(d[p].values[:, None], sec.shape)
            ok = np.isfinite(sec)
            ax = axes[i, j]
            ax.plot(xx[ok], sec[ok], ",", color="k", rasterized=True)
            f, g = (int(v) for v in str(name).split("|"))
            ax.set_ylabel(f"{label}[{f}] at {label}[{g}] = 0", fontsize=8)
            deg = _degenerate(d, f, g)
            if deg:
                ax.set_title(
                    f"degenerate: {label}[{f}] ≡ {'' if deg > 0 else '−'}{label}[{g}] at every step", fontsize=8
                )
            if not ok.any():
                ax.text(0.5, 0.5, "no crossings", transform=ax.transAxes, ha="center", va="center", fontsize=8)
        axes[-1, j].set_xlabel(param_label(ds, p))
    suptitle(fig, ds, "zero-plane sections · " + config_title(ds))
    return root(fig)

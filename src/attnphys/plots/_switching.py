"""Switching figures: the finite network's escape times between coexisting attractors against N, with the fitted
slope of ln τ beside the least actions ΔS, and the least-action path in the plane of the two attractors and the
basin boundary (theory: docs/theory/switching.md §2, §2.1, §5)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from attnphys.errors import InputError
from attnphys.plots._common import config_title, figure, root, suptitle

_MARKERS = {"gaussian": "o", "binomial": "s"}


def _escape_panel(ax, ds: xr.Dataset) -> None:
    ns = ds["size"].values.astype(float)
    for i in ds.attractor.values:
        a = ds.sel(attractor=i)
        c = f"C{int(i) % 10}"
        tau = a.escape_time.values.astype(float)
        lo, hi = a.escape_time_low.values.astype(float), a.escape_time_high.values.astype(float)
        k = a.escapes.values.astype(float)
        label = f"{int(i)}: period {int(a.period)} → {int(ds.period.values[int(a.target)])}"
        seen = np.isfinite(tau)
        top = np.where(np.isfinite(hi), hi, tau)
        ax.errorbar(
            ns[seen],
            tau[seen],
            yerr=[tau[seen] - lo[seen], top[seen] - tau[seen]],
            fmt="o",
            color=c,
            capsize=3,
            label=label,
        )
        if (~seen).any():  # no escape: the interval's lower end is a lower bound on τ
            ax.plot(ns[~seen], lo[~seen], "^", color=c, mfc="none", label=f"{int(i)}: no escape (τ above)")
        ok = seen & (k > 0)
        if ok.sum() >= 2 and np.isfinite(float(a.slope)):  # the weighted fit passes through the weighted centroid
            xm = float(np.sum(k[ok] * ns[ok]) / np.sum(k[ok]))
            ym = float(np.sum(k[ok] * np.log(tau[ok])) / np.sum(k[ok]))
            x = np.linspace(ns[ok].min(), ns[ok].max(), 50)
            ax.plot(x, np.exp(ym + float(a.slope) * (x - xm)), "-", color=c, lw=1, label=f"{int(i)}: fit of ln τ")
            for w in ds.law.values:
                dS = float(a.action.sel(law=w))
                if np.isfinite(dS):
                    ax.plot(
                        x,
                        np.exp(ym + dS * (x - xm)),
                        ":" if w == "gaussian" else "--",
                        color=c,
                        lw=1,
                        label=f"{int(i)}: slope ΔS ({w})",
                    )
    ax.set_yscale("log")
    ax.set(xlabel="N (semantic bits)", ylabel="mean escape time τ (steps)")
    ax.set_title("escape times (95% intervals) and the slope of ln τ", fontsize=9)
    ax.legend(fontsize=6.5, frameon=False)


def _slope_panel(ax, ds: xr.Dataset) -> None:
    idx = ds.attractor.values.astype(float)
    for j, w in enumerate(ds.law.values):
        ax.plot(
            idx + 0.1 * j,
            ds.action.sel(law=w).values,
            _MARKERS.get(str(w), "D"),
            ls="none",
            color=f"C{j}",
            label=f"ΔS ({w})",
        )
    s, lo, hi = (ds[v].values.astype(float) for v in ("slope", "slope_low", "slope_high"))
    ok = np.isfinite(s)
    if ok.any():
        ax.errorbar(
            idx[ok] - 0.1,
            s[ok],
            yerr=[s[ok] - lo[ok], hi[ok] - s[ok]],
            fmt="x",
            color="k",
            capsize=3,
            label="slope of ln τ (95%)",
        )
    ax.axhline(0.0, color="0.6", lw=0.6)
    ax.set_xticks(idx, [f"{int(i)}: period {int(p)}" for i, p in zip(idx, ds.period.values, strict=True)])
    ax.set(xlabel="attractor", ylabel="per semantic bit")
    ax.set_title("least action ΔS beside the measured slope", fontsize=9)
    ax.legend(fontsize=6.5, frameon=False)


def _options(ds: xr.Dataset) -> dict:
    """The analysis' options stored with the result (a JSON text; empty when absent or unreadable)."""
    import json

    o = ds.attrs.get("options", "{}")
    try:
        o = json.loads(o) if isinstance(o, str) else o
    except json.JSONDecodeError:
        return {}
    return o if isinstance(o, dict) else {}


def switching_figure(ds: xr.Dataset, *, fig=None) -> Figure:
    """Escapes between the coexisting attractors (theory: docs/theory/switching.md §2, §5).

    Left: per attractor the mean escape time τ̂ against N (log scale) with its chi-squared 95% interval (open
    triangles: no run escaped, the interval's lower end), the weighted fit of ln τ̂ against N (solid) and, through
    the same point, lines of slope ΔS under each law (τ ≈ K e^{N ΔS}). Right: per attractor the least actions ΔS
    beside the fitted slope and its 95% interval, where the two can be read together.

    Args:
        ds: dataset of :func:`attnphys.dmft.switching` (``attnphys dmft switching``). fig: a Figure or
            SubFigure to draw into (default: new).
    """
    fig = figure(fig, figsize=(12, 4.8))
    axes = fig.subplots(1, 2)
    _escape_panel(axes[0], ds)
    _slope_panel(axes[1], ds)
    runs = _options(ds).get("walkers")
    suptitle(fig, ds, config_title(ds) + (f"; {runs} runs per size" if runs else ""))
    return root(fig)


PATH_VARIABLES = ("orbit", "path", "step_action", "crossing", "saddle", "saddle_period", "crossing_step")
"""The variables of the switching result that :func:`switching_path_figure` reads, beside the barriers'."""


def _checked_path_result(ds, law) -> list[str]:
    """The laws to draw, after checking that ``ds`` holds the paths (InputError naming ``ds`` or ``law``)."""
    if not isinstance(ds, xr.Dataset):
        raise InputError(f"must be the dataset of attnphys.dmft.switching, got {type(ds).__name__}", "ds")
    missing = [v for v in (*PATH_VARIABLES, "action", "target", "period", "horizon") if v not in ds]
    if missing or "law" not in ds.coords:
        raise InputError(
            "must be the dataset of attnphys.dmft.switching with the least-action paths (missing: "
            + ", ".join(missing or ["the law coordinate"])
            + "); results of attnphys 0.4.5 and earlier hold none: run the analysis again",
            "ds",
        )
    laws = [str(w) for w in ds.law.values]
    if law is None:
        return laws
    if not isinstance(law, str) or law not in laws:
        raise InputError(f"must be one of the result's laws {laws}, got {law!r}", "law")
    return [law]


def path_plane(ds: xr.Dataset, attractor: int, law: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """(origin, e₁, e₂, what e₂ points to) of the plane the path of ``attractor`` under ``law`` is drawn in
    (theory: docs/theory/switching.md §2.1): the origin the centre (mean over the orbit) c_a of the attractor,
    e₁ the unit vector towards the centre c_b of its target, e₂ the unit part orthogonal to e₁ of the
    direction from c_a to the path's boundary crossing — or, without a crossing, to the point of the path
    where its step action is largest; where that point lies on the line of the centres, the leading
    principal direction orthogonal to e₁ of the path and both orbits."""
    a = ds.sel(attractor=attractor)
    b = ds.sel(attractor=int(a.target))
    ca = np.nanmean(a.orbit.values, axis=0)
    cb = np.nanmean(b.orbit.values, axis=0)
    e1 = cb - ca
    e1 = e1 / np.linalg.norm(e1)
    c = a.sel(law=law)
    X = c.path.values[: int(c.horizon) + 1]
    if np.all(np.isfinite(c.crossing.values)):
        q, what = c.crossing.values, "the boundary crossing"
    else:
        r = c.step_action.values
        q, what = X[int(np.nanargmax(r))] if np.any(np.isfinite(r)) else X[len(X) // 2], "the path's costliest step"
    e2 = (q - ca) - float((q - ca) @ e1) * e1
    if np.linalg.norm(e2) <= 1e-9 * np.linalg.norm(cb - ca):
        P = np.concatenate([X, a.orbit.values, b.orbit.values])
        P = P[np.all(np.isfinite(P), axis=1)] - ca
        P = P - np.outer(P @ e1, e1)
        e2, what = np.linalg.svd(P - P.mean(0), full_matrices=False)[2][0], "the principal direction"
    return ca, e1, e2 / np.linalg.norm(e2), what


def _path_panel(ax, ds: xr.Dataset, attractor: int, law: str) -> None:
    a = ds.sel(attractor=attractor)
    j = int(a.target)
    c = a.sel(law=law)
    o, e1, e2, what = path_plane(ds, attractor, law)

    def uv(x):
        x = np.atleast_2d(np.asarray(x, float))
        x = x[np.all(np.isfinite(x), axis=1)]
        return (x - o) @ e1, (x - o) @ e2

    for k, mk, col in ((attractor, "o", "C0"), (j, "s", "C1")):
        u, v = uv(ds.orbit.sel(attractor=k).values)
        ax.plot(u, v, mk, ls="none", ms=3.5, color=col, label=f"attractor {k} (period {int(ds.period.values[k])})")
    T = int(c.horizon)
    u, v = uv(c.path.values[: T + 1])
    ax.plot(u, v, "-", color="k", lw=0.9, marker=".", ms=3, label=f"least-action path ({T} steps)")
    ax.plot(u[:1], v[:1], ">", color="k", ms=6, ls="none", label="path start")
    q = int(c.saddle_period)
    if q > 0:
        su, sv = uv(c.saddle.values[:q])
        ax.plot(su, sv, "*", color="C3", ms=7, ls="none", label=f"edge state (period-{q} saddle)")
    if np.all(np.isfinite(c.crossing.values)):
        cu, cv = uv(c.crossing.values)
        ax.plot(cu, cv, "X", color="C2", ms=8, ls="none", label=f"boundary crossing (step {int(c.crossing_step)})")
    ax.set(xlabel=f"along centre {attractor} → centre {j} (class means)", ylabel=f"towards {what}, orthogonal")
    ax.set_title(f"{attractor} → {j}, {law}: ΔS = {float(c.action):.3g}", fontsize=9)
    ax.legend(fontsize=6.5, frameon=False)


def _distance(X: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """The distance of each state of X (n, D) to the nearest point of the orbit Z (p, D; NaN rows ignored)."""
    Z = Z[np.all(np.isfinite(Z), axis=1)]
    return np.min(np.linalg.norm(X[:, None] - Z[None], axis=-1), axis=1)


def _distance_panel(ax, ds: xr.Dataset, attractor: int, laws: list[str]) -> None:
    a = ds.sel(attractor=attractor)
    j = int(a.target)
    za, zb = a.orbit.values, ds.orbit.sel(attractor=j).values
    for k, w in enumerate(laws):
        c = a.sel(law=w)
        X = c.path.values[: int(c.horizon) + 1]
        t = np.arange(X.shape[0])
        col = f"C{k}"
        ax.plot(t, _distance(X, za), "-", color=col, lw=1, label=f"{w}: to attractor {attractor}")
        ax.plot(t, _distance(X, zb), "--", color=col, lw=1, label=f"{w}: to attractor {j}")
        if int(c.crossing_step) >= 0:
            ax.axvline(int(c.crossing_step) + 0.5, color=col, lw=0.7, ls=":", label=f"{w}: boundary crossed")
    ax.set_yscale("symlog", linthresh=1e-4)
    ax.set_ylim(bottom=0.0)
    ax.set(xlabel="step t of the path", ylabel="distance to the orbit (class means)")
    ax.set_title(f"{attractor} → {j}: distance of the path to each orbit", fontsize=9)
    ax.legend(fontsize=6.5, frameon=False)


def switching_path_figure(ds: xr.Dataset, *, law: str | None = None, fig=None) -> Figure:
    """The least-action paths between the coexisting attractors, each in the plane of the two attractors and
    the basin boundary (theory: docs/theory/switching.md §2.1).

    One row per attractor, one panel per law: the class states of the attractor's orbit and of its target's,
    the least-action path from the first to the second (its start marked), the state where the path crosses
    the basin boundary and the edge state tracked from there (the saddle on the boundary, where it is
    periodic), all projected onto the plane through the two orbits' centres and the crossing
    (:func:`path_plane`): the abscissa along the line of the centres, the ordinate orthogonal to it. The last
    panel of the row: the distance of the path to each orbit against its step, the crossing marked (the
    driven orbits wind through the whole window, and the plane alone shows the path winding with them).

    Args:
        ds: dataset of :func:`attnphys.dmft.switching` (``attnphys dmft switching``), with its paths.
        law: one law of the result to draw (default: each). fig: a Figure or SubFigure to draw into
            (default: new).

    Raises:
        InputError: naming ``ds`` (not a switching result, or one without the paths) or ``law`` (not one of
            its laws).
    """
    laws = _checked_path_result(ds, law)
    att = [int(i) for i in ds.attractor.values]
    fig = figure(fig, figsize=(5.2 * (len(laws) + 1), 4.4 * len(att)))
    axes = np.asarray(fig.subplots(len(att), len(laws) + 1, squeeze=False))
    for r, i in enumerate(att):
        for k, w in enumerate(laws):
            _path_panel(axes[r, k], ds, i, w)
        _distance_panel(axes[r, -1], ds, i, laws)
    suptitle(fig, ds, config_title(ds) + "; least-action paths in the plane of the attractors and the boundary")
    return root(fig)

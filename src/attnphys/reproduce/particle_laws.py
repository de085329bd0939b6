"""More of the particle flow's quantitative predictions against simulation, one figure each (theory:
docs/theory/particles.md §10–12): the lost-in-the-middle profile of causal attention with an ALiBi slope,
the staircase of plateau energies, and the decay laws of the normalization placements."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from attnphys.reproduce._base import AbstractFigure, Work, settings_of

_PLAIN = 1.2e6
"""Point-steps per second of the development machine (as in :mod:`attnphys.reproduce.particles`)."""


def _work(seconds: float) -> Work:
    return Work(plain=seconds * _PLAIN, compiles=1)


class MiddleFigure(AbstractFigure):
    """The influence of each position on the last token of a causal flow with an ALiBi slope: the kinetic
    Green's function against the particle flow, the U shape until the critical time, and t_c over β (theory:
    docs/theory/particles.md §12)."""

    name = "particles-middle"
    shows = "lost in the middle: the influence of each position on the last token of a causal flow with an ALiBi slope, the particle flow against the kinetic Green's function, the U shape until t_c and t_c over β ([particles §12](../theory/particles.md#12-causal-attention-with-an-alibi-slope-the-lost-middle))"
    full_run = "β = 1, λ = 1, 33 positions × 10 angles, 4 modes in the flow, 20 in the profile; t_c for β ∈ [0.2, 4], λ ∈ {0.5, 1, 2}"
    title = "lost in the middle: influence of each position on the last token, causal attention with ALiBi"
    source = "arXiv 2605.09213, the U-shaped profile and its critical time"

    def settings(self, quick: bool = False) -> dict[str, Any]:
        full = dict(
            beta=1.0, alibi=1.0, needle=8.0, modes=20, times=[0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 5.0],
            flow_times=[0.5, 1.0, 2.0], positions=32, particles=10, flow_modes=4,
            betas=list(np.round(np.linspace(0.2, 4.0, 39), 3)), alibis=[0.5, 1.0, 2.0],
        )  # fmt: skip
        if quick:
            full.update(positions=16, flow_times=[0.5, 2.0])
        return full

    def work(self, quick: bool = False) -> Work:
        return _work(8.0 if quick else 15.0)

    def compute(self, settings: dict[str, Any], progress: bool = True) -> xr.Dataset:
        from attnphys.clouds import causal_influence, critical_time, middle_profile

        s = settings
        prof = middle_profile(s["beta"], s["times"], alibi=s["alibi"], needle=s["needle"], modes=s["modes"])
        flow = causal_influence(
            s["beta"], s["flow_times"], alibi=s["alibi"], positions=s["positions"], particles=s["particles"],
            needle=s["needle"], modes=s["flow_modes"],
        )  # fmt: skip
        flow = flow.rename(
            time="flow_time", position="flow_position", influence="flow_influence", influence_predicted="flow_predicted"
        )
        tc = np.stack([critical_time(s["betas"], alibi=a, needle=s["needle"], modes=s["modes"]) for a in s["alibis"]])
        ds = xr.merge([prof, flow], combine_attrs="drop")
        ds["critical_times"] = (("alibi", "beta"), tc)
        ds = ds.assign_coords(alibi=s["alibis"], beta=s["betas"])
        for v in prof.variables:
            ds[v].attrs.update(prof[v].attrs)
        for v in flow.data_vars:
            ds[v].attrs.update(flow[v].attrs)
        ds["flow_time"].attrs.update(long_name="time of the particle flow", units="1")
        ds["flow_position"].attrs.update(long_name="relative position s_k = (k + 1/2)/N of the source", units="1")
        ds["critical_times"].attrs["long_name"] = "critical time t_c at which the U shape ends"
        ds["alibi"].attrs["long_name"] = "ALiBi slope lambda"
        ds["beta"].attrs["long_name"] = "inverse temperature beta"
        return self.stamp(ds, s, figure=self.name, source=self.source)

    def figure(self, ds: xr.Dataset, **_: Any):
        from attnphys.plots import new_figure

        st = settings_of(ds)
        fig = new_figure((13, 4.2))
        a, b, c = fig.subplots(1, 3)
        for i, t in enumerate(ds.flow_time.values):
            sub = ds.sel(flow_time=t)
            a.plot(sub.flow_position, sub.flow_predicted, "-", color=f"C{i}", label=f"t = {t:g} (kinetic)")
            a.plot(sub.flow_position, sub.flow_influence, "o", color=f"C{i}", ms=3)
        a.set_xlabel("position s of the source token")
        a.set_ylabel("influence on the last token")
        a.set_title(f"particle flow (dots, N = {st['positions']}) vs Green's function")
        a.legend(fontsize=8)
        tc = float(ds.critical_time)
        for i, t in enumerate(ds.time.values):
            p = ds.influence.sel(time=t)
            p = (p - p.min()) / (p.max() - p.min())
            b.plot(ds.position, p, color=f"C{i}", ls="-" if t < tc else "--", label=f"t = {t:g}")
            b.plot([float(ds.minimum_position.sel(time=t))], [0.0], "v", color=f"C{i}")
        b.set_xlabel("position s")
        b.set_ylabel("influence (scaled to [0, 1])")
        b.set_title(f"β = {st['beta']:g}, λ = {st['alibi']:g}: U shape until t_c = {tc:.3f}")
        b.legend(fontsize=7, ncol=2)
        for al in ds.alibi.values:
            c.semilogy(ds.beta, ds.critical_times.sel(alibi=al), label=f"λ = {al:g}")
        c.set_xlabel("β")
        c.set_ylabel("critical time t_c")
        c.set_title("end of the U shape")
        c.legend(fontsize=8)
        return fig

    def caption(self, ds: xr.Dataset) -> str:
        s = settings_of(ds)
        mins = ", ".join(
            f"t={t:g}: {m:.2f}" + ("" if u else " (no U)")
            for t, m, u in zip(ds.time.values, ds.minimum_position.values, ds.u_shaped.values)
        )
        return (
            f"{self.source}: {self.title}.\n"
            f"Left: {s['positions']} + 1 positions × {s['particles']} angles on the circle, β = {s['beta']:g}, "
            f"λ = {s['alibi']:g}, a needle of width π/{s['needle']:g} in {s['flow_modes']} modes; the flow's linear "
            f"response (jax.jacfwd through the solver) against the kinetic Green's function: largest distance "
            f"{float(ds.deviation):.4f} of the profile's maximum (O(1/N)).\n"
            f"Middle: the profile with {s['modes']} modes; minimum position {mins}; critical time "
            f"t_c = {float(ds.critical_time):.6f}.\n"
            f"Right: t_c(β) for λ ∈ {s['alibis']} (λ = 1: t_c(1, 2, 3) = "
            + ", ".join(f"{v:.6f}" for v in ds.critical_times.sel(alibi=1.0).interp(beta=[1.0, 2.0, 3.0]).values)
            + ").\n"
        )


class StaircaseFigure(AbstractFigure):
    """Plateau energies of clustering flows against the cluster formula, and plateau lengths against the
    merge timescale e^{β(1 − c)} of the closest pair (theory: docs/theory/particles.md §10)."""

    name = "particles-staircase"
    shows = "plateau energies of clustering flows against the cluster formula, and plateau lengths against the merge timescale $e^{\\beta(1 - c)}$ of the closest pair ([particles §10](../theory/particles.md#10-staircase-energy-and-merge-order))"
    full_run = "SA, β = 6, 32 uniform tokens on the circle, 6 starts, t ≤ 600"
    title = "staircase: plateau energies and the merge timescale of the closest pair"
    source = "arXiv 2410.06833 (plateau energies) and arXiv 2509.25040 (merge timescale)"

    def settings(self, quick: bool = False) -> dict[str, Any]:
        if quick:
            return dict(beta=6.0, tokens=24, dim=2, t_max=120.0, saves=241, seeds=[0])
        return dict(beta=6.0, tokens=32, dim=2, t_max=600.0, saves=1201, seeds=[0, 1, 2, 3, 4, 5])

    def work(self, quick: bool = False) -> Work:
        return _work(10.0 if quick else 60.0)

    def compute(self, settings: dict[str, Any], progress: bool = True) -> xr.Dataset:
        from attnphys.clouds import staircase

        s = settings
        parts = [
            staircase(
                s["beta"], tokens=s["tokens"], dim=s["dim"], t_max=s["t_max"], saves=s["saves"], seed=int(seed),
                progress=progress,
            ).reset_coords(drop=True)
            for seed in s["seeds"]
        ]  # fmt: skip
        ds = xr.concat(parts, dim="seed", join="outer", combine_attrs="drop")
        ds = ds.assign_coords(seed=s["seeds"])
        for v in parts[0].variables:
            ds[v].attrs.update(parts[0][v].attrs)
        ds["seed"].attrs["long_name"] = "seed of the uniform start"
        return self.stamp(ds, s, figure=self.name, source=self.source)

    def figure(self, ds: xr.Dataset, **_: Any):
        from attnphys.plots import new_figure

        fig = new_figure((10, 4.2))
        a, b = fig.subplots(1, 2)
        e, p = ds.energy.values.ravel(), ds.energy_predicted.values.ravel()
        ok = np.isfinite(e) & np.isfinite(p)
        a.plot(p[ok], e[ok], "o", ms=4)
        lim = [float(np.min(p[ok])), float(np.max(p[ok]))]
        a.plot(lim, lim, "k-", lw=0.8, label="measured = predicted")
        a.set_xlabel("plateau energy, cluster formula")
        a.set_ylabel("plateau energy, flow")
        a.set_title("every plateau of every start")
        a.legend(fontsize=8)
        ts, ln, cm = ds.timescale.values.ravel(), ds.length.values.ravel(), ds.closest_merged.values.ravel()
        for val, mk, lab in ((1, "o", "the closest pair merged next"), (0, "x", "another pair merged")):
            m = (cm == val) & np.isfinite(ts) & np.isfinite(ln)
            b.loglog(ts[m], ln[m], mk, label=lab)
        b.set_xlabel("e^{β(1 − c)}, c = largest cosine between clusters")
        b.set_ylabel("plateau length")
        b.set_title("merge timescale")
        b.legend(fontsize=8)
        return fig

    def caption(self, ds: xr.Dataset) -> str:
        s = settings_of(ds)
        e, p = ds.energy.values, ds.energy_predicted.values
        ok = np.isfinite(e) & np.isfinite(p)
        rel = float(np.max(np.abs(e[ok] / p[ok] - 1)))
        cm = ds.closest_merged.values
        m = cm == 1
        ratio = ds.length.values[m] / ds.timescale.values[m]
        return (
            f"{self.source}: {self.title}.\n"
            f"SA, identity weights, β = {s['beta']:g}, {s['tokens']} uniform tokens on S^{s['dim'] - 1}, seeds "
            f"{s['seeds']}, t ≤ {s['t_max']:g}. Largest relative distance of a plateau energy to the cluster formula: "
            f"{rel:.1e} over {int(ok.sum())} plateaus. Single merges joining the closest pair: {int(m.sum())} of "
            f"{int(np.sum(cm >= 0))}; plateau length / e^(β(1 − c)) for those: median "
            f"{float(np.median(ratio)) if ratio.size else float('nan'):.2f}, range "
            f"[{float(np.min(ratio)) if ratio.size else float('nan'):.2f}, "
            f"{float(np.max(ratio)) if ratio.size else float('nan'):.2f}].\n"
        )


class NormalizationFigure(AbstractFigure):
    """The collapse 1 − ρ(t) of an equiangular cloud under six normalization placements, with the fitted and
    predicted decay laws (theory: docs/theory/particles.md §11)."""

    name = "particles-placements"
    shows = "the collapse 1 − ρ(t) of an equiangular cloud under six normalization placements with the fitted and predicted decay laws ([particles §11](../theory/particles.md#11-normalization-placements-as-speed-factors))"
    full_run = "SA, β = 1, 6 tokens, t ≤ 4000, geometric save times"
    title = "normalization placements as speed factors: decay of 1 − ρ and its law"
    source = "arXiv 2510.22026, normalization as speed regulation"

    def settings(self, quick: bool = False) -> dict[str, Any]:
        if quick:
            return dict(beta=1.0, tokens=6, t_max=4000.0, saves=300, dynamics="sa", fit_range=[1e-9, 1e-3])
        return dict(beta=1.0, tokens=6, t_max=4000.0, saves=800, dynamics="sa", fit_range=[1e-10, 1e-3])

    def work(self, quick: bool = False) -> Work:
        return _work(30.0 if quick else 45.0)

    def compute(self, settings: dict[str, Any], progress: bool = True) -> xr.Dataset:
        from attnphys.clouds import normalization_decay

        s = settings
        ds = normalization_decay(
            s["beta"], tokens=s["tokens"], t_max=s["t_max"], saves=s["saves"], dynamics=s["dynamics"],
            fit_range=tuple(s["fit_range"]), spacing="log", simulate=False,
        )  # fmt: skip
        return self.stamp(ds, s, figure=self.name, source=self.source)

    def figure(self, ds: xr.Dataset, **_: Any):
        from attnphys.plots import new_figure

        fig = new_figure((7.5, 4.8))
        ax = fig.subplots()
        t = ds.time.values[1:]
        for i, pl in enumerate(ds.placement.values):
            sub = ds.sel(placement=pl)
            law = str(sub.law.values)
            unit = "rate" if law == "exponential" else "exponent"
            ax.loglog(
                t, np.where(sub.gap.values[1:] > 1e-13, sub.gap.values[1:], np.nan), color=f"C{i}",
                label=f"{pl}: {unit} {float(sub.fitted):.4f} (predicted {float(sub.predicted):g})",
            )  # fmt: skip
        ax.set_ylim(1e-14, 2)
        ax.set_xlabel("t")
        ax.set_ylabel("1 − ρ(t)")
        ax.set_title("equiangular cloud, six placements (reduced equations)")
        ax.legend(fontsize=8)
        return fig

    def caption(self, ds: xr.Dataset) -> str:
        s = settings_of(ds)
        rows = ", ".join(
            f"{pl} ({law}) {f:.4f} ± {h:.4f} vs {p:g}"
            for pl, law, f, h, p in zip(
                ds.placement.values, ds.law.values, ds.fitted.values, ds.fitted_halfwidth.values, ds.predicted.values
            )
        )
        return (
            f"{self.source}: {self.title}.\n"
            f"{s['dynamics'].upper()}, β = {s['beta']:g}, {s['tokens']} equiangular tokens from cosine 0, t ≤ "
            f"{s['t_max']:g}; fit over {s['fit_range'][0]:g} < 1 − ρ < {s['fit_range'][1]:g} (95 % intervals): "
            f"{rows}.\n"
        )


class CausalClustersFigure(AbstractFigure):
    """Metastable clusters of causal attention against the Rényi centers of the start: the cluster count over
    time beside each start's Rényi count, and the first plateau's count against the Rényi count and the
    parking law c_R 2π/δ over β (theory: docs/theory/particles.md §13)."""

    name = "particles-causal"
    shows = "causal attention without positional bias: the cluster count over time beside each start's Rényi centers, and the first metastable plateau's count against the Rényi count and the parking law c_R 2π/δ over β ([particles §13](../theory/particles.md#13-causal-attention-without-positional-bias-clusters-and-renyi-parking))"
    full_run = "SA, Q = K = V = I, 200 uniform tokens on the circle, 24 starts per β ∈ {16, 32, 64, 128, 256}, t ≤ 100"
    title = "causal attention: first metastable clusters = Renyi centers of the start"
    source = "arXiv 2411.04990, Renyi parking and the metastable clusters of causal attention"

    def settings(self, quick: bool = False) -> dict[str, Any]:
        if quick:
            return dict(betas=[16.0, 64.0], show=64.0, tokens=200, samples=8, t_max=60.0, saves=61, seed=0)
        return dict(
            betas=[16.0, 32.0, 64.0, 128.0, 256.0], show=64.0, tokens=200, samples=24, t_max=100.0, saves=101, seed=0
        )

    def work(self, quick: bool = False) -> Work:
        return _work(6.0 if quick else 20.0)

    def compute(self, settings: dict[str, Any], progress: bool = True) -> xr.Dataset:
        from attnphys.clouds import causal_clusters

        s = settings
        ds = causal_clusters(
            s["betas"], tokens=s["tokens"], samples=s["samples"], t_max=s["t_max"], saves=s["saves"], seed=s["seed"],
            progress=progress,
        )  # fmt: skip
        return self.stamp(ds, s, figure=self.name, source=self.source)

    def figure(self, ds: xr.Dataset, **_: Any):
        from attnphys.plots import new_figure

        st = settings_of(ds)
        fig = new_figure((11, 4.2))
        a, b = fig.subplots(1, 2)
        sub = ds.sel(beta=st["show"])
        for k in range(min(4, sub.sizes["sample"])):
            a.plot(sub.time, sub.counts.isel(sample=k), color=f"C{k}", lw=1.2)
            a.axhline(int(sub.renyi.isel(sample=k)), color=f"C{k}", ls="--", lw=0.8)
        a.set_ylim(0, 2.5 * float(sub.renyi.max()))
        a.set_xlabel("time t")
        a.set_ylabel("clusters")
        a.set_title(f"β = {st['show']:g}: clusters (solid) and the start's Rényi centers (dashed)")
        beta = ds.beta.values
        has = ds.clusters >= 0
        b.errorbar(beta, ds.clusters.where(has).mean("sample"), yerr=ds.clusters.where(has).std("sample"), fmt="o",
                   label="first plateau (mean ± sd)")  # fmt: skip
        b.plot(beta, ds.renyi.mean("sample"), "s", mfc="none", label="Rényi centers, δ = 4/√β (mean)")
        fine = np.geomspace(beta.min(), beta.max(), 100)
        b.plot(fine, 0.7475979202534114 * 2 * np.pi * np.sqrt(fine) / 4, "k-", lw=0.8, label="parking law c_R 2π/δ")
        b.set_xscale("log")
        b.set_xticks(beta, [f"{v:g}" for v in beta], minor=False)
        b.minorticks_off()
        b.set_xlabel("β")
        b.set_ylabel("clusters")
        b.set_title(f"{st['tokens']} uniform tokens on the circle, {st['samples']} starts per β")
        b.legend(fontsize=8)
        return fig

    def caption(self, ds: xr.Dataset) -> str:
        s = settings_of(ds)
        rows = "; ".join(
            f"β = {b:g}: {float(c):.2f} vs {float(r):.2f} (difference {float(d):+.2f} [{float(lo):+.2f}, {float(hi):+.2f}])"
            for b, c, r, d, lo, hi in zip(
                ds.beta.values, ds.clusters.where(ds.clusters >= 0).mean("sample").values,
                ds.renyi.mean("sample").values, ds.difference.values, ds.difference_low.values,
                ds.difference_high.values,
            )
        )  # fmt: skip
        return (
            f"{self.source}: {self.title}.\n"
            f"Causal SA with Q = K = V = I, {s['tokens']} uniform tokens on the circle in causal order, "
            f"{s['samples']} starts per β, t ≤ {s['t_max']:g}. First-plateau clusters vs Rényi centers (means, "
            f"95 % t interval of the mean difference): {rows}.\n"
        )


PARTICLE_LAW_FIGURES = (MiddleFigure(), StaircaseFigure(), NormalizationFigure(), CausalClustersFigure())
"""The figures of the particle flow's theory added to ``attnphys reproduce`` beside :data:`PARTICLE_FIGURES`."""

__all__ = ["PARTICLE_LAW_FIGURES", "CausalClustersFigure", "MiddleFigure", "NormalizationFigure", "StaircaseFigure"]

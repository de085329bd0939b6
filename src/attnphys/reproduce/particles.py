"""The particle flow's quantitative predictions against simulation, one figure each (theory:
docs/theory/particles.md §7–9): the first cluster count of near-uniform starts, equiangular collapse with the
predicted boundary of the (β, t) diagram, and critical attention scaling for long contexts."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from attnphys.reproduce._base import AbstractFigure, Work, settings_of

_PLAIN = 1.2e6
"""Point-steps per second of the development machine (:data:`attnphys.reproduce.timing.DEFAULT`): run times
measured there are stated as work in these units, so that the estimates scale with the calibrated speed."""


def _work(seconds: float) -> Work:
    return Work(plain=seconds * _PLAIN, compiles=1)


class ClusterCountFigure(AbstractFigure):
    """First cluster count of near-uniform starts against the fastest-growing mode k*(β), d = 2 and d = 3
    (theory: docs/theory/particles.md §7)."""

    name = "particles-clusters"
    shows = "first cluster count of near-uniform starts against the fastest-growing mode k*(β) ([particles §7](../theory/particles.md#7-instability-of-the-uniform-cloud))"
    full_run = "SA, 200 tokens, 12 starts per β ∈ {1, 2, 3, 5, 8, 12, 20}, d = 2 and 3"
    title = "first cluster count of near-uniform starts vs the fastest-growing mode k*(β)"
    source = "arXiv 2410.23228, Theorem 4.3 and Fig. 4"

    def settings(self, quick: bool = False) -> dict[str, Any]:
        if quick:
            return dict(betas=[1.0, 5.0], dims=[2, 3], tokens=200, samples=4, noise=1e-3, horizon=30.0, seed=0)
        return dict(
            betas=[1.0, 2.0, 3.0, 5.0, 8.0, 12.0, 20.0], dims=[2, 3], tokens=200, samples=12, noise=1e-3,
            horizon=30.0, seed=0,
        )  # fmt: skip

    def work(self, quick: bool = False) -> Work:
        return _work(15.0 if quick else 80.0)

    def compute(self, settings: dict[str, Any], progress: bool = True) -> xr.Dataset:
        from attnphys.clouds import first_cluster_count

        s = settings
        parts = [
            first_cluster_count(
                s["betas"], dim=d, tokens=s["tokens"], samples=s["samples"], noise=s["noise"],
                horizon=s["horizon"], seed=s["seed"], progress=progress,
            )
            for d in s["dims"]
        ]  # fmt: skip
        ds = xr.concat(parts, dim=xr.DataArray(s["dims"], dims="dim", name="dim"), join="outer", combine_attrs="drop")
        ds["dim"].attrs["long_name"] = "dimension d of the space (tokens on S^(d-1))"
        for v in parts[0].data_vars:
            ds[v].attrs.update(parts[0][v].attrs)
        for c in ("beta", "sample", "count"):
            ds[c].attrs.update(parts[0][c].attrs)
        return self.stamp(ds, s, figure=self.name, source=self.source)

    def figure(self, ds: xr.Dataset, **_: Any):
        from attnphys.plots import new_figure

        fig = new_figure((10, 4.2))
        axes = fig.subplots(1, ds.sizes["dim"], squeeze=False)[0]
        for ax, d in zip(axes, ds.dim.values):
            sub = ds.sel(dim=d)
            b = sub.beta.values
            cl = sub.clusters.values.astype(float)
            cl[cl < 0] = np.nan
            jitter = (np.arange(cl.shape[1]) / max(cl.shape[1] - 1, 1) - 0.5) * 0.15 * b[:, None]
            ax.scatter((b[:, None] + jitter).ravel(), cl.ravel(), s=10, alpha=0.5, label="measured (one start each)")
            ax.step(b, sub.predicted.values, where="mid", color="k", label="k*(β) = argmax λ_k")
            ax.set_xscale("log")
            ax.set_xlabel("β")
            ax.set_ylabel("clusters of the first plateau" if d == 2 else "clusters (d = 3) / degree ℓ*")
            ax.set_title(
                f"d = {int(d)}: agreeing fraction "
                + ", ".join("beyond" if not np.isfinite(a) else f"{a:.2f}" for a in sub.agree.values)
            )
            ax.legend(fontsize=8)
        return fig

    def caption(self, ds: xr.Dataset) -> str:
        s = settings_of(ds)
        lines = [
            f"{self.source}: {self.title}.",
            f"SA, identity weights; {s['tokens']} tokens, {s['samples']} near-uniform starts per β (circle: equally "
            f"spaced with N(0, {s['noise']:g}²) angle noise; S²: Fibonacci lattice with noise {s['noise']:g}); "
            f"flow to t = {s['horizon']:g}/λ_max; the first plateau's count (cos > 1 − 1e-4, held 5 saves).",
        ]
        for d in ds.dim.values:
            sub = ds.sel(dim=d)
            checked = sub["checked_range"].values if "checked_range" in sub else np.ones(sub.beta.size, bool)
            lo_c = sub["clusters_min"].values if "clusters_min" in sub else np.full(sub.beta.size, -1)
            hi_c = sub["clusters_max"].values if "clusters_max" in sub else np.full(sub.beta.size, -1)
            rows = ", ".join(
                f"β={b:g}: k*={int(p)}, agree {a:.2f} [{lo:.2f}, {hi:.2f}]"
                if ok
                # beyond the β the claim was checked on: the spread of the counts, not a verdict
                else f"β={b:g}: k*={int(p)}, beyond the checked range, counts {int(cmin)}–{int(cmax)}"
                for b, p, a, lo, hi, ok, cmin, cmax in zip(
                    sub.beta.values,
                    sub.predicted.values,
                    sub.agree.values,
                    sub.agree_low.values,
                    sub.agree_high.values,
                    checked,
                    lo_c,
                    hi_c,
                    strict=True,
                )
            )
            lines.append(f"d = {int(d)}: {rows}.")
        return "\n".join(lines) + "\n"


class EquiangularFigure(AbstractFigure):
    """Equiangular collapse: the scalar ODE against the n-token flow, and the predicted boundary on the
    (β, t) clustering diagram (theory: docs/theory/particles.md §8)."""

    name = "particles-equiangular"
    shows = "the equiangular cosine ODE against the n-token flow, and the predicted boundary over the (β, t) clustering diagram ([particles §8](../theory/particles.md#8-equiangular-collapse))"
    full_run = "8 tokens in d = 8, SA and USA; diagram of 32 tokens in d = 3, 2 starts per β ∈ {0.5, 1, …, 9}, t ≤ 40"
    title = "equiangular collapse: the cosine ODE, the n-token flow and the predicted (β, t) boundary"
    source = "arXiv 2512.01868, the equiangular reduction"

    def settings(self, quick: bool = False) -> dict[str, Any]:
        full = dict(
            ode_betas=[1.0, 4.0], ode_tokens=8, rho0=0.0, ode_t_max=12.0, betas=[0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9],
            tokens=32, dim=3, samples=2, t_max=40.0, saves=41, seed=0,
        )  # fmt: skip
        if quick:
            full.update(ode_betas=[1.0], betas=[0.5, 3.0, 9.0], saves=21, samples=1)
        return full

    def work(self, quick: bool = False) -> Work:
        return _work(25.0 if quick else 75.0)

    def compute(self, settings: dict[str, Any], progress: bool = True) -> xr.Dataset:
        from attnphys.clouds import clustering_diagram, collapse_boundary, equiangular_collapse

        s = settings
        curves = []
        for dyn in ("sa", "usa"):
            for b in s["ode_betas"]:
                c = equiangular_collapse(
                    b, tokens=s["ode_tokens"], rho0=s["rho0"], t_max=s["ode_t_max"], saves=121, dynamics=dyn
                )
                curves.append(
                    c[["cosine", "cosine_min", "cosine_max", "deviation"]].expand_dims(dynamics=[dyn], ode_beta=[b])
                )
        ode = xr.combine_by_coords(curves, combine_attrs="drop_conflicts")
        assert isinstance(ode, xr.Dataset)
        ode = ode.rename(time="ode_time")
        diag = clustering_diagram(
            s["betas"], dynamics="sa", tokens=s["tokens"], dim=s["dim"], t_max=s["t_max"], saves=s["saves"],
            samples=s["samples"], seed=s["seed"], progress=progress,
        )  # fmt: skip
        bnd = collapse_boundary(s["betas"], tokens=s["tokens"], rho0=0.0, pair_tol=1e-3)
        ds = xr.merge([ode, diag[["clustered_pairs", "clusters"]], bnd], combine_attrs="drop")
        ds["ode_time"].attrs.update(long_name="time of the equiangular flow", units="1")
        ds["ode_beta"].attrs["long_name"] = "inverse temperature beta of the equiangular runs"
        ds["dynamics"].attrs["long_name"] = "attention: sa (softmax) or usa (unnormalised)"
        for v, src in (("cosine", curves[0]), ("clustered_pairs", diag), ("clusters", diag), ("boundary_time", bnd)):
            ds[v].attrs.update(src[v].attrs)
        for v in ("cosine_min", "cosine_max", "deviation"):
            ds[v].attrs.update(curves[0][v].attrs)
        ds["beta"].attrs["long_name"] = "inverse temperature beta"
        ds["time"].attrs.update(long_name="time of the continuous-time dynamics", units="1")
        return self.stamp(ds, s, figure=self.name, source=self.source)

    def figure(self, ds: xr.Dataset, **_: Any):
        from attnphys.plots import new_figure

        fig = new_figure((11, 4.2))
        a, b = fig.subplots(1, 2)
        for dyn, ls in (("sa", "-"), ("usa", "--")):
            for beta in ds.ode_beta.values:
                sub = ds.sel(dynamics=dyn, ode_beta=beta)
                a.plot(sub.ode_time, sub.cosine, ls, label=f"{dyn.upper()} β={beta:g} (ODE)")
                a.plot(sub.ode_time[::8], sub.cosine_max[::8], "k.", ms=3)
        a.set_xlabel("t")
        a.set_ylabel("pairwise cosine ρ(t)")
        a.set_title("ODE (lines) and every pair of the n-token flow (dots)")
        a.legend(fontsize=8)
        m = b.pcolormesh(ds.beta, ds.time, ds.clustered_pairs.T, shading="nearest", vmin=0, vmax=1)
        fig.colorbar(m, ax=b, label="clustered pairs (fraction)")
        b.plot(ds.beta, ds.boundary_time, "w-o", ms=3, label="equiangular collapse time (ρ₀ = 0)")
        b.set_ylim(0, float(ds.time.max()))
        b.set_xlabel("β")
        b.set_ylabel("t")
        b.set_title("(β, t) clustering diagram, SA, uniform starts")
        b.legend(fontsize=8, loc="upper left")
        return fig

    def caption(self, ds: xr.Dataset) -> str:
        s = settings_of(ds)
        dev = float(ds.deviation.max())
        bt = ", ".join(f"β={b:g}: {t:.1f}" for b, t in zip(ds.beta.values, ds.boundary_time.values))
        return (
            f"{self.source}: {self.title}.\n"
            f"Left: n = {s['ode_tokens']} equiangular tokens in d = n from ρ₀ = {s['rho0']:g}, SA and USA; the "
            f"largest distance of any pairwise cosine of the flow to the ODE is {dev:.1e}.\n"
            f"Right: clustered-pair fraction of {s['samples']} uniform starts of {s['tokens']} tokens in d = "
            f"{s['dim']} (clouds phase-diagram) with the predicted collapse time of an equiangular cloud of the "
            f"same size from cosine 0 to 1 − 1e-6/2: {bt}.\n"
        )


class ScalingFigure(AbstractFigure):
    """Critical attention scaling β_n = γ log n: output cosine over γ for context lengths n, with the closed
    form and the three limits (theory: docs/theory/particles.md §9)."""

    name = "particles-scaling"
    shows = "output cosine of one SA layer with β = γ log n, the closed form and its three limits ([particles §9](../theory/particles.md#9-critical-attention-scaling))"
    full_run = "ρ = 0.5, γ ∈ [0.5, 4], n up to 10,000, d = 128, chunked attention"
    title = "critical attention scaling: output cosine of one SA layer with β = γ log n"
    source = "arXiv 2510.05554, the phase transition at γ_c = 1/(1 − ρ)"

    def settings(self, quick: bool = False) -> dict[str, Any]:
        if quick:
            return dict(gammas=[1.0, 2.0, 3.0], tokens=[100, 1000], rho=0.5, dim=128, chunk=1024, seed=0)
        return dict(
            gammas=[0.5, 1.0, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 4.0], tokens=[100, 1000, 10000], rho=0.5,
            dim=128, chunk=1024, seed=0,
        )  # fmt: skip

    def work(self, quick: bool = False) -> Work:
        return _work(5.0 if quick else 40.0)

    def compute(self, settings: dict[str, Any], progress: bool = True) -> xr.Dataset:
        from attnphys.clouds import critical_scaling

        s = settings
        ds = critical_scaling(
            s["gammas"], s["tokens"], rho=s["rho"], dim=s["dim"], chunk=s["chunk"], seed=s["seed"], progress=progress
        )
        return self.stamp(ds, s, figure=self.name, source=self.source)

    def figure(self, ds: xr.Dataset, **_: Any):
        from attnphys.plots import new_figure

        fig = new_figure((7, 4.5))
        ax = fig.subplots()
        g = np.linspace(float(ds.gamma.min()), float(ds.gamma.max()), 300)
        from attnphys.clouds import output_cosine

        rho = float(ds.attrs["rho"])
        for i, n in enumerate(ds.tokens.values):
            c = f"C{i}"
            ax.plot(g, output_cosine(g, n, rho), "-", color=c, label=f"n = {n:,} (equiangular, closed form)")
            ax.plot(ds.gamma, ds.measured.sel(tokens=n), "o", color=c, ms=4)
        ax.plot(g, output_cosine(g, 1e300, rho), "k:", label="n → ∞")
        gc = float(ds.gamma_c)
        ax.axvline(gc, color="grey", lw=0.8)
        ax.plot([gc], [4 * rho / (1 + 3 * rho)], "k*", ms=9, label="4ρ/(1+3ρ) at γ_c")
        ax.set_xlabel("γ (β = γ log n)")
        ax.set_ylabel("output cosine")
        ax.set_title(f"ρ = {rho:g}, γ_c = {gc:g}; dots: almost-simplex clouds, d = {ds.attrs['dim']}")
        ax.legend(fontsize=8)
        return fig

    def caption(self, ds: xr.Dataset) -> str:
        s = settings_of(ds)
        err = np.nanmax(np.abs(ds.measured.values - ds.predicted.values), axis=0)
        per_n = ", ".join(f"n={n:,}: {e:.3f}" for n, e in zip(ds.tokens.values, err))
        return (
            f"{self.source}: {self.title}.\n"
            f"Input cosine ρ = {s['rho']}, γ_c = {float(ds.gamma_c):g}; lines: the exact output cosine of an "
            f"equiangular cloud; dots: the mean output cosine of an almost-simplex cloud in d = {s['dim']} through "
            f"chunked attention ({s['chunk']} queries per block, float32). Largest |measured − predicted| per n: "
            f"{per_n} (the cosines of an almost-simplex deviate from ρ by O(d^(-1/2)), amplified by β = γ log n).\n"
        )


PARTICLE_FIGURES = (ClusterCountFigure(), EquiangularFigure(), ScalingFigure())
"""The particle-flow figures of ``attnphys reproduce``."""

__all__ = ["PARTICLE_FIGURES", "ClusterCountFigure", "EquiangularFigure", "ScalingFigure"]

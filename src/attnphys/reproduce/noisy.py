"""The noisy particle system's phase transition, one figure each (theory: docs/theory/noisy_particles.md):
the (β, K) phase diagram with K_#(β), K_c(β) and β_*(d), and coupling sweeps up and down below and above β_*
(the finite-n onset and the hysteresis loop) against the mean-field branches."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from attnphys.reproduce._base import AbstractFigure, Work, settings_of

_PLAIN = 1.2e6
"""Point-steps per second of the development machine (as in :mod:`attnphys.reproduce.particles`)."""


def _work(seconds: float) -> Work:
    return Work(plain=seconds * _PLAIN, compiles=1)


class NoisyDiagramFigure(AbstractFigure):
    """The (β, K) phase diagram of noisy USA tokens on S^{d−1}: the linear threshold K_#(β), the mean-field
    first-order line K_c(β) and spinodal K_s(β) beyond β_*(d), and the finite-n onsets and hysteresis areas of
    coupling sweeps (theory: docs/theory/noisy_particles.md §7)."""

    name = "noisy-diagram"
    shows = "the (β, K) phase diagram of noisy tokens on the circle: the linear threshold $K_\\#(\\beta)$, the first-order line $K_c(\\beta)$ beyond $\\beta_*$, and finite-n onsets and hysteresis areas ([noisy particles §7](../theory/noisy_particles.md#7-the-phase-diagram))"
    full_run = "USA, d = 2, β ∈ {1, 2, 3.5, 5}, 128 tokens × 6 replicas, K ∈ [0.6, 1.2] K_#(β) in 13 steps"
    title = "noisy tokens: continuous and discontinuous transitions of the uniform cloud"
    source = "arXiv 2606.05140 and arXiv 2604.16288, the dichotomy at beta_*"

    def settings(self, quick: bool = False) -> dict[str, Any]:
        if quick:
            return dict(dim=2, betas=[1.0, 5.0], theory_betas=[0.5, 6.0, 23], points=9, tokens=64, replicas=4,
                        t_relax=4.0, t_average=8.0, seed=0)  # fmt: skip
        return dict(dim=2, betas=[1.0, 2.0, 3.5, 5.0], theory_betas=[0.5, 6.0, 45], points=13, tokens=128,
                    replicas=6, t_relax=5.0, t_average=15.0, seed=0)  # fmt: skip

    def work(self, quick: bool = False) -> Work:
        return _work(60.0 if quick else 400.0)

    def compute(self, settings: dict[str, Any], progress: bool = True) -> xr.Dataset:
        from attnphys.clouds.noisy import noisy_phase_diagram

        s = settings
        lo, hi, n = s["theory_betas"]
        theory = noisy_phase_diagram(np.linspace(lo, hi, int(n)), s["dim"])
        sim = noisy_phase_diagram(
            s["betas"], s["dim"], span=(0.6, 1.2), points=s["points"], simulate=True, tokens=s["tokens"],
            replicas=s["replicas"], t_relax=s["t_relax"], t_average=s["t_average"], seed=s["seed"],
        )  # fmt: skip
        sim = sim.rename(beta="sim_beta", **{v: f"sim_{v}" for v in sim.data_vars if v != "critical_beta"})
        ds = xr.merge([theory, sim.drop_vars("critical_beta")], combine_attrs="drop_conflicts")
        for v in sim.variables:
            if v in ds:
                ds[v].attrs.update(sim[v].attrs)
        ds["sim_beta"].attrs["long_name"] = "inverse temperature beta of the simulated sweeps"
        return self.stamp(ds, s, figure=self.name, source=self.source)

    def figure(self, ds: xr.Dataset, **_: Any):
        from attnphys.plots import new_figure

        st = settings_of(ds)
        fig = new_figure((11, 4.2))
        a, b = fig.subplots(1, 2)
        beta = ds.beta.values
        a.plot(beta, ds.coupling_linear, "k-", label="K_#(β), linear threshold")
        disc = ds.discontinuous.values
        a.plot(beta[disc], ds.coupling_c.values[disc], "C3--", label="K_c(β), first order (mean field)")
        a.plot(beta[disc], ds.coupling_s.values[disc], "C3:", label="K_s(β), spinodal")
        a.axvline(float(ds.critical_beta), color="0.5", lw=0.8, label=f"β_* = {float(ds.critical_beta):.4f}")
        on, lo, hi = ds.sim_onset.values, ds.sim_onset_low.values, ds.sim_onset_high.values
        a.errorbar(ds.sim_beta, on, yerr=[on - lo, hi - on], fmt="o", color="C0", label="finite-n onset (95 %)")
        a.set_xlabel("β")
        a.set_ylabel("coupling K")
        a.set_yscale("log")
        a.set_title(f"d = {st['dim']}, n = {st['tokens']}")
        a.legend(fontsize=8)
        ar, al, ah = ds.sim_loop_area.values, ds.sim_loop_area_low.values, ds.sim_loop_area_high.values
        kl = ds.sim_coupling_linear.values
        b.errorbar(ds.sim_beta, ar / kl, yerr=[(ar - al) / kl, (ah - ar) / kl], fmt="s", color="C1")
        b.axhline(0.0, color="k", lw=0.8)
        b.axvline(float(ds.critical_beta), color="0.5", lw=0.8)
        b.set_xlabel("β")
        b.set_ylabel("hysteresis area / K_#")
        b.set_title("loop area of the up and down sweeps (95 %)")
        return fig

    def caption(self, ds: xr.Dataset) -> str:
        s = settings_of(ds)
        rows = "; ".join(
            f"β = {b:g}: onset {o:.4g} [{lo:.4g}, {hi:.4g}] vs K_# {k:.4g}, area {ar:+.2e} [{al:+.2e}, {ah:+.2e}]"
            for b, o, lo, hi, k, ar, al, ah in zip(
                ds.sim_beta.values, ds.sim_onset.values, ds.sim_onset_low.values, ds.sim_onset_high.values,
                ds.sim_coupling_linear.values, ds.sim_loop_area.values, ds.sim_loop_area_low.values,
                ds.sim_loop_area_high.values,
            )
        )  # fmt: skip
        return (
            f"{self.source}: {self.title}.\n"
            f"USA, d = {s['dim']}, β_* = {float(ds.critical_beta):.6f}; sweeps of {s['tokens']} tokens × "
            f"{s['replicas']} replicas, relax {s['t_relax']:g}, average {s['t_average']:g} per coupling: {rows}.\n"
        )


class NoisySweepFigure(AbstractFigure):
    """Coupling sweeps up and down at one β below and one above β_*(d): the order parameters of the finite
    cloud against the mean-field branches, and the susceptibility n⟨m²⟩ against 1/(1 − K/K_#) (theory:
    docs/theory/noisy_particles.md §6)."""

    name = "noisy-sweeps"
    shows = "coupling sweeps up and down below and above $\\beta_*$: the finite cloud's order parameter against the mean-field branches, and the susceptibility against $1/(1 - K/K_\\#)$ ([noisy particles §6](../theory/noisy_particles.md#6-finite-n-sweeps-onset-and-hysteresis))"
    full_run = "USA, d = 3, β ∈ {1.3, 4}, 128 tokens × 6 replicas, 15–17 couplings, relax 5, average 15"
    title = "noisy tokens: sweeps of the coupling below and above beta_*"
    source = "arXiv 2606.05140, continuous vs discontinuous transitions"

    def settings(self, quick: bool = False) -> dict[str, Any]:
        if quick:
            return dict(dim=3, betas=[1.3, 4.0], tokens=64, replicas=4, t_relax=4.0, t_average=8.0, saves=16,
                        seed=0)  # fmt: skip
        return dict(dim=3, betas=[1.3, 4.0], tokens=128, replicas=6, t_relax=5.0, t_average=15.0, saves=30, seed=0)

    def work(self, quick: bool = False) -> Work:
        return _work(40.0 if quick else 200.0)

    def compute(self, settings: dict[str, Any], progress: bool = True) -> xr.Dataset:
        from attnphys.clouds.noisy import coupling_sweep, critical_beta, linear_threshold
        from attnphys.clouds.noisy_checks import SWEEP_SPAN

        s = settings
        parts = []
        for b in s["betas"]:
            kl = float(linear_threshold(b, s["dim"])[0])
            lo, hi, pts = SWEEP_SPAN[b > critical_beta(s["dim"])]
            ds = coupling_sweep(
                b, kl * np.linspace(lo, hi, pts), dim=s["dim"], tokens=s["tokens"], replicas=s["replicas"],
                t_relax=s["t_relax"], t_average=s["t_average"], saves=s["saves"], seed=s["seed"],
            )  # fmt: skip
            ds = ds.assign_coords(relative=("coupling", ds.coupling.values / kl)).swap_dims(coupling="relative")
            parts.append(ds.reset_coords("coupling", drop=True))
        ds = xr.concat(parts, dim="beta", join="outer", combine_attrs="drop")
        ds = ds.assign_coords(beta=s["betas"])
        for v in parts[0].variables:
            if v in ds:
                ds[v].attrs.update(parts[0][v].attrs)
        ds["relative"].attrs["long_name"] = "coupling relative to the linear threshold, K/K_#"
        ds["beta"].attrs["long_name"] = "inverse temperature beta"
        return self.stamp(ds, s, figure=self.name, source=self.source)

    def figure(self, ds: xr.Dataset, **_: Any):
        from attnphys.plots import new_figure

        fig = new_figure((11, 4.2))
        a, b = fig.subplots(1, 2)
        for i, beta in enumerate(ds.beta.values):
            sub = ds.sel(beta=beta).dropna("relative", subset=["magnetisation"])
            x = sub.relative.values
            for direc, mk in (("up", "o-"), ("down", "v--")):
                m = sub.magnetisation.sel(direction=direc)
                a.errorbar(x, m.mean("replica"), yerr=m.std("replica"), fmt=mk, color=f"C{i}", ms=3,
                           label=f"β = {beta:g}, {direc}")  # fmt: skip
                a.plot(x, sub.theory_magnetisation.sel(direction=direc), "-", color=f"C{i}", lw=0.6)
            chi = sub.susceptibility.sel(direction="up").mean("replica")
            b.semilogy(x, chi, "o", color=f"C{i}", label=f"β = {beta:g}")
        fine = np.linspace(0.3, 0.97, 100)
        b.semilogy(fine, 1 / (1 - fine), "k-", lw=0.8, label="1/(1 − K/K_#)")
        a.set_xlabel("K/K_#")
        a.set_ylabel("m = |mean of x_i|")
        a.set_title("sweeps (markers) and mean-field branches (lines)")
        a.legend(fontsize=7)
        b.set_xlabel("K/K_#")
        b.set_ylabel("n⟨m²⟩ (up sweep)")
        b.set_title("susceptibility of the uniform cloud")
        b.legend(fontsize=8)
        return fig

    def caption(self, ds: xr.Dataset) -> str:
        s = settings_of(ds)
        rows = "; ".join(
            f"β = {b:g}: onset/K_# {float(ds.onset.sel(beta=b)) / float(ds.coupling_linear.sel(beta=b)):.3f} "
            f"[{float(ds.onset_low.sel(beta=b)) / float(ds.coupling_linear.sel(beta=b)):.3f}, "
            f"{float(ds.onset_high.sel(beta=b)) / float(ds.coupling_linear.sel(beta=b)):.3f}], loop area "
            f"{float(ds.loop_area.sel(beta=b)):+.2e} [{float(ds.loop_area_low.sel(beta=b)):+.2e}, "
            f"{float(ds.loop_area_high.sel(beta=b)):+.2e}]"
            for b in ds.beta.values
        )
        return (
            f"{self.source}: {self.title}.\n"
            f"USA, d = {s['dim']}, {s['tokens']} tokens × {s['replicas']} replicas, relax {s['t_relax']:g} and "
            f"average {s['t_average']:g} per coupling, seed {s['seed']}: {rows}.\n"
        )


NOISY_FIGURES = (NoisyDiagramFigure(), NoisySweepFigure())
"""The figures of the noisy particle system, to add to ``attnphys reproduce`` beside
:data:`~attnphys.reproduce.particle_laws.PARTICLE_LAW_FIGURES`."""

__all__ = ["NOISY_FIGURES", "NoisyDiagramFigure", "NoisySweepFigure"]

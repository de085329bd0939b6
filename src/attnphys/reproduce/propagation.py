"""Signal propagation at initialisation, one figure (theory: docs/theory/signal_propagation.md §7): the tokens'
mean cosine per layer of the paper's random BERT-style encoder, theory against simulation at β = 0.5 and 3,
with the MLP-free negative control, the attention rows' entropy, and the (β, α) diagram of rank collapse."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from attnphys.reproduce._base import AbstractFigure, Work, settings_of

_PLAIN = 1.2e6
"""Point-steps per second of the development machine (as in :mod:`attnphys.reproduce.particles`)."""


def _work(seconds: float) -> Work:
    return Work(plain=seconds * _PLAIN, compiles=1)


class PropagationFigure(AbstractFigure):
    """Mean cosine per layer of random Post-LN encoders at initialisation, the REM theory against the simulated
    networks (and the theory without the MLP kernel), the rows' entropy per layer, and the (β, α) diagram of
    rank collapse and propagation (theory: docs/theory/signal_propagation.md §5, §7)."""

    name = "signal-propagation"
    shows = "the tokens' mean cosine per layer of random BERT-style encoders at initialisation, the REM theory against simulation at β = 0.5 and 3 with the MLP-free control, the attention rows' entropy, and the (β, α) diagram of rank collapse ([signal propagation §7](../theory/signal_propagation.md#7-theory-against-simulation))"
    full_run = "d = 720, T = 512, 50 Post-LN blocks, σ_w² = σ_v² = 0.2, σ_b² = 4·10⁻⁴, 20 networks per β; the diagram on 41 × 41 (β, α)"
    title = "signal propagation at initialisation: mean cosine per layer, theory against simulation"
    source = "arXiv 2505.24333, Fig. 1 (encoder, theory vs experiment) and the trainability diagram"

    def settings(self, quick: bool = False) -> dict[str, Any]:
        if quick:
            return dict(
                betas=[0.5, 3.0], seeds=8, tokens=32, dim=720, layers=50, weights="implicit",
                diagram_betas=list(np.round(np.linspace(0.5, 6.0, 12), 3)),
                diagram_alphas=list(np.round(np.linspace(0.25, 4.0, 12), 3)), seed=0,
            )  # fmt: skip
        return dict(
            betas=[0.5, 3.0], seeds=20, tokens=512, dim=720, layers=50, weights="explicit",
            diagram_betas=list(np.round(np.linspace(0.5, 6.0, 41), 4)),
            diagram_alphas=list(np.round(np.linspace(0.25, 4.0, 41), 4)), seed=0,
        )  # fmt: skip

    def work(self, quick: bool = False) -> Work:
        return _work(20.0 if quick else 400.0)

    def compute(self, settings: dict[str, Any], progress: bool = True) -> xr.Dataset:
        from attnphys.clouds.propagation import PAPER_ENCODER, propagation_phase_diagram
        from attnphys.clouds.propagation_simulation import propagation_agreement

        s = settings
        enc = PAPER_ENCODER
        ag = propagation_agreement(
            s["betas"], seeds=s["seeds"], tokens=s["tokens"], dim=s["dim"], layers=s["layers"],
            sigma_w2=enc["sigma_w2"], sigma_v2=enc["sigma_v2"], sigma_b2=enc["sigma_b2"], seed=s["seed"],
            weights=s["weights"],
        )  # fmt: skip
        dg = propagation_phase_diagram(
            s["diagram_betas"], s["diagram_alphas"], layers=s["layers"], tokens=s["tokens"],
            sigma_w2=enc["sigma_w2"], sigma_v2=enc["sigma_v2"], sigma_b2=enc["sigma_b2"],
        )  # fmt: skip
        dg = dg.rename(beta="diagram_beta", layer="diagram_layer", cosine="diagram_cosine")
        ds = xr.merge([ag, dg[["diagram_cosine", "phase", "depth_scale"]]], combine_attrs="drop")
        for v in ag.variables:
            ds[v].attrs.update(ag[v].attrs)
        for v in ("diagram_cosine", "phase", "depth_scale", "alpha"):
            ds[v].attrs.update(dg[v].attrs)
        ds["diagram_beta"].attrs["long_name"] = "inverse temperature beta of the diagram"
        return self.stamp(ds, s, figure=self.name, source=self.source)

    def figure(self, ds: xr.Dataset, **_: Any):
        from attnphys.plots import new_figure

        st = settings_of(ds)
        fig = new_figure((14, 4.2))
        a, b, c = fig.subplots(1, 3)
        for i, beta in enumerate(ds.beta.values):
            sub = ds.sel(beta=beta)
            a.errorbar(sub.layer, sub.simulated, yerr=sub.stderr, fmt="o", ms=3, color=f"C{i}",
                       label=f"β = {beta:g}, simulated")  # fmt: skip
            a.plot(sub.layer, sub.predicted, "-", color=f"C{i}", label=f"β = {beta:g}, theory")
            a.plot(sub.layer, sub.predicted_no_mlp, ":", color=f"C{i}", label=f"β = {beta:g}, theory without MLP")
            b.plot(sub.block, sub.simulated_entropy, "o", ms=3, color=f"C{i}")
            b.plot(sub.block, sub.predicted_entropy, "-", color=f"C{i}", label=f"β = {beta:g}")
        a.set_xlabel("layer")
        a.set_ylabel("mean cosine of the tokens")
        a.set_title(f"d = {st['dim']}, T = {st['tokens']}, {st['seeds']} networks per β")
        a.legend(fontsize=7)
        b.axhline(np.log(st["tokens"]), color="k", lw=0.6, ls="--")
        b.set_xlabel("block")
        b.set_ylabel("attention row entropy (nats)")
        b.set_title("rows: simulated (dots), REM (lines)")
        b.legend(fontsize=8)
        im = c.pcolormesh(ds.alpha, ds.diagram_beta, ds.phase, shading="nearest", cmap="viridis", vmin=0, vmax=2)
        c.set_xlabel("residual scale α = α_A = α_M")
        c.set_ylabel("β")
        c.set_title(f"phase after {st['layers']} blocks (0 collapse, 2 condensed)")
        fig.colorbar(im, ax=c, ticks=[0, 1, 2])
        return fig

    def caption(self, ds: xr.Dataset) -> str:
        s = settings_of(ds)
        rows = "; ".join(
            f"β = {b:g}: max |theory − simulation| {float(d):.4f}, without the MLP kernel {float(n):.4f}"
            for b, d, n in zip(ds.beta.values, ds.max_difference.values, ds.max_difference_no_mlp.values)
        )
        return (
            f"{self.source}: {self.title}.\n"
            f"Post-LN encoder, d = {s['dim']}, T = {s['tokens']}, {s['layers']} blocks, σ_w² = σ_v² = 0.2, "
            f"σ_b² = 4e-4, α_A = α_M = 1, {s['seeds']} networks per β from seed {s['seed']}, input cosine 0.2; "
            f"finite-T REM theory from the simulated input cosine. {rows} (agreement: below 0.02).\n"
            f"Right: phase after {s['layers']} blocks from the T → ∞ law, α = α_A = α_M.\n"
        )


PROPAGATION_FIGURES = (PropagationFigure(),)
"""The signal-propagation figure added to ``attnphys reproduce`` beside the particle figures."""

__all__ = ["PROPAGATION_FIGURES", "PropagationFigure"]

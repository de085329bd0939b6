"""The paper's study in Python, from a notebook

The whole dynamical study of the mean-field map, one function call per step, each returning a labelled
``xarray.Dataset``: the bifurcation diagram over β_o with the leading Lyapunov exponents and a regime per
value, the attractors that coexist at β_o = 1.27 with their basins, the basins along β_o ∈ [1.24, 1.30]
matched into tracks, the (β_o, β_att) phase diagram, and how finite-N networks approach the mean field.
The convergence step expects slopes near −½ where the map is not chaotic, and says where a size cannot
show it: at β_o = 3, 6 of the 16 paths at N = 990 leave for another attractor within the horizon, so that
size is flagged (`elsewhere_fraction`, a warning, an open marker) and left out, and the slope from
N = 9,900 and 99,000 is −0.50 (fitted with it, the three sizes gave −0.96 [−4.3, 2.4]).
Every step is also a command (`attnphys dmft bifurcation`, `attractors`, `basins`, `phase-diagram`,
`converge`); the commands call these same functions, so they give the same numbers
([how-to](../howto/dmft.md)). The sizes here are reduced so that the documentation builds in minutes;
the paper's own are in the how-to.
"""

import os

import numpy as np
from matplotlib.figure import Figure

import attnphys

attnphys.configure()

from attnphys.dmft import attractors, basins, bifurcation, converge, phase_diagram, preset  # noqa: E402
from attnphys.dmft._convergence import slope_text  # noqa: E402
from attnphys.dynamics.classify import REGIMES  # noqa: E402
from attnphys.plots import bifurcation_figure, converge_figure, phase_diagram_figure  # noqa: E402

SIZES = {
    # the documentation's study (a few minutes on two cores)
    "docs": dict(values=151, steps=40_000, transient=30_000, ics=64, census_steps=60_000, census_transient=40_000,
                 max_period=256, basin_values=7, basin_ics=32, phase=25, phase_steps=14_000, phase_transient=12_000,
                 sizes=(990, 9_900, 99_000), paths=16, conv_steps=600, horizon=200, conv_transient=300),
    # the same study in seconds (the test that compares it with the commands)
    "quick": dict(values=5, steps=2_000, transient=1_500, ics=6, census_steps=2_500, census_transient=1_000,
                  max_period=16, basin_values=3, basin_ics=4, phase=3, phase_steps=1_200, phase_transient=1_000,
                  sizes=(99, 990), paths=3, conv_steps=60, horizon=20, conv_transient=30),
}


def study(s: dict) -> dict:
    """Every step of the study at the sizes ``s``: name → Dataset."""
    cfg = preset("paper")
    out = {}
    # 1. the bifurcation diagram: cold starts from the published β_o = 3 context, the top three exponents,
    #    early stops where an orbit is confirmed periodic (its exponents then come from Floquet multipliers)
    out["bifurcation"] = bifurcation(
        cfg, {"beta_o": np.linspace(0.0, 3.0, s["values"])}, start="checkpoint", steps=s["steps"],
        transient=s["transient"], exponents=3, adaptive=True,
    )
    # 2. the attractors at β_o = 1.27: random full windows, each run until it settles
    out["census"] = attractors(
        cfg.replace(beta_o=1.27), ics=s["ics"], start="checkpoint", steps=s["census_steps"],
        transient=s["census_transient"], max_period=s["max_period"],
    )
    # 3. their basins along β_o: the same starts at every value, censuses matched into tracks
    out["basins"] = basins(
        cfg, {"beta_o": np.linspace(1.24, 1.30, s["basin_values"])}, ics=s["basin_ics"], start="checkpoint",
        steps=s["census_steps"], transient=s["census_transient"], max_period=s["max_period"],
    )
    # 4. the phase diagram over (β_o, β_att): regime and the two leading exponents per point
    grid = np.linspace(0.0, 3.0, s["phase"])
    out["phase"] = phase_diagram(
        cfg, {"beta_o": grid, "beta_att": grid}, start="checkpoint", steps=s["phase_steps"],
        transient=s["phase_transient"], exponents=2, adaptive=True,
    )
    # 5. finite-N networks against the mean field: distances and their slopes in N
    out["converge"] = converge(
        cfg, s["sizes"], sweep={"beta_o": [0.5, 1.0, 3.0]}, paths=s["paths"], steps=s["conv_steps"],
        horizon=s["horizon"], transient=s["conv_transient"],
    )
    return out


def figures(res: dict) -> None:
    """One figure per step, as PNG files in the working folder."""
    # the diagram coloured by regime, with the leading exponents below (λ₁ the wide black line, drawn above
    # λ₂ where the two coincide)
    bifurcation_figure(res["bifurcation"]).savefig("bifurcation.png", dpi=110)

    c = res["census"]
    n = int(c.n_attractors)
    kinds = [REGIMES[int(k)] if k >= 0 else "?" for k in c.kind.values[:n]]
    fig = Figure(figsize=(6.5, 4), layout="constrained")
    ax = fig.subplots()
    labels = [f"{k}, period {int(p)}" if p > 0 else k for k, p in zip(kinds, c.period.values[:n])]
    f = c.basin_fraction.values[:n]
    err = np.vstack([f - c.basin_ci_low.values[:n], c.basin_ci_high.values[:n] - f])
    ax.barh(range(n), f, xerr=err, color="tab:blue")
    ax.set_yticks(range(n), labels)
    ax.set_xlabel("basin fraction (95 % Wilson interval)")
    ax.set_title(f"attractors at β_o = 1.27 ({c.sizes['ic']} starts; unsettled {float(c.unsettled_fraction):.2f})")
    fig.savefig("census.png", dpi=110)

    # the regime map and λ₁ over (β_att, β_o): the library's figure, whose colour scale covers the values
    # that occur on each side of λ₁ = 0
    phase_diagram_figure(res["phase"], "beta_att", "beta_o").savefig("phase.png", dpi=110)

    # distances against N with their fitted slopes; a size where paths left for another attractor is drawn
    # with an open marker and left out of the fit
    converge_figure(res["converge"]).savefig("converge.png", dpi=110)


if __name__ == "__main__":
    results = study(SIZES[os.environ.get("ATTNPHYS_STUDY", "docs")])
    figures(results)
    b = results["bifurcation"]
    counts = {REGIMES[int(k)]: int(v) for k, v in zip(*np.unique(b.regime.values, return_counts=True))}
    cv = results["converge"]
    slopes = "; ".join(f"β_o = {b:g}: {slope_text(cv.sel(beta_o=b))}" for b in cv.beta_o.values)
    print(f"bifurcation: {counts}; census at 1.27: {int(results['census'].n_attractors)} attractors; "
          f"RMS slopes {slopes}")

"""The paper's study in Python, from a notebook

The whole dynamical study of the mean-field map, one function call per step, each returning a labelled
``xarray.Dataset``: the bifurcation diagram over β_o with the leading Lyapunov exponents and a regime per
value, the attractors that coexist at β_o = 1.27 with their basins, the basins along β_o ∈ [1.24, 1.30]
matched into tracks, the (β_o, β_att) phase diagram, and how finite-N networks approach the mean field.
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
from attnphys.dynamics.classify import REGIMES  # noqa: E402

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
    bif = res["bifurcation"]
    fig = Figure(figsize=(9, 5.5), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    b = bif.beta_o.values
    y = bif.orbit.isel(feature=0).values
    top.plot(np.repeat(b[:, None], y.shape[1], 1).ravel(), y.ravel(), ",", color="black", alpha=0.3)
    top.set_ylabel("mo_se[0], last recorded values")
    for i, name in enumerate(("λ₁", "λ₂", "λ₃")):
        bottom.plot(b, bif.exponents.isel(exponent=i), lw=0.8, label=name)
    bottom.axhline(0, color="grey", lw=0.5)
    bottom.set_ylim(-0.3, 0.1)
    bottom.set_xlabel("β_o")
    bottom.set_ylabel("exponent (1/step)")
    bottom.legend(ncols=3, fontsize="small")
    top.set_title("paper preset: bifurcation diagram and leading Lyapunov exponents")
    fig.savefig("bifurcation.png", dpi=110)

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

    ph = res["phase"]
    fig = Figure(figsize=(6.5, 5), layout="constrained")
    ax = fig.subplots()
    mesh = ax.pcolormesh(ph.beta_att.values, ph.beta_o.values, ph.lambda1.values.clip(-0.5, 0.1), cmap="coolwarm",
                         vmin=-0.5, vmax=0.5)
    fig.colorbar(mesh, ax=ax, label="λ₁ (1/step), clipped to [−0.5, 0.1]")
    ax.set_xlabel("β_att")
    ax.set_ylabel("β_o")
    ax.set_title("leading Lyapunov exponent over (β_att, β_o)")
    fig.savefig("phase.png", dpi=110)

    cv = res["converge"]
    fig = Figure(figsize=(6.5, 4), layout="constrained")
    ax = fig.subplots()
    for beta in cv.beta_o.values:
        d = cv.sel(beta_o=beta)
        ax.loglog(cv.n.values, d.rms_deviation.values, "o-", label=f"β_o = {beta:g}: slope {float(d.slope):+.2f}")
    ax.set_xlabel("network size N")
    ax.set_ylabel("RMS deviation from the mean field")
    ax.legend(fontsize="small")
    ax.set_title("finite N against the mean field")
    fig.savefig("converge.png", dpi=110)


if __name__ == "__main__":
    results = study(SIZES[os.environ.get("ATTNPHYS_STUDY", "docs")])
    figures(results)
    b = results["bifurcation"]
    counts = {REGIMES[int(k)]: int(v) for k, v in zip(*np.unique(b.regime.values, return_counts=True))}
    print(f"bifurcation: {counts}; census at 1.27: {int(results['census'].n_attractors)} attractors; "
          f"slopes {np.round(results['converge'].slope.values, 3).tolist()}")

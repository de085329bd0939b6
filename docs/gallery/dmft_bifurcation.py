"""A bifurcation diagram of the mean-field map from cold starts

All 301 values of β_o in [1.20, 1.50] run as one vectorised batch, every one from the published
β_o = 3 context; after 12,000 transient steps the last 1,500 values of the first component of mo_se
are drawn above each β_o. A single point per β_o is a fixed point of the observable, a few points a
periodic orbit, a filled segment a quasi-periodic or chaotic orbit. The library's `bifurcation`
command adds Lyapunov exponents, zero-plane sections and a regime label per value
([how-to](../howto/dmft.md#bifurcation-diagrams)).
"""

import numpy as np
from matplotlib.figure import Figure

import attnphys

attnphys.configure()

from attnphys.dmft import preset, trajectories  # noqa: E402

cfg = preset("paper")
betas = np.round(np.linspace(1.20, 1.50, 301), 6).tolist()
ds = trajectories(cfg, start="checkpoint", steps=13_500, transient=12_000, sweep={"beta_o": betas})
y = ds["mo_se"].isel(feature=0).values  # (beta_o, step)

fig = Figure(figsize=(9, 4.5), layout="constrained")
ax = fig.subplots()
b = np.repeat(np.asarray(betas)[:, None], y.shape[1], axis=1)
ax.plot(b.ravel(), y.ravel(), ",", color="black", alpha=0.25)
ax.set_xlabel("β_o")
ax.set_ylabel("mo_se[0] (last 1,500 steps)")
ax.set_xlim(betas[0], betas[-1])
fig.savefig("bifurcation.png", dpi=110)

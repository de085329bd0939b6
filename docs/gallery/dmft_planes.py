"""Mean-field trajectories of the paper's network in the mo_se plane

Six values of the output inverse temperature β_o, each started from the published β_o = 3 context
(the checkpoint) and run past a transient. Below β_o ≈ 1.26 the orbit is a closed curve
(quasi-periodic), near 1.27 it breaks into a periodic orbit of many points, and at larger β_o a short
period remains. The map is described in [the theory page](../theory/dmft.md#3-the-mean-field-map).
"""

import numpy as np
from matplotlib.figure import Figure

import attnphys

attnphys.configure()  # float64; call once, before any computation

from attnphys.dmft import preset, trajectories  # noqa: E402

cfg = preset("paper")  # seed 1, M = 3, L = 4, P = 2, N_se = 99, β_att = 2.2, s_att = 100, ε = 0.02
betas = [1.255, 1.26451, 1.266, 1.27, 1.28, 1.4]
ds = trajectories(cfg, start="checkpoint", steps=30_000, transient=20_000, sweep={"beta_o": betas})

fig = Figure(figsize=(10, 6.2), layout="constrained")
axes = fig.subplots(2, 3, sharex=True, sharey=True)
for ax, beta in zip(axes.flat, betas):
    y = ds["mo_se"].sel(beta_o=beta).values  # (step, feature)
    ax.plot(y[:, 0], y[:, 1], ",", color="tab:blue", alpha=0.6)
    ax.set_title(f"β_o = {beta}")
    n = len(np.unique(np.round(y[-2000:, 0], 8)))
    ax.text(0.03, 0.04, f"{n} distinct values\n(last 2000 steps)", transform=ax.transAxes, fontsize=8)
for ax in axes[-1]:
    ax.set_xlabel("mo_se[0]")
for ax in axes[:, 0]:
    ax.set_ylabel("mo_se[1]")
fig.savefig("planes.png", dpi=110)

"""Tokens as particles: clustering at small and large β

Thirty-two tokens start uniformly on the circle and move under continuous-time self-attention (SA,
identity weights), integrated with diffrax at the library's default tolerances. The left panel shows
the number of clusters (connected components of cos > 1 − 10⁻³) over time for three inverse
temperatures: at β = 1 the tokens soon meet in one cluster, as the clustering theorem says; at larger
β they collapse into several clusters that persist as metastable plateaus (at β = 9 in the plane the
command `attnphys clouds flow` follows such a plateau for hundreds of time units before a merge).
The right panel shows where the tokens sit at the end of the β = 9 run
([theory](../theory/particles.md)).
"""

import jax
import numpy as np
from matplotlib.figure import Figure

import attnphys

attnphys.configure()

from attnphys.clouds import SoftmaxAttention, solve_flow, uniform_sphere  # noqa: E402
from attnphys.clouds.observables import directions  # noqa: E402

X0 = uniform_sphere(jax.random.PRNGKey(1), 32, 2)
ts = np.linspace(0.0, 150.0, 301)


def clusters(X, delta=1e-3):
    """Connected components of the graph cos(x_i, x_j) > 1 − delta."""
    U = np.asarray(directions(X))
    adj = U @ U.T > 1 - delta
    seen, count = np.zeros(len(U), bool), 0
    for i in range(len(U)):
        if not seen[i]:
            count += 1
            stack = [i]
            while stack:
                j = stack.pop()
                if not seen[j]:
                    seen[j] = True
                    stack.extend(np.flatnonzero(adj[j] & ~seen))
    return count


fig = Figure(figsize=(11, 4), layout="constrained")
ax, ax2 = fig.subplots(1, 2, width_ratios=[2, 1])
for beta in (1.0, 4.0, 9.0):
    sol = solve_flow(SoftmaxAttention(beta=beta), X0, ts)
    ax.step(sol.ts, [clusters(x) for x in sol.xs], where="post", label=f"β = {beta:g}")
ax.set_xlabel("t")
ax.set_ylabel("clusters")
ax.set_yscale("log")
ax.legend()
theta = np.linspace(0, 2 * np.pi, 200)
ax2.plot(np.cos(theta), np.sin(theta), color="0.8", lw=1)
ax2.scatter(*np.asarray(X0).T, s=10, color="0.6", label="t = 0")
ax2.scatter(*sol.xs[-1].T, s=30, color="C2", label=f"t = {ts[-1]:g}, β = 9")
ax2.set_aspect("equal")
ax2.legend(fontsize=8, loc="lower left")
fig.savefig("particles_clustering.png", dpi=110)

"""Lyapunov exponents of the logistic and Hénon maps

The dynamics toolkit works on any map written as a pure JAX function. For the logistic map
x ↦ r x (1 − x) the orbit diagram and the exponent λ(r) are computed side by side: λ touches zero at
every period doubling and at r = 4 equals ln 2. For the Hénon map at a = 1.4, b = 0.3 the two
exponents are about 0.419 and −1.623; their sum is ln b, the map's constant log-determinant
([theory](../theory/dynamics.md)).
"""

import jax
import jax.numpy as jnp
import numpy as np
from matplotlib.figure import Figure

import attnphys

attnphys.configure()

from attnphys.dynamics import lyapunov_spectrum  # noqa: E402
from attnphys.dynamics.maps import HENON, LOGISTIC  # noqa: E402

# -- logistic: orbit diagram and λ(r) ---------------------------------------------------------------
rs = jnp.linspace(2.8, 4.0, 800)


def orbit(r, x0=0.3, transient=1000, keep=200):
    def step(x, _):
        x = r * x * (1 - x)
        return x, x

    x, _ = jax.lax.scan(step, x0, None, length=transient)
    return jax.lax.scan(step, x, None, length=keep)[1]


xs = jax.vmap(orbit)(rs)  # (800, 200)
lam = lyapunov_spectrum(LOGISTIC, jnp.full((rs.size, 1), 0.3), None, rs, steps=4000, batch=True).exponents[:, 0]

fig = Figure(figsize=(8, 6), layout="constrained")
top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[2, 1])
top.plot(np.repeat(np.asarray(rs), xs.shape[1]), np.asarray(xs).ravel(), ",", color="black", alpha=0.3)
top.set_ylabel("x (after the transient)")
bottom.plot(rs, lam, lw=0.8)
bottom.axhline(0.0, color="grey", lw=0.5)
bottom.axhline(np.log(2), color="tab:red", lw=0.5, ls="--", label="ln 2")
bottom.set_ylim(-2.5, 1.0)
bottom.set_xlabel("r")
bottom.set_ylabel("λ(r)")
bottom.legend(loc="lower left")
fig.savefig("1_logistic.png", dpi=110)

# -- Hénon: the attractor and its two exponents -----------------------------------------------------
p = jnp.array([1.4, 0.3])
res = lyapunov_spectrum(HENON, jnp.array([0.1, 0.1]), None, p, steps=20_000, history_every=100)


def henon(x, _):
    x = HENON.f(x, p)
    return x, x


_, pts = jax.lax.scan(henon, jnp.array([0.1, 0.1]), None, length=20_000)
pts = np.asarray(pts[100:])

fig = Figure(figsize=(10, 4), layout="constrained")
left, right = fig.subplots(1, 2)
left.plot(pts[:, 0], pts[:, 1], ",", color="black")
left.set_xlabel("x")
left.set_ylabel("y")
left.set_title("Hénon attractor, a = 1.4, b = 0.3")
t = res.checkpoint.values
for i, name in enumerate(["λ₁", "λ₂"]):
    right.plot(t, res.history.values[:, i], label=f"{name} → {float(res.exponents[i]):.3f}")
right.axhline(float(np.log(0.3)) - float(res.exponents[0]), color="grey", ls="--", lw=0.7,
              label="ln b − λ₁")
right.set_xscale("log")
right.set_xlabel("steps")
right.set_ylabel("running estimate")
right.legend()
fig.savefig("2_henon.png", dpi=110)

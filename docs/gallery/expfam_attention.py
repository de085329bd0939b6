"""Attention is the gradient of a log-normalizer

Five keys in the plane define a discrete base measure. Its log-normalizer
log Z(η) = log Σ_n exp(k_nᵀη) is drawn as contours, and at a grid of queries η the arrow is the
attention output Σ_n softmax(Kη)_n k_n, computed by the library as the measure's mean. The arrows are
the gradient field of log Z (checked below against automatic differentiation), so they are orthogonal
to the contours and point into the convex hull of the keys
([theory](../theory/expfam.md)).
"""

import jax
import jax.numpy as jnp
import numpy as np
from matplotlib.figure import Figure

import attnphys

attnphys.configure()

from attnphys.expfam import Discrete  # noqa: E402

keys = jnp.array([[1.0, 0.2], [-0.6, 0.9], [-0.8, -0.7], [0.4, -1.0], [0.0, 0.1]])
h = Discrete(keys)

g = np.linspace(-3, 3, 121)
E1, E2 = np.meshgrid(g, g)
etas = jnp.stack([E1.ravel(), E2.ravel()], axis=1)
logz = jax.vmap(h.log_normalizer)(etas).reshape(E1.shape)

q = np.linspace(-2.5, 2.5, 11)
Q1, Q2 = np.meshgrid(q, q)
queries = jnp.stack([Q1.ravel(), Q2.ravel()], axis=1)
means = jax.vmap(h.mean)(queries)
grads = jax.vmap(jax.grad(h.log_normalizer))(queries)
err = float(jnp.max(jnp.abs(means - grads)))

fig = Figure(figsize=(6.5, 6), layout="constrained")
ax = fig.subplots()
cs = ax.contour(E1, E2, logz, levels=15, cmap="viridis")
ax.clabel(cs, fontsize=7)
ax.quiver(Q1, Q2, means[:, 0].reshape(Q1.shape), means[:, 1].reshape(Q1.shape), color="tab:red", alpha=0.8)
ax.plot(keys[:, 0], keys[:, 1], "k*", ms=12, label="keys k_n")
ax.set_xlabel("η₁")
ax.set_ylabel("η₂")
ax.set_aspect("equal")
ax.set_title(f"log Z(η) and the attention output; max |mean − ∇log Z| = {err:.1e}", fontsize=9)
ax.legend(loc="upper right")
fig.savefig("attention_gradient.png", dpi=110)

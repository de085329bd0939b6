"""A token cloud through attention and normalization layers

A centred Gaussian cloud of 256 tokens in three dimensions goes through 40 layers of residual
self-attention (identity weights, β = 1), each followed by a normalization or by none. The panels
show three of the library's cloud statistics per layer: the total variance (trace of the
covariance), the angular spread (one minus the mean cosine between tokens) and the number of angular
clusters. Without a normalization the cloud grows without bound while its directions settle into a
few clusters; LayerNorm and RMSNorm hold the scale, and after projection onto the sphere all tokens
meet in one cluster ([theory](../theory/clouds.md)).
"""

import jax
from matplotlib.figure import Figure

import attnphys

attnphys.configure()

from attnphys.clouds import attention_step, cloud_statistics, layernorm, rmsnorm, sphere  # noqa: E402

X0 = jax.random.normal(jax.random.PRNGKey(0), (256, 3)) / 3**0.5
norms = {"none": lambda X: X, "LayerNorm": layernorm, "RMSNorm": rmsnorm, "sphere": sphere}
layers = 40

fig = Figure(figsize=(12, 3.8), layout="constrained")
axes = fig.subplots(1, 3)
for name, norm in norms.items():
    layer = jax.jit(lambda X, norm=norm: norm(attention_step(X, beta=1.0)))
    X, rows = X0, []
    for _ in range(layers + 1):
        rows.append(cloud_statistics(X))
        X = layer(X)
    for ax, stat in zip(axes, ["cov_trace", "angular_spread", "clusters"]):
        ax.plot([r[stat] for r in rows], label=name, drawstyle="steps-post" if stat == "clusters" else "default")
for ax, label in zip(axes, ["trace of the covariance", "angular spread (1 − mean cos)", "angular clusters"]):
    ax.set_xlabel("layer")
    ax.set_ylabel(label)
axes[0].set_yscale("log")
axes[2].set_yscale("log")
axes[1].legend()
fig.savefig("cloud_statistics.png", dpi=110)

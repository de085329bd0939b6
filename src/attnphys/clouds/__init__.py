"""Token clouds: operators on N tokens as an empirical distribution, layers, statistics
(spec ``probabilistic-attention.md`` §3)."""

from attnphys.clouds.ops import (
    NORMS,
    attention_step,
    compose,
    identity,
    layernorm,
    push_gaussian,
    renormalize,
    renormalize_population,
    rmsnorm,
    sphere,
    standard_layer,
    theorem1_affine,
)
from attnphys.clouds.run import INITS, initial_cloud, run_cloud
from attnphys.clouds.stats import STATISTICS, cloud_statistics, cluster_count, energy_distance, gaussian_entropy, knn_entropy, mardia

__all__ = [
    "NORMS", "attention_step", "compose", "identity", "layernorm", "push_gaussian", "renormalize",
    "renormalize_population", "rmsnorm", "sphere", "standard_layer", "theorem1_affine", "INITS", "initial_cloud",
    "run_cloud", "STATISTICS", "cloud_statistics", "cluster_count", "energy_distance", "gaussian_entropy",
    "knn_entropy", "mardia",
]

"""Token clouds: operators on N tokens as an empirical distribution, layers, statistics, and tokens as
interacting particles in continuous time (theory: docs/theory/clouds.md, docs/theory/particles.md).

Nothing here imports torch; :mod:`attnphys.clouds.through_model` loads a real model only when called.
"""

from attnphys.clouds.attention import (
    ATTENTIONS,
    AbstractAttention,
    SinkhornAttention,
    SoftmaxAttention,
    UnnormalisedAttention,
    bilinear_attention,
)
from attnphys.clouds.ensembles import ENSEMBLES, GOE, AbstractEnsemble, Gaussian, PlusMinusKQ, layer_weights
from attnphys.clouds.flow import (
    SOLVERS,
    FlowSolution,
    flow_dataset,
    flow_statistics,
    solve_flow,
    uniform_sphere,
    velocity,
)
from attnphys.clouds.mlp import ACTIVATIONS, MLP, GatedMLP, random_mlp
from attnphys.clouds.norms import NORMS, RN, AbstractNorm, DiagonalRN, Identity, LayerNorm, RMSNorm, Sphere, make_norm
from attnphys.clouds.observables import (
    PAIR_TOL,
    Plateau,
    clustered_pairs,
    directions,
    interaction_energy,
    longest_metastable,
    plateaus,
)
from attnphys.clouds.ops import (
    Layer,
    attention_no_residual,
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
    untied_layers,
)
from attnphys.clouds.run import INITS, initial_cloud, run_cloud
from attnphys.clouds.stats import (
    STATISTICS,
    cloud_statistics,
    cluster_count,
    energy_distance,
    gaussian_entropy,
    knn_entropy,
    mardia,
)

__all__ = [
    "ATTENTIONS", "AbstractAttention", "SinkhornAttention", "SoftmaxAttention", "UnnormalisedAttention",
    "bilinear_attention", "ENSEMBLES", "GOE", "AbstractEnsemble", "Gaussian", "PlusMinusKQ", "layer_weights",
    "SOLVERS", "FlowSolution", "flow_dataset", "flow_statistics", "solve_flow", "uniform_sphere", "velocity",
    "ACTIVATIONS", "MLP", "GatedMLP", "random_mlp", "NORMS", "RN", "AbstractNorm", "DiagonalRN", "Identity",
    "LayerNorm", "RMSNorm", "Sphere", "make_norm", "PAIR_TOL", "Plateau", "clustered_pairs", "directions",
    "interaction_energy", "longest_metastable", "plateaus", "Layer", "attention_no_residual", "attention_step",
    "compose", "identity", "layernorm", "push_gaussian", "renormalize", "renormalize_population", "rmsnorm", "sphere",
    "standard_layer", "theorem1_affine", "untied_layers", "INITS", "initial_cloud", "run_cloud", "STATISTICS",
    "cloud_statistics", "cluster_count", "energy_distance", "gaussian_entropy", "knn_entropy", "mardia",
]

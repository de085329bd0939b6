"""The options of the clouds' analyses, each written once (name, default, type, help, bounds): the functions
:func:`attnphys.clouds.clustering_diagram` (and its dry run :func:`~attnphys.clouds.plan_clustering_diagram`),
:func:`~attnphys.clouds.particle_flow` and :func:`~attnphys.clouds.iterate_layers`, and the commands
``attnphys clouds phase-diagram``, ``clouds flow`` and ``clouds run`` derive from these models (theory:
docs/theory/particles.md §2, §5; docs/theory/clouds.md §2; docs/theory/sweeps.md §5). Light: nothing here
imports the numerical engine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from attnphys._options import AnalysisOptions, Progress, Storage
from attnphys.clouds.registries import AttentionName, EnsembleName, NormName


class Integration(AnalysisOptions):
    """How a cloud's continuous-time flow is integrated and read (theory: docs/theory/particles.md §2, §5):
    the options both ``clouds flow`` and ``clouds phase-diagram`` take."""

    dynamics: AttentionName = Field("sa", description="Attention kernel.")
    tokens: int = Field(64, ge=2, description="Number of tokens n.")
    dim: int = Field(3, ge=2, description="Token dimension d (tokens on the sphere S^{d-1}).")
    t_max: float = Field(50.0, gt=0, allow_inf_nan=False, description="Final time.")
    saves: int = Field(201, ge=2, description="Saved times, evenly spaced from 0 to t_max.")
    rtol: float = Field(1e-8, gt=0, lt=1, description="Relative tolerance of the adaptive step-size controller.")
    atol: float = Field(1e-10, gt=0, description="Absolute tolerance of the adaptive step-size controller.")
    solver: Literal["tsit5", "dopri8", "kvaerno5"] = Field(
        "tsit5", description="ODE solver (kvaerno5: implicit, for stiff flows such as USA at large β)."
    )
    pair_tol: float = Field(
        1e-3, gt=0, description="Two tokens are a clustered pair when their directions are closer than this."
    )
    cluster_delta: float = Field(1e-3, gt=0, lt=1, description="Clusters: connected components of cos > 1 − δ.")
    seed: int = Field(0, ge=0, description="Seed of the initial cloud and of random weights.")


class ClusteringPoint(Integration):
    """The options of the (β, t) clustering diagram that its command exposes: a shorter run than a flow's."""

    t_max: float = Field(30.0, gt=0, allow_inf_nan=False, description="Final time.")
    saves: int = Field(61, ge=2, description="Saved times, evenly spaced from 0 to t_max.")
    samples: int = Field(4, ge=1, description="Random starts per β (averaged).")


class ClusteringOptions(Storage, ClusteringPoint):
    """Every option of :func:`attnphys.clouds.clustering_diagram`."""


class FlowPoint(Integration):
    """The options of :func:`attnphys.clouds.particle_flow` that its command ``clouds flow`` exposes (theory:
    docs/theory/particles.md §2–4)."""

    beta: float = Field(1.0, gt=0, allow_inf_nan=False, description="Inverse temperature β.")
    sphere: bool = Field(True, description="Tokens on the unit sphere (projected dynamics); --no-sphere: in R^d.")
    residual: bool = Field(True, description="With the residual: ẋ = A(X); without: ẋ = A(X) − x.")
    causal: bool = Field(False, description="Causal masking: token i attends to tokens j ≤ i.")
    heads: int = Field(1, ge=1, description="Number of heads (identical for identity weights).")
    weights: str = Field(
        "identity",
        description="Q, K, V: identity, or random from gaussian, goe, pm_kq "
        "(Q = K-transposed bilinear form W, V = I), or an .npz file with "
        "arrays Q, K, V (and optionally O) of shape (H, k, d).",
    )
    init: Literal["sphere", "gaussian"] = Field(
        "sphere",
        description="Start: uniform on the sphere, or standard Gaussian (projected on the sphere with --sphere).",
    )
    keep_cloud: bool = Field(True, description="Store the token positions at every saved time.")


class FlowOptions(Progress, FlowPoint):
    """Every option of :func:`attnphys.clouds.particle_flow`: in Python the weights may also be the arrays."""

    weights: str | Mapping[str, Any] = Field(
        FlowPoint.default("weights"),
        description=f"{FlowPoint.model_fields['weights'].description} In Python also a mapping of the arrays.",
    )


class LayersPoint(AnalysisOptions):
    """The options of :func:`attnphys.clouds.iterate_layers` that its command ``clouds run`` exposes (theory:
    docs/theory/clouds.md §2)."""

    init: Literal["gaussian", "sphere", "mixture"] = Field(
        "gaussian", description="Initial cloud: gaussian (centred isotropic), sphere or mixture."
    )
    dim: int = Field(16, ge=2, description="Token dimension D (at least 2).")
    tokens: int = Field(512, ge=2, description="Number of tokens N.")
    layers: int = Field(100, ge=0, description="Layers to iterate.")
    norm: NormName = Field("layernorm", description="Normalization after each attention step.")
    beta: float = Field(1.0, gt=0, allow_inf_nan=False, description="Inverse temperature β of the attention scores.")
    alpha: float = Field(1.0, allow_inf_nan=False, description="Step size α of the residual update.")
    heads: int = Field(0, ge=0, description="0: identity weights; H > 0: H heads with random W = W_qᵀW_k and W_v.")
    ensemble: EnsembleName = Field("gaussian", description="Ensemble of the random weights (with --heads > 0).")
    resample_every: int = Field(
        0,
        ge=0,
        description="Draw new random weights every this many layers (0: the same "
        "weights in every layer; 1: untied layers).",
    )
    attention: AttentionName = Field("sa", description="Attention kernel.")
    residual: bool = Field(
        True,
        description="Keep the residual of the attention sublayer (without it every token "
        "becomes a weighted mean of the cloud).",
    )
    mlp: Literal["none", "random"] = Field("none", description="MLP sublayer after the attention block.")
    stats_every: int = Field(10, ge=1, description="Record the statistics every this many layers.")
    snapshots: tuple[int, ...] = Field(
        (0, 10, 100),
        description="Layers whose clouds are stored and drawn (default 0, 10, 100: those beyond --layers become "
        "the last layer).",
    )
    seed: int = Field(0, ge=0, description="Seed of the initial cloud and of random weights.")


class LayersOptions(Progress, LayersPoint):
    """Every option of :func:`attnphys.clouds.iterate_layers`."""

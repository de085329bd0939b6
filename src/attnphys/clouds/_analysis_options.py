"""The options of the clouds' sweeping analysis, each written once (name, default, type, help, bounds): the
function :func:`attnphys.clouds.clustering_diagram`, its dry run :func:`~attnphys.clouds.plan_clustering_diagram`
and the command ``attnphys clouds phase-diagram`` derive from these models (theory: docs/theory/particles.md
§5; docs/theory/sweeps.md §5). Light: nothing here imports the numerical engine."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from attnphys._options import AnalysisOptions, Storage


class Integration(AnalysisOptions):
    """How a cloud's continuous-time flow is integrated and read (theory: docs/theory/particles.md §2, §5):
    the options both ``clouds flow`` and ``clouds phase-diagram`` take."""

    dynamics: Literal["sa", "usa", "sinkhorn"] = Field(
        "sa", description="Attention: softmax (sa), unnormalised (usa) or doubly stochastic (sinkhorn)."
    )
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

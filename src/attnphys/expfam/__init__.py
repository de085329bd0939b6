"""Attention as an exponential family (spec ``probabilistic-attention.md`` §1–2)."""

from attnphys.expfam.duality import (
    bregman,
    conjugate_discrete,
    conjugate_gaussian,
    conjugate_numeric,
    entropy_discrete,
    entropy_gaussian,
    grad_log_normalizer,
    kl_discrete,
    kl_gaussian,
    kl_monte_carlo,
    log_normalizer_monte_carlo,
)
from attnphys.expfam.measures import (
    BaseMeasure,
    Discrete,
    ExpFamilyBase,
    Gaussian,
    GaussianMixture,
    GaussianMixtureFull,
    gaussian_log_partition,
    gaussian_natural,
)

__all__ = [
    "BaseMeasure", "Discrete", "ExpFamilyBase", "Gaussian", "GaussianMixture", "GaussianMixtureFull",
    "gaussian_log_partition", "gaussian_natural", "bregman", "conjugate_discrete", "conjugate_gaussian",
    "conjugate_numeric", "entropy_discrete", "entropy_gaussian", "grad_log_normalizer", "kl_discrete",
    "kl_gaussian", "kl_monte_carlo", "log_normalizer_monte_carlo",
]

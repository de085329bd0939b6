"""Type stub of the lazily loaded package: the one list of its public names."""

from ._duality import (
    bregman,
    conjugate_discrete,
    conjugate_gaussian,
    conjugate_numeric,
    entropy_discrete,
    entropy_gaussian,
    grad_log_normalizer,
    kl_discrete,
    kl_gaussian,
)
from ._measure.base import AbstractBaseMeasure, measure_classes, random_spd
from ._measure.discrete import Discrete
from ._measure.exponential_family import (
    ExpFamilyBase,
    gaussian_log_partition,
    gaussian_natural,
    gaussian_natural_sampler,
)
from ._measure.gaussian import Gaussian
from ._measure.mixture import GaussianMixture
from ._measure.mixture_full import GaussianMixtureFull
from ._monte_carlo import kl_monte_carlo, log_normalizer_monte_carlo

__all__ = [
    # base measures (theory: docs/theory/expfam.md §2)
    "AbstractBaseMeasure",
    "Discrete",
    "Gaussian",
    "GaussianMixture",
    "GaussianMixtureFull",
    "ExpFamilyBase",
    "gaussian_log_partition",
    "gaussian_natural",
    "gaussian_natural_sampler",
    "measure_classes",
    "random_spd",
    # duality (§3–4)
    "grad_log_normalizer",
    "bregman",
    "kl_discrete",
    "kl_gaussian",
    "conjugate_numeric",
    "conjugate_discrete",
    "conjugate_gaussian",
    "entropy_discrete",
    "entropy_gaussian",
    # Monte-Carlo checks (§5)
    "log_normalizer_monte_carlo",
    "kl_monte_carlo",
]

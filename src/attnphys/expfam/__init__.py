"""Attention as an exponential family: base measures, their log-normalizers and duality
(theory: docs/theory/expfam.md §1).

A base measure is a subclass of :class:`AbstractBaseMeasure` (one file per variant under
``_measure/``); :func:`measure_classes` lists them all. The duality functions (§4) and the
Monte-Carlo estimators (§5) take any of them.
"""

from attnphys.expfam._duality import (
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
from attnphys.expfam._measure.base import AbstractBaseMeasure, measure_classes, random_spd
from attnphys.expfam._measure.discrete import Discrete
from attnphys.expfam._measure.exponential_family import (
    ExpFamilyBase,
    gaussian_log_partition,
    gaussian_natural,
    gaussian_natural_sampler,
)
from attnphys.expfam._measure.gaussian import Gaussian
from attnphys.expfam._measure.mixture import GaussianMixture
from attnphys.expfam._measure.mixture_full import GaussianMixtureFull
from attnphys.expfam._monte_carlo import kl_monte_carlo, log_normalizer_monte_carlo

BaseMeasure = AbstractBaseMeasure
"""The name of :class:`AbstractBaseMeasure` in earlier releases (the same class)."""

__all__ = [
    # base measures (theory: docs/theory/expfam.md §2)
    "AbstractBaseMeasure",
    "BaseMeasure",
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

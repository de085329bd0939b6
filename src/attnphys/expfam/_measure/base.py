"""The interface of a base measure (theory: docs/theory/expfam.md §1).

A base measure h on ℝᴰ generates the exponential family

    p(x | η) = h(x) e^{β xᵀη} / Z_β(η),    G(η) = log Z_β(η) = log ∫ h(x) e^{β xᵀη} dx,

with sufficient statistic u(x) = x, natural parameter η (D,) and scale (inverse temperature) β, a
first-class argument of every method. Base measures are normalised (∫ h = 1, so G(0) = 0).
"""

from __future__ import annotations

import abc
import inspect

import equinox as eqx
import jax
import jax.numpy as jnp


class AbstractBaseMeasure(eqx.Module):
    """A base measure h and the exponential family p(x | η) ∝ h(x) e^{β xᵀη} that it generates
    (theory: docs/theory/expfam.md §1).

    Subclasses implement the log-normalizer G(η) = log Z_β(η) (§1), its derivatives in closed form,
    ``mean`` (E[x] = β⁻¹ ∇G, §3) and ``fisher`` (Cov[x] = β⁻² ∇²G, §3), samplers of h and of
    p(· | η), and :meth:`example`, a random instance used by the property tests (a new subclass gets
    them for free). They may override :meth:`conjugate_at` with an independent closed form (§4.2).

    Shapes: η (D,), samples (n, D), the scale β a scalar (or a traced 0-d array).
    """

    @abc.abstractmethod
    def log_normalizer(self, eta: jax.Array, beta: float = 1.0) -> jax.Array:
        """G(η) = log Z_β(η) = log ∫ h(x) e^{β xᵀη} dx (theory: docs/theory/expfam.md §1).

        Args:
            eta: (D,) natural parameter.
            beta: scale multiplying xᵀη.

        Returns:
            () the log-normalizer (max-shifted where it is a log-sum-exp).
        """

    @abc.abstractmethod
    def mean(self, eta: jax.Array, beta: float = 1.0) -> jax.Array:
        """E_{p(·|η)}[x] = β⁻¹ ∇_η G(η) (theory: docs/theory/expfam.md §3).

        Args:
            eta: (D,) natural parameter.
            beta: scale.

        Returns:
            (D,) the mean of the tilted distribution.
        """

    @abc.abstractmethod
    def fisher(self, eta: jax.Array, beta: float = 1.0) -> jax.Array:
        """Cov_{p(·|η)}[x] = β⁻² ∇²_η G(η), the Fisher information of the family in the parameter βη
        (theory: docs/theory/expfam.md §3). It is the covariance, not the uncentred second moment.

        Args:
            eta: (D,) natural parameter.
            beta: scale.

        Returns:
            (D, D) symmetric positive semi-definite matrix.
        """

    @abc.abstractmethod
    def sample_base(self, key: jax.Array, n: int) -> jax.Array:
        """n independent draws x ~ h (theory: docs/theory/expfam.md §5).

        Args:
            key: JAX PRNG key.
            n: number of samples.

        Returns:
            (n, D) samples.
        """

    @abc.abstractmethod
    def sample(self, key: jax.Array, eta: jax.Array, n: int, beta: float = 1.0) -> jax.Array:
        """n independent draws x ~ p(· | η) ∝ h(x) e^{β xᵀη} (theory: docs/theory/expfam.md §5).

        Args:
            key: JAX PRNG key.
            eta: (D,) natural parameter.
            n: number of samples.
            beta: scale.

        Returns:
            (n, D) samples.
        """

    @classmethod
    @abc.abstractmethod
    def example(cls, key: jax.Array, dim: int) -> AbstractBaseMeasure:
        """A random, well-conditioned instance in dimension ``dim``, for the property tests and
        ``attnphys verify`` (theory: docs/theory/expfam.md §5).

        Args:
            key: JAX PRNG key.
            dim: dimension D of the support.

        Returns:
            An instance of ``cls``.
        """

    # -- derived quantities (closed forms of the subclasses are used through the methods above) ---

    def grad_log_normalizer(self, eta: jax.Array, beta: float = 1.0) -> jax.Array:
        """∇_η G(η) = β E_{p(·|η)}[x] (theory: docs/theory/expfam.md §3).

        Returns:
            (D,) gradient, from :meth:`mean` (no autodiff).
        """
        return beta * self.mean(eta, beta)

    def conjugate_at(self, eta: jax.Array, beta: float = 1.0) -> jax.Array:
        """The convex conjugate G*(μ) = sup_η' (η'ᵀμ − G(η')) at the point μ = ∇G(η), where the supremum
        is attained (theory: docs/theory/expfam.md §4.2).

        The default is the Legendre identity G*(∇G(η)) = ηᵀ∇G(η) − G(η) = KL(p(·|η) ‖ h); subclasses with
        an independent closed form (the relative entropy of the attention weights, the Gaussian
        quadratic form) override it.

        Returns:
            () the conjugate.
        """
        return eta @ self.grad_log_normalizer(eta, beta) - self.log_normalizer(eta, beta)


def check_eta(eta, dim: int, beta=1.0, name: str = "eta") -> None:
    """Refuse a natural parameter that is not (D,) real numbers, or a scale β that is not a real scalar
    (theory: docs/theory/expfam.md §1).

    Raises:
        InputError: naming ``eta`` (or ``name``) or ``beta``, with the expected shape.
    """
    from attnphys._checks import check_array

    check_array(eta, name, (dim,), what="the natural parameter η of dimension D")
    check_array(beta, "beta", ndim=0, what="the scale β")


def check_weights(weights, n: int, name: str = "weights") -> None:
    """(n,) non-negative weights that sum to 1 (concrete values only).

    Raises:
        InputError: naming ``name``.
    """
    from attnphys._checks import check_array, is_concrete

    if weights is None:
        return
    check_array(weights, name, (n,), what="one weight per support point or component")
    if is_concrete(weights):
        import numpy as np

        w = np.asarray(weights, dtype=float)
        if not np.all(np.isfinite(w)) or np.any(w < 0) or not np.isclose(w.sum(), 1.0, rtol=1e-6, atol=1e-9):
            raise_input(f"must be finite, >= 0 and sum to 1, got sum {w.sum():.6g}", name)


def raise_input(message: str, name: str):
    from attnphys.errors import InputError

    raise InputError(message, name)


def random_spd(key: jax.Array, dim: int, scale: float = 0.5) -> jax.Array:
    """A random symmetric positive-definite (dim, dim) matrix scale·(AAᵀ/D + I/2), A standard normal, so
    that its eigenvalues are ≥ scale/2; used by the ``example`` constructors (theory: docs/theory/expfam.md §5)."""
    A = jax.random.normal(key, (dim, dim))
    return scale * (A @ A.T / dim + 0.5 * jnp.eye(dim, dtype=A.dtype))


def as_log_weights(weights, n: int, dtype) -> jax.Array:
    """(n,) log π of support or mixture weights π (which sum to 1); uniform 1/n when ``weights`` is None."""
    w = jnp.full(n, 1.0 / n, dtype) if weights is None else jnp.asarray(weights, dtype)
    return jnp.log(w)


def measure_classes() -> list[type[AbstractBaseMeasure]]:
    """Every concrete subclass of :class:`AbstractBaseMeasure` defined so far (direct subclasses first,
    then theirs): the property tests and ``attnphys verify`` run over all of them
    (theory: docs/theory/expfam.md §5)."""
    out, todo = [], list(AbstractBaseMeasure.__subclasses__())
    while todo:
        cls = todo.pop(0)
        todo.extend(cls.__subclasses__())
        if not inspect.isabstract(cls) and cls not in out:
            out.append(cls)
    return out

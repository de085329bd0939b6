"""Mean-field theories of the kinetic (parallel-update) Ising model, and its Monte-Carlo moments: naive mean
field, TAP (Plefka[t−1,t]), Plefka[t] and the pairwise Plefka2[t], all second order in the couplings except
the naive one (theory: docs/theory/dynamics.md §12, docs/theory/fluctuations.md §6).

The model: spins s_i(t) = ±1, i = 1…n, all updated at once from the previous configuration,

    P(s_i(t) | s(t−1)) = exp(s_i(t) h_i(t)) / (2 cosh h_i(t)),   h_i(t) = H_i + Σ_j J_ij s_j(t−1),

with any (asymmetric) couplings J (n, n) and fields H (n,). Every method propagates the magnetisations
m_i(t) = ⟨s_i(t)⟩, the equal-time covariances C_ik(t) and the delayed ones D_il(t) = ⟨s_i(t) s_l(t−1)⟩ −
m_i(t) m_l(t−1) from a known start, step by step, in float64.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from attnphys._arguments import checked
from attnphys._checks import real_array
from attnphys.dynamics.checks import memory_of
from attnphys.errors import InputError

KINETIC_ISING_METHODS = {
    "naive": "naive mean field: Plefka[t-1,t] to first order",
    "tap": "TAP: Plefka[t-1,t] to second order",
    "plefka_t": "Plefka[t] to second order (keeps the correlations of t-1)",
    "plefka2_t": "pairwise Plefka2[t] to second order (pairwise reference model)",
}


def _field_root(a: jax.Array, v: jax.Array, iterations: int = 60) -> jax.Array:
    """The root θ of θ = a − v tanh θ (v ≥ 0: the left side minus the right grows monotonically, one root),
    by Newton's method from θ = a."""

    def body(_, th):
        t = jnp.tanh(th)
        return th - (th - a + v * t) / (1.0 + v * (1.0 - t * t))

    return jax.lax.fori_loop(0, iterations, body, a)


def _naive(H, J, m_p, C_p, D_p):
    m = jnp.tanh(H + J @ m_p)
    a = 1 - m**2
    return m, jnp.diag(a), a[:, None] * J * (1 - m_p**2)[None, :]


def _tap(H, J, m_p, C_p, D_p):
    q = 1 - m_p**2
    m = jnp.tanh(_field_root(H + J @ m_p, (J**2) @ q))
    a = 1 - m**2
    C = jnp.outer(a, a) * ((J * q[None, :]) @ J.T)
    C = C.at[jnp.diag_indices_from(C)].set(a)
    D = a[:, None] * J * q[None, :] * (1 + 2 * m[:, None] * J * m_p[None, :])
    return m, C, D


def _plefka_t(H, J, m_p, C_p, D_p):
    JC = J @ C_p
    m = jnp.tanh(_field_root(H + J @ m_p, jnp.sum(JC * J, axis=1)))
    a = 1 - m**2
    C = jnp.outer(a, a) * (JC @ J.T)
    C = C.at[jnp.diag_indices_from(C)].set(a)
    D = a[:, None] * JC + 2 * (m * a)[:, None] * J * JC * m_p[None, :]
    return m, C, D


def _plefka2_t(H, J, m_p, C_p, D_p):
    h = H + J @ m_p
    JC = J @ C_p
    V = jnp.sum(JC * J, axis=1)  # (n,) variance of i's field from the covariances of t−1
    # pair (i, l): i's field conditioned on s_l(t−1), its variance without l's share
    V_il = V[:, None] - 2 * J * JC + J**2 * jnp.diag(C_p)[None, :]
    W_il = J @ D_p @ J.T - J * jnp.sum(J * D_p, axis=1)[None, :]
    shift = J + W_il
    m_il = jnp.zeros_like(J)
    E_il = jnp.zeros_like(J)
    for s in (-1.0, 1.0):
        w = (1 + s * m_p[None, :]) / 2  # probability of s_l(t−1) = s
        t = jnp.tanh(_field_root(h[:, None] + shift * (s - m_p[None, :]), V_il))
        m_il += t * w
        E_il += t * s * w
    m = jnp.mean(m_il, axis=1)
    D = E_il - m_il * m_p[None, :]
    # equal time: i's field conditioned on a spin of mean m_k(t−1) correlated with it through J C Jᵀ
    JCJ = JC @ J.T
    C = jnp.zeros_like(J)
    for s in (-1.0, 1.0):
        w = (1 + s * m_p[None, :]) / 2
        t = jnp.tanh(_field_root(h[:, None] + JCJ * (s - m_p[None, :]), jnp.broadcast_to(V[:, None], J.shape)))
        C += t * (s - m_p[None, :]) * w
    C = (C + C.T) / 2
    C = C.at[jnp.diag_indices_from(C)].set(1 - m**2)
    return m, C, D


_STEPS = {"naive": _naive, "tap": _tap, "plefka_t": _plefka_t, "plefka2_t": _plefka2_t}


_MAX_INT = 2**31 - 1


def _count(value, name: str, least: int) -> int:
    """``value`` as a count in [least, 2³¹ − 1], or an InputError naming ``name`` (booleans and text refused)."""
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, (int, np.integer))
        or not least <= value <= _MAX_INT
    ):
        raise InputError(f"must be an integer in [{least}, {_MAX_INT:,}], got {value!r}", name)
    return int(value)


def _fits(steps: int, n: int, extra: float = 0.0, field: str = "steps") -> None:
    """Refuse, before computing, results (m, C, D over every step: T (n + 2n²) float64) that cannot fit."""
    from attnphys.errors import check_fits

    check_fits(8.0 * steps * (n + 2 * n * n) + extra, "the moments over every step", f"lower `{field}`", field)


def _check(H, J, m0, start: str = "m0") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not jax.config.jax_enable_x64:  # pyright: ignore[reportAttributeAccessIssue]
        raise InputError("the kinetic-Ising methods compute in float64; enable x64 (CLI: without --no-x64)", "x64")
    H = real_array(H, "H")
    J = real_array(J, "J")
    if H.ndim != 1 or H.size < 1:
        raise InputError(f"must be a vector of fields (n,) with n >= 1, got shape {H.shape}", "H")
    if J.shape != (H.size, H.size):
        raise InputError(f"must be a square (n, n) = ({H.size}, {H.size}) coupling matrix, got {J.shape}", "J")
    if not np.all(np.isfinite(H)):
        raise InputError("the fields must be finite", "H")
    if not np.all(np.isfinite(J)):
        raise InputError("the couplings must be finite", "J")
    m0 = np.ones(H.size) if m0 is None else real_array(m0, start)
    if m0.shape != H.shape or not np.all(np.abs(m0) <= 1):  # NaN fails too
        raise InputError(f"must be n = {H.size} magnetisations in [-1, 1], got shape {m0.shape}", start)
    return H, J, m0


def _dataset(m, C, D, steps: int, attrs: dict) -> xr.Dataset:
    n = m.shape[1]
    return xr.Dataset(
        {
            "m": (("step", "spin"), m, {"long_name": "magnetisation <s_i(t)>"}),
            "C": (("step", "spin", "spin_b"), C, {"long_name": "equal-time covariance of s_i(t), s_k(t)"}),
            "D": (("step", "spin", "spin_b"), D, {"long_name": "delayed covariance of s_i(t), s_l(t-1)"}),
        },
        coords={"step": np.arange(1, steps + 1), "spin": np.arange(n), "spin_b": np.arange(n)},
        attrs=attrs,
    )


def kinetic_ising_mean_field(H, J, *, steps: int, method: str = "plefka2_t", m0=None) -> xr.Dataset:
    """The moments of a kinetic Ising model by one mean-field method over ``steps`` parallel updates from a
    start of magnetisations ``m0`` (n,) with independent spins (default: every spin +1), in float64 (theory:
    docs/theory/dynamics.md §12, docs/theory/fluctuations.md §6). With Δ_i the variance of the field h_i that a method keeps:

    * ``naive``: m_i(t) = tanh(H_i + Σ_j J_ij m_j(t−1)); C diagonal; D_il = (1 − m_i²) J_il (1 − m_l²(t−1));
    * ``tap``: m_i = tanh(H_i + Σ_j J_ij m_j(t−1) − m_i Δ_i), Δ_i = Σ_j J_ij² (1 − m_j²(t−1)) (the
      Onsager reaction term), with C and D to second order in J;
    * ``plefka_t``: the same with Δ_i = (J C(t−1) Jᵀ)_ii, the covariances of t−1 kept;
    * ``plefka2_t``: the pairwise reference: m_i and D_il from i's field conditioned on s_l(t−1) ∈ {±1}
      (its shift J_il + (J D(t−1) Jᵀ)_il less l's own share, its variance Δ_i less l's share), averaged
      over s_l; C_ik likewise through (J C(t−1) Jᵀ)_ik.

    Args:
        H: fields (n,). J: couplings (n, n), J_ij from j to i (any asymmetry). steps: updates T ≥ 1.
        method: one of :data:`KINETIC_ISING_METHODS`. m0: start (n,) in [−1, 1].

    Returns:
        Dataset with ``m`` (step, spin), ``C`` and ``D`` (step, spin, spin_b), steps 1…T.

    Raises:
        InputError: naming the argument.
    """
    if not isinstance(method, str) or method not in _STEPS:
        raise InputError(f"unknown method {method!r}; choose one of {sorted(_STEPS)}", "method")
    steps = _count(steps, "steps", 1)
    H, J, m0 = _check(H, J, m0)
    _fits(steps, H.size)
    step = _STEPS[method]

    def body(carry, _):
        m, C, D = step(jnp.asarray(H), jnp.asarray(J), *carry)
        return (m, C, D), (m, C, D)

    init = (jnp.asarray(m0), jnp.diag(jnp.asarray(1 - m0**2)), jnp.zeros((H.size, H.size)))
    _, (m, C, D) = jax.jit(lambda c: jax.lax.scan(body, c, None, length=int(steps)))(init)
    return _dataset(
        np.asarray(m),
        np.asarray(C),
        np.asarray(D),
        int(steps),
        {"method": method, "description": KINETIC_ISING_METHODS[method]},
    )


def kinetic_ising_sample(H, J, *, steps: int, samples: int, seed: int = 0, s0=None, batch: int = 4096) -> xr.Dataset:
    """The same moments measured over ``samples`` independent runs of the kinetic Ising model from the
    configuration ``s0`` (n,) of ±1 (default: every spin +1): the Monte-Carlo reference of
    :func:`kinetic_ising_mean_field` (theory: docs/theory/dynamics.md §12, docs/theory/fluctuations.md §6). Runs are drawn in batches of
    ``batch``; batch b uses the key fold_in(PRNGKey(seed), b). Standard errors of m: ``m_se``.

    Returns:
        Dataset with ``m``, ``m_se`` (step, spin), ``C`` and ``D`` (step, spin, spin_b), steps 1…T.
    """
    samples = _count(samples, "samples", 2)
    steps = _count(steps, "steps", 1)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
        raise InputError(f"must be an integer in [0, 2^32), got {seed!r}", "seed")
    batch = _count(batch, "batch", 1)
    H, J, m0 = _check(H, J, s0, "s0")
    if s0 is not None and not np.all(np.abs(m0) == 1):
        raise InputError("must be a configuration of +1 and -1", "s0")
    n = H.size
    # the moments of every step, twice (a batch's and the running sum), and a batch's spins and draws per step
    _fits(steps, n, 8.0 * steps * (n + 2 * n * n) + 16.0 * steps * batch * n)
    Hj, Jj = jnp.asarray(H), jnp.asarray(J)

    @jax.jit
    def run(key, count):
        s = jnp.broadcast_to(jnp.asarray(m0), (batch, n))
        mask = (jnp.arange(batch) < count)[:, None].astype(s.dtype)

        def body(s, k):
            h = Hj[None, :] + s @ Jj.T
            new = jnp.where(jax.random.uniform(k, s.shape) < (1 + jnp.tanh(h)) / 2, 1.0, -1.0)
            sm, nm = s * mask, new * mask
            return new, (nm.sum(0), (nm**2).sum(0), nm.T @ nm, nm.T @ sm, sm.sum(0))

        return jax.lax.scan(body, s, jax.random.split(key, steps))[1]

    tot = None
    done = 0
    b = 0
    while done < samples:
        count = min(batch, samples - done)
        part = run(jax.random.fold_in(jax.random.PRNGKey(seed), b), count)
        part = [np.asarray(p) for p in part]
        tot = part if tot is None else [x + y for x, y in zip(tot, part, strict=True)]
        done += count
        b += 1
    assert tot is not None
    S, S2, SS, SSp, Sp = (x / samples for x in tot)
    m = S
    C = SS - m[:, :, None] * m[:, None, :]
    D = SSp - m[:, :, None] * Sp[:, None, :]
    m_se = np.sqrt(np.maximum(S2 - m**2, 0) / (samples - 1))
    ds = _dataset(m, C, D, int(steps), {"method": "monte-carlo", "samples": int(samples), "seed": int(seed)})
    ds["m_se"] = (("step", "spin"), m_se, {"long_name": "standard error of m"})
    return ds


def kinetic_ising_exact(H, J, *, steps: int, s0=None) -> xr.Dataset:
    """The exact moments of a small kinetic Ising model (n ≤ 14) from the configuration ``s0`` (default: every
    spin +1), by propagating the distribution over all 2ⁿ configurations with the transition matrix
    W(s′ | s) = Π_i exp(s′_i h_i(s)) / (2 cosh h_i(s)) (theory: docs/theory/dynamics.md §12, docs/theory/fluctuations.md §6).

    Returns:
        Dataset with ``m`` (step, spin), ``C`` and ``D`` (step, spin, spin_b), steps 1…T.
    """
    steps = _count(steps, "steps", 1)
    H, J, m0 = _check(H, J, s0, "s0")
    n = H.size
    if n > 14:
        raise InputError(f"exact enumeration of 2^n configurations is for n <= 14, got n = {n}", "H")
    _fits(steps, n)
    if s0 is not None and not np.all(np.abs(m0) == 1):
        raise InputError("must be a configuration of +1 and -1", "s0")
    S = 1.0 - 2.0 * ((np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1)  # (2ⁿ, n) configurations
    h = H[None, :] + S @ J.T  # (2ⁿ, n) fields given the previous configuration
    logW = S @ h.T - np.sum(np.logaddexp(h, -h), axis=1)[None, :]  # (s′, s)
    W = np.exp(logW)
    p = np.all(S == m0[None, :], axis=1).astype(float)
    m, C, D = [], [], []
    for _ in range(int(steps)):
        joint = W * p[None, :]  # P(s(t) = s′, s(t−1) = s)
        q = joint.sum(1)
        mt, mp = S.T @ q, S.T @ p
        m.append(mt)
        C.append(S.T @ (q[:, None] * S) - np.outer(mt, mt))
        D.append(S.T @ joint @ S - np.outer(mt, mp))
        p = q
    return _dataset(np.array(m), np.array(C), np.array(D), int(steps), {"method": "exact"})


@checked(memory=lambda a: memory_of(8 * 4 * a["n"] ** 2, "the couplings", "use a smaller n", a, "n"))
def asymmetric_sk(n: int, *, beta: float = 1.0, j0: float = 1.0, js: float = 0.1, h0: float = 0.5, seed: int = 0):
    """Fields and couplings of the asymmetric Sherrington–Kirkpatrick benchmark of kinetic mean-field methods:
    J_ij = β (j0/n + js ξ_ij/√n) with independent standard normal ξ (J_ij and J_ji independent), H_i = β h0 u_i
    with u_i uniform on [−1, 1] (theory: docs/theory/dynamics.md §12, docs/theory/fluctuations.md §6). Returns (H (n,), J (n, n))."""
    n = _count(n, "n", 2)
    for name, v in (("beta", beta), ("j0", j0), ("js", js), ("h0", h0)):
        if (
            isinstance(v, (bool, np.bool_))
            or not isinstance(v, (int, float, np.integer, np.floating))
            or not np.isfinite(v)
        ):
            raise InputError(f"must be a finite number, got {v!r}", name)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"must be an integer >= 0, got {seed!r}", "seed")
    from attnphys.errors import check_fits

    check_fits(16.0 * n * n, "the couplings (n, n) in float64", "lower `n`", "n")
    rng = np.random.default_rng(seed)
    H = beta * h0 * (2 * rng.random(n) - 1)
    J = beta * (j0 / n + js * rng.standard_normal((n, n)) / np.sqrt(n))
    return H, J


def kinetic_ising_errors(pred: xr.Dataset, ref: xr.Dataset) -> xr.Dataset:
    """Mean squared errors of a method's moments against a reference over spins (and spin pairs, the diagonal
    of C included): ``error_m``, ``error_C``, ``error_D`` per step, and their means over steps as attributes
    (theory: docs/theory/dynamics.md §12).

    Raises:
        InputError: ``pred`` or ``ref`` is not a dataset of moments (``m``, ``C``, ``D``), or the two differ in
            their steps or spins (naming ``ref``)."""
    for name, ds in (("pred", pred), ("ref", ref)):
        if not isinstance(ds, xr.Dataset) or any(k not in ds for k in ("m", "C", "D")):
            raise InputError("must be a dataset of moments m, C and D (a result of the kinetic-Ising functions)", name)
    for dim in ("step", "spin"):
        a, b = np.asarray(pred[dim].values), np.asarray(ref[dim].values)
        if a.shape != b.shape or not np.array_equal(a, b):
            raise InputError(
                f"has other {dim}s than pred ({b.size} from {b[:1].tolist()} against {a.size} from {a[:1].tolist()})",
                "ref",
            )
    out = xr.Dataset(
        {
            "error_m": ((pred.m - ref.m) ** 2).mean("spin"),
            "error_C": ((pred.C - ref.C) ** 2).mean(("spin", "spin_b")),
            "error_D": ((pred.D - ref.D) ** 2).mean(("spin", "spin_b")),
        }
    )
    out.attrs = {k: float(out[k].mean()) for k in ("error_m", "error_C", "error_D")}
    return out

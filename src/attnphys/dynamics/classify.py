"""Attractor classification from an orbit window and Lyapunov exponents, with the evidence
(theory: docs/theory/dynamics.md §4).

Labels (in :data:`REGIMES` order, stored as integer codes; new codes are only ever appended):

* ``divergent`` — the orbit became non-finite or left the ball |y| ≤ ``bound``;
* ``fixed_point`` / ``periodic`` — an exact period p ≤ ``max_period`` is found on the observable *and*
  on the fingerprint of the full state (:mod:`attnphys.dynamics.fingerprint`; §4.1): y_{t+p} = y_t within
  ``period_tol`` at every t of the window, with at least ``confirmations`` full repeats (p = 1 is a
  fixed point); a periodic orbit longer than ``max_period`` is ``periodic`` with period −1 when
  λ₁ < −θ;
* ``quasi_periodic`` — no period and |λ₁| ≤ θ;
* ``chaotic`` — λ₁ > θ; ``hyperchaotic`` — also λ₂ > θ;
* ``undetermined`` — no exponents, no period confirmed, and either the window recurs exactly at a lag
  too long to confirm (a period longer than the detection window) or the 0–1 test is undefined.

Without exponents, the 0–1 test decides between chaotic (K > 0.5) and quasi-periodic. The 0–1
test for chaos (Gottwald & Melbourne 2004, 2009; correlation method with the oscillatory term
removed; §4.3) is computed for every orbit and reported as ``K``; ``agree`` (int8) is 1 when its verdict
(K > 0.5: chaos) matches the label, 0 when it does not, and −1 (undefined) when K is NaN or the label
is divergent or undetermined.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.fft

REGIMES: tuple[str, ...] = (
    "divergent",
    "fixed_point",
    "periodic",
    "quasi_periodic",
    "chaotic",
    "hyperchaotic",
    "undetermined",
)
REGIME_CODE = {name: i for i, name in enumerate(REGIMES)}


@dataclass(frozen=True)
class ClassifyOptions:
    """Thresholds of the classification (theory: docs/theory/dynamics.md §4.2).

    theta: θ, the exponent threshold: λ₁ > θ is chaos, |λ₁| ≤ θ quasi-periodic, λ₁ < −θ (without a
        detected period) a periodic orbit longer than ``max_period``. The default 5e−4 is five times the
        DMFT reference's 1e−4: a quasi-periodic orbit's finite-time λ₁ carries an O(1/T) bias (≈ 1e−4…3e−4
        for the 10⁴-step windows in use), which θ = 1e−4 would call chaos. Near a bifurcation, where λ₁
        of a long-period orbit or weak chaos passes through 0, the parameter band labelled quasi-periodic is
        correspondingly wider here: points with 1e−4 < |λ₁| ≤ 5e−4 are quasi-periodic here but chaotic
        (λ₁ > 0) or periodic (λ₁ < 0) in the reference. Orbits with an exact period are not affected.
    period_tol: relative tolerance of an exact period (max-norm, relative to max(1, max|y|)).
    max_period: longest period searched. confirmations: full repeats required beyond the first period.
    bound: |y| beyond this is divergent. n_c, seed: the 0–1 test's frequencies.
    min_overlap: shortest overlap for the recurrence at a lag too long to confirm (``undetermined``).
    """

    theta: float = 5e-4
    period_tol: float = 1e-8
    max_period: int = 256
    confirmations: int = 3
    bound: float = 1e6
    n_c: int = 64
    seed: int = 0
    min_overlap: int = 8


def detect_period(y: np.ndarray, tol: float = 1e-8, max_period: int = 256, confirmations: int = 3) -> np.ndarray:
    """Smallest p with |y_{t+p} − y_t| ≤ tol·max(1, max|y|) (max-norm) for all t in the window, else 0
    (theory: docs/theory/dynamics.md §4.1).

    Args:
        y: (..., n, F) orbit windows (time on axis −2).
        confirmations: the window must hold at least this many repeats beyond the first period
            (p ≤ n / (confirmations + 1)).

    Returns:
        (...,) int periods (0: none found).
    """
    y = np.asarray(y, dtype=np.float64)
    n = y.shape[-2]
    pmax = min(max_period, n // (confirmations + 1))
    batch = y.shape[:-2]
    flat = y.reshape((-1,) + y.shape[-2:])
    period = np.zeros(flat.shape[0], dtype=np.int64)
    if pmax < 1 or flat.shape[0] == 0:
        return period.reshape(batch)
    thr = tol * np.maximum(1.0, np.nanmax(np.abs(flat), axis=(-2, -1)))
    # necessary condition, cheap: the last sample recurs p steps earlier; full check only for those
    last = np.max(np.abs(flat[:, -1 - np.arange(1, pmax + 1), :] - flat[:, -1:, :]), axis=-1)  # (B, pmax)
    candidate = last <= thr[:, None]
    undecided = np.ones(flat.shape[0], dtype=bool)
    for p in np.flatnonzero(candidate.any(axis=0)) + 1:
        rows = np.flatnonzero(undecided & candidate[:, p - 1])
        if rows.size == 0:
            continue
        err = np.max(np.abs(flat[rows, p:, :] - flat[rows, :-p, :]), axis=(-2, -1))
        ok = rows[err <= thr[rows]]
        period[ok] = p
        undecided[ok] = False
    return period.reshape(batch)


def zero_one_test(phi: np.ndarray, n_c: int = 64, seed: int = 0) -> np.ndarray:
    """The 0–1 test for chaos, K ≈ 0 for regular and K ≈ 1 for chaotic dynamics
    (theory: docs/theory/dynamics.md §4.3).

    For c drawn uniformly in (π/5, 4π/5): p_c(n) = Σ_{j≤n} φ_j cos(jc), q_c(n) = Σ_{j≤n} φ_j sin(jc);
    mean-square displacement M_c(n) over n ≤ N/10 (computed with FFT autocorrelations),
    D_c(n) = M_c(n) − (Eφ)² (1 − cos nc)/(1 − cos c); K_c = corr(n, D_c(n)); K = median_c K_c.

    Args:
        phi: (..., N) scalar series. Returns (...,) K (NaN for a constant series or N < 20).
    """
    phi = np.asarray(phi, dtype=np.float64)
    N = phi.shape[-1]
    if N < 20:
        return np.full(phi.shape[:-1], np.nan)
    ncut = max(N // 10, 2)
    rng = np.random.default_rng(seed)
    cs = rng.uniform(np.pi / 5, 4 * np.pi / 5, size=n_c)
    j = np.arange(1, N + 1)
    nn = np.arange(1, ncut + 1)
    mean2 = np.mean(phi, axis=-1) ** 2
    Ks = []
    for c in cs:
        z = np.cumsum(phi[..., :] * np.exp(1j * j * c), axis=-1)  # p + i q
        msd = _mean_square_displacement(z, ncut)
        D = msd - mean2[..., None] * (1 - np.cos(nn * c)) / (1 - np.cos(c))
        Ks.append(_corr(nn, D))
    K = np.median(np.stack(Ks, axis=0), axis=0)
    return np.where(np.isfinite(K), K, np.nan)


def _mean_square_displacement(z: np.ndarray, ncut: int) -> np.ndarray:
    """M(n) = mean_{j < N−n} |z_{j+n} − z_j|², n = 1..ncut, via FFT: O(N log N)."""
    N = z.shape[-1]
    a2 = np.abs(z) ** 2
    c = np.cumsum(a2, axis=-1)
    total = c[..., -1:]
    n = np.arange(1, ncut + 1)
    # Σ_{j<N-n} |z_{j+n}|² and Σ_{j<N-n} |z_j|²
    head = c[..., N - n - 1]
    tail = total - c[..., n - 1]
    nfft = scipy.fft.next_fast_len(N + ncut + 1)
    f = scipy.fft.fft(z, nfft, axis=-1, workers=-1)
    # Σ_j Re(conj(z_j) z_{j+n}) (scipy.fft's dispatched functions are typed as returning their dispatch tuples)
    cross = scipy.fft.ifft(np.conj(f) * f, axis=-1, workers=-1)[..., 1 : ncut + 1].real  # pyright: ignore[reportCallIssue, reportArgumentType]
    return (tail + head - 2 * cross) / (N - n)


def _corr(x: np.ndarray, Y: np.ndarray) -> np.ndarray:
    xc = x - x.mean()
    Yc = Y - Y.mean(axis=-1, keepdims=True)
    denom = np.sqrt((xc**2).sum() * (Yc**2).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (Yc * xc).sum(axis=-1) / denom


def recurrence_lag(y: np.ndarray, tol: float = 1e-8, min_lag: int = 1, min_overlap: int = 8) -> np.ndarray:
    """Smallest lag p ≥ ``min_lag`` at which the whole window recurs, |y_{t+p} − y_t| ≤ tol·max(1, max|y|)
    for every t < n − p, with an overlap n − p ≥ ``min_overlap``; 0 if none
    (theory: docs/theory/dynamics.md §4.1). Used for periods too long to confirm.

    Args:
        y: (..., n, F). Returns (...,) int lags.
    """
    y = np.asarray(y, dtype=np.float64)
    n = y.shape[-2]
    batch = y.shape[:-2]
    flat = y.reshape((-1,) + y.shape[-2:])
    lag = np.zeros(flat.shape[0], dtype=np.int64)
    lags = np.arange(max(min_lag, 1), n - min_overlap + 1)
    if lags.size == 0 or flat.shape[0] == 0:
        return lag.reshape(batch)
    thr = tol * np.maximum(1.0, np.nanmax(np.abs(flat), axis=(-2, -1)))
    last = np.max(np.abs(flat[:, -1 - lags, :] - flat[:, -1:, :]), axis=-1)  # (B, n_lags)
    candidate = last <= thr[:, None]
    undecided = np.ones(flat.shape[0], dtype=bool)
    for j in np.flatnonzero(candidate.any(axis=0)):
        p = int(lags[j])
        rows = np.flatnonzero(undecided & candidate[:, j])
        if rows.size == 0:
            continue
        err = np.max(np.abs(flat[rows, p:, :] - flat[rows, :-p, :]), axis=(-2, -1))
        ok = rows[err <= thr[rows]]
        lag[ok] = p
        undecided[ok] = False
    return lag.reshape(batch)


def _normalised(y: np.ndarray) -> np.ndarray:
    """y / max(1, max|y|) per window: the relative tolerance of each feature group then reads the same."""
    return y / np.maximum(1.0, np.max(np.abs(y), axis=(-2, -1), keepdims=True))


def classify(
    orbit: np.ndarray,
    exponents: np.ndarray | None = None,
    nonfinite: np.ndarray | None = None,
    options: ClassifyOptions = ClassifyOptions(),
    fingerprint: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Classify a batch of attractors (theory: docs/theory/dynamics.md §4).

    Args:
        orbit: (..., n, F) recorded windows of the observable. exponents: (..., k) Lyapunov exponents
            (descending) or None. nonfinite: (...,) first non-finite step (−1: none) or None.
        fingerprint: (..., n, G) fingerprints of the full state at the same steps (``orbit()`` returns
            them) or None; periods are then those of (observable, fingerprint) together (§4.1).

    Returns:
        dict of (...,) arrays: ``regime`` (int8 code into :data:`REGIMES`), ``period`` (0: none found,
        −1: periodic with period > max_period), ``period_observable`` (period of the observable alone),
        ``recurrence`` (a lag too long to confirm at which the window recurs, 0: none), ``lambda1``,
        ``lambda2`` (NaN if not available), ``K`` (0–1 test on feature 0), ``agree`` (int8: 1 the 0–1
        verdict matches the label, 0 it does not, −1 undefined).
    """
    orbit = np.asarray(orbit, dtype=np.float64)
    batch = orbit.shape[:-2]
    o = options
    finite = np.all(np.isfinite(orbit), axis=(-2, -1))
    if fingerprint is not None:
        fingerprint = np.asarray(fingerprint, dtype=np.float64)
        finite &= np.all(np.isfinite(fingerprint), axis=(-2, -1))
    if nonfinite is not None:
        finite &= np.asarray(nonfinite) < 0
    safe = np.where(finite[..., None, None], orbit, 0.0)
    divergent = ~finite | (np.max(np.abs(safe), axis=(-2, -1)) > o.bound)
    period_obs = detect_period(safe, o.period_tol, o.max_period, o.confirmations)
    if fingerprint is not None:
        fsafe = np.where(finite[..., None, None], fingerprint, 0.0)
        divergent |= np.max(np.abs(fsafe), axis=(-2, -1)) > o.bound
        joint = np.concatenate([_normalised(safe), _normalised(fsafe)], axis=-1)
        period = detect_period(joint, o.period_tol, o.max_period, o.confirmations)
    else:
        joint = safe
        period = period_obs
    n = orbit.shape[-2]
    pmax = min(o.max_period, n // (o.confirmations + 1))
    recurrence = np.where(period == 0, recurrence_lag(joint, o.period_tol, pmax + 1, o.min_overlap), 0)
    K = zero_one_test(safe[..., 0], n_c=o.n_c, seed=o.seed)
    lam1 = lam2 = np.full(batch, np.nan)
    if exponents is not None:
        ex = np.asarray(exponents, dtype=np.float64)
        lam1 = ex[..., 0]
        lam2 = ex[..., 1] if ex.shape[-1] > 1 else np.full(batch, np.nan)
    have_lyap = ~np.isnan(lam1)
    chaotic = np.where(have_lyap, lam1 > o.theta, K > 0.5)
    hyper = have_lyap & chaotic & ~np.isnan(lam2) & (lam2 > o.theta)
    contracting = have_lyap & (lam1 < -o.theta)

    regime = np.full(batch, REGIME_CODE["quasi_periodic"], dtype=np.int8)
    regime[chaotic] = REGIME_CODE["chaotic"]
    regime[hyper] = REGIME_CODE["hyperchaotic"]
    undetermined = ~have_lyap & (period == 0) & ((recurrence > 0) | np.isnan(K))
    regime[undetermined] = REGIME_CODE["undetermined"]
    long_period = (period == 0) & contracting
    regime[long_period] = REGIME_CODE["periodic"]
    period = np.where(long_period, -1, period)
    regime[period > 1] = REGIME_CODE["periodic"]
    regime[period == 1] = REGIME_CODE["fixed_point"]
    regime[divergent] = REGIME_CODE["divergent"]
    period = np.where(divergent, 0, period)
    chaos_like = np.isin(regime, [REGIME_CODE["chaotic"], REGIME_CODE["hyperchaotic"]])
    undefined = np.isnan(K) | divergent | (regime == REGIME_CODE["undetermined"])
    agree = np.where(undefined, -1, ((K > 0.5) == chaos_like).astype(np.int8)).astype(np.int8)
    return dict(
        regime=regime,
        period=period,
        period_observable=np.where(divergent, 0, period_obs),
        recurrence=np.where(divergent, 0, recurrence),
        lambda1=lam1,
        lambda2=lam2,
        K=K,
        agree=agree,
    )


def regime_counts(codes: np.ndarray) -> str:
    """``name: count`` of every regime among the codes, in code order, padding (−1) left out
    (theory: docs/theory/dynamics.md §4)."""
    values, counts = np.unique(np.asarray(codes), return_counts=True)
    return ", ".join(f"{REGIMES[c]}: {n}" for c, n in zip(values, counts) if c >= 0)


def regime_names(codes: np.ndarray) -> np.ndarray:
    """Integer codes → label strings (theory: docs/theory/dynamics.md §4)."""
    return np.asarray(REGIMES, dtype=object)[np.asarray(codes, dtype=int)]

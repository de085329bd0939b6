"""Attractor classification from an orbit window and Lyapunov exponents, with the evidence
(theory: docs/theory/dynamics.md §4).

Labels (in :data:`REGIMES` order, stored as integer codes; new codes are only ever appended):

* ``divergent`` — the orbit became non-finite or left the ball |y| ≤ ``bound``;
* ``fixed_point`` / ``periodic`` — an exact period p ≤ ``max_period`` is found on the observable *and*
  on the fingerprint of the full state (:mod:`attnphys.dynamics.fingerprint`; §4.1): y_{t+p} = y_t within
  ``period_tol`` at every t of the window's settled tail (:func:`settled_period`: an unsettled head of up
  to half the window is discounted, and the 0–1 test is read on the tail), with at least
  ``confirmations`` full repeats (p = 1 is a fixed point); a periodic orbit longer than ``max_period`` is ``periodic`` with period −1 when
  λ₁ < −θ and neither an exact recurrence at a long lag nor the 0–1 test says otherwise;
* ``quasi_periodic`` — no period, |λ₁| ≤ θ and the 0–1 test says regular (K < ``k_regular``);
* ``chaotic`` — λ₁ > θ and the 0–1 test does not say regular (its "regular" counts only on a record of at
  least ``min_lyapunov_times`` Lyapunov times, n·λ₁, when λ₁ > ``clear_factor``·θ); ``hyperchaotic`` —
  also λ₂ > θ;
* ``undetermined`` — the evidence does not decide (§4.4): the exponent and a clear 0–1 verdict (K below
  ``k_regular`` or above ``k_chaotic``) disagree; the exponent is within its resolution (|λ₁| ≤ θ) and the
  0–1 test is undefined or inconclusive; or, without exponents, the window recurs exactly at a lag too long
  to confirm or the 0–1 test is undefined.

Without exponents, the 0–1 test decides between chaotic (K > 0.5) and quasi-periodic. The 0–1
test for chaos (Gottwald & Melbourne 2004, 2009; correlation method with the oscillatory term
removed; §4.3) is computed for every orbit and reported as ``K``; ``agree`` (int8) is 1 when its verdict
matches the label, 0 when it does not, and −1 (undefined) when K is NaN or inconclusive or the label is
divergent or undetermined. ``regime_reason`` (codes of :data:`REGIME_REASONS`) says which evidence
decided the label. The CF attributes of these variables (``flag_values``/``flag_meanings`` for the
codes, a ``comment`` for every sentinel) are defined once here (:data:`CLASSIFY_ATTRS`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided
from numpy.lib.stride_tricks import sliding_window_view as windows

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

REGIME_REASONS: tuple[str, ...] = (
    "exact_period",
    "divergent",
    "exponent_and_zero_one_test",
    "exponent_alone",
    "zero_one_test_alone",
    "long_recurrence_and_exponent",
    "evidence_disagrees",
    "exponent_within_resolution",
    "recurrence_too_long",
    "no_evidence",
)
"""Why a label was given (``regime_reason`` codes; theory: docs/theory/dynamics.md §4.4): an exact period;
divergence; the exponent and the 0–1 test agree; the exponent alone (|λ₁| > θ, the 0–1 test undefined or
inconclusive); the 0–1 test alone (no exponents); a contracting orbit that recurs exactly at a lag too long
to confirm (period −1). Undetermined: the exponent and a clear 0–1 verdict disagree; |λ₁| ≤ θ with the 0–1
test undefined or inconclusive; no exponents and a recurrence too long to confirm; no exponents and no 0–1
test."""
REASON_CODE = {name: i for i, name in enumerate(REGIME_REASONS)}


def flag_attrs(names, dtype=np.int8, fill: int | None = -1, fill_meaning: str = "not_computed") -> dict:
    """CF ``flag_values`` / ``flag_meanings`` of integer codes 0…len(names)−1, with the fill value listed
    too when given (theory: docs/theory/dynamics.md §4.4). xarray and CF tools read them to name the codes."""
    values = ([fill] if fill is not None else []) + list(range(len(names)))
    meanings = ([fill_meaning] if fill is not None else []) + list(names)
    return {"flag_values": np.asarray(values, dtype=dtype), "flag_meanings": " ".join(meanings)}


def flag_names(attrs: dict) -> dict[int, str]:
    """code → name from CF ``flag_values`` / ``flag_meanings`` attributes (theory: docs/theory/dynamics.md §4.4)."""
    return {int(v): m for v, m in zip(np.atleast_1d(attrs["flag_values"]), str(attrs["flag_meanings"]).split())}


REGIME_ATTRS: dict = {
    **flag_attrs(REGIMES),
    "comment": "-1: not computed (a sweep point not yet run). undetermined: the evidence does not decide "
    "(see regime_reason)",
}
"""CF attributes of a ``regime`` variable (int8 codes of :data:`REGIMES`)."""

CLASSIFY_ATTRS: dict[str, dict] = {
    "regime": {"long_name": "attractor type", **REGIME_ATTRS},
    "regime_reason": {
        "long_name": "evidence that decided the attractor type",
        **flag_attrs(REGIME_REASONS),
        "comment": "-1: not computed",
    },
    "period": {
        "long_name": "exact period of the orbit",
        "units": "step",
        "comment": "0: no period found (or divergent); -1: periodic with a period longer than max_period "
        "(contracting, lambda1 < -theta, without a confirmed period; the lag at which the window recurs "
        "exactly, when it does, is in recurrence)",
    },
    "period_observable": {
        "long_name": "exact period of the observable alone",
        "units": "step",
        "comment": "0: no period found (or divergent)",
    },
    "recurrence": {
        "long_name": "lag at which the window recurs exactly, too long to confirm as a period",
        "units": "step",
        "comment": "0: no such lag (or a period was confirmed, or divergent)",
    },
    "lambda1": {"long_name": "leading Lyapunov exponent", "units": "1/step", "comment": "NaN: not computed"},
    "lambda2": {"long_name": "second Lyapunov exponent", "units": "1/step", "comment": "NaN: not computed"},
    "K": {
        "long_name": "0-1 test for chaos statistic",
        "comment": "about 0: regular, about 1: chaotic (verdict: K > 0.5); NaN: undefined (a constant, "
        "non-finite or too short series)",
    },
    "agree": {
        "long_name": "0-1 test verdict agrees with the attractor type",
        **flag_attrs(("disagrees", "agrees"), fill=-1, fill_meaning="undefined"),
        "comment": "-1: undefined (K is NaN or, beside exponents, inconclusive: between k_regular and k_chaotic; "
        "or the type is divergent or undetermined)",
    },
}
"""CF attributes of every variable :func:`classify` returns (one table: the sweep tasks' schemas and
census datasets take theirs from here)."""


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
    k_regular, k_chaotic: beside exponents, the 0–1 test says regular below ``k_regular``, chaotic above
        ``k_chaotic`` and is inconclusive between (K tends to 0 or 1 only as the record grows; §4.4): it can
        contradict an exponent only outside that band. Without exponents the verdict is K > 0.5.
    min_lyapunov_times, clear_factor: beside a clearly positive exponent, λ₁ > ``clear_factor``·θ (4e−3 by
        default: an order of magnitude beyond the finite-time bias of quasi-periodic orbits), a regular 0–1
        verdict counts only when the record spans at least ``min_lyapunov_times`` Lyapunov times (n·λ₁):
        weak chaos decorrelates on the scale 1/λ₁, and a record of a few Lyapunov times looks regular to
        the test (the logistic map at r = 3.85, λ₁ ≈ 0.006, gives K ≈ 0 on 2,000 samples, and on its
        banded attractor even on 20,000); the exponent decides then (§4.4).
    """

    theta: float = 5e-4
    period_tol: float = 1e-8
    max_period: int = 256
    confirmations: int = 3
    bound: float = 1e6
    n_c: int = 64
    seed: int = 0
    min_overlap: int = 8
    k_regular: float = 0.3
    k_chaotic: float = 0.7
    min_lyapunov_times: float = 100.0
    clear_factor: float = 8.0


def _period_candidates(flat: np.ndarray, pmax: int, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """The repeat threshold of each orbit (B,) — ``tol`` times its largest magnitude, at least ``tol`` — and the
    periods worth a full check (B, pmax): the necessary, cheap condition that the last sample recurs p steps
    earlier (theory: docs/theory/dynamics.md §4.1)."""
    thr = tol * np.maximum(1.0, np.nanmax(np.abs(flat), axis=(-2, -1)))
    last = np.max(np.abs(flat[:, -1 - np.arange(1, pmax + 1), :] - flat[:, -1:, :]), axis=-1)  # (B, pmax)
    return thr, last <= thr[:, None]


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
    thr, candidate = _period_candidates(flat, pmax, tol)
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


SETTLED_FRACTION = 0.5
"""The shortest settled tail, as a fraction of the window, on which :func:`settled_period` accepts a
period (theory: docs/theory/dynamics.md §4.1): an unsettled head of up to half the window is discounted."""


def settled_period(
    y: np.ndarray,
    tol: float = 1e-8,
    max_period: int = 256,
    confirmations: int = 3,
    min_fraction: float = SETTLED_FRACTION,
) -> tuple[np.ndarray, np.ndarray]:
    """The smallest period p of the window's settled tail, and where that tail starts (theory:
    docs/theory/dynamics.md §4.1): the tail y[s:] is the longest suffix with |y_{t+p} − y_t| ≤
    tol·max(1, max|y|) (max-norm) for every t ≥ s; p counts when the tail holds at least ``confirmations``
    repeats beyond the first period and covers at least ``min_fraction`` of the window. An orbit recorded
    before it settled (a record without a transient) then shows its attractor's period, where the test
    of the whole window (:func:`detect_period`, s = 0) finds none.

    Args:
        y: (..., n, F) orbit windows (time on axis −2).

    Returns:
        (...,) int periods (0: none found) and (...,) int starts s of the settled tails (0 where no period
        was found, or where the whole window repeats).
    """
    y = np.asarray(y, dtype=np.float64)
    n = y.shape[-2]
    batch = y.shape[:-2]
    flat = y.reshape((-1,) + y.shape[-2:])
    period = np.zeros(flat.shape[0], dtype=np.int64)
    start = np.zeros(flat.shape[0], dtype=np.int64)
    shortest = max(1, int(np.ceil(min_fraction * n)))
    pmax = min(max_period, n // (confirmations + 1))
    if pmax < 1 or flat.shape[0] == 0:
        return period.reshape(batch), start.reshape(batch)
    thr, candidate = _period_candidates(flat, pmax, tol)
    undecided = np.ones(flat.shape[0], dtype=bool)
    for p in np.flatnonzero(candidate.any(axis=0)) + 1:
        rows = np.flatnonzero(undecided & candidate[:, p - 1])
        if rows.size == 0:
            continue
        bad = np.max(np.abs(flat[rows, p:, :] - flat[rows, :-p, :]), axis=-1) > thr[rows, None]  # (b, n − p)
        # the tail starts after the last t that breaks the repeat (y[s:] repeats: t = s … n − p − 1)
        s = np.where(bad.any(axis=-1), n - p - np.argmax(bad[:, ::-1], axis=-1), 0)
        length = n - s
        ok = (length >= (confirmations + 1) * p) & (length >= shortest)
        period[rows[ok]] = p
        start[rows[ok]] = s[ok]
        undecided[rows[ok]] = False
    return period.reshape(batch), start.reshape(batch)


ZERO_ONE_BLOCK = 256
"""Series per block of :func:`zero_one_test`: its (block, n_cut, n_cut) window sums stay a few tens of MB."""


def zero_one_test(phi: np.ndarray, n_c: int = 64, seed: int = 0) -> np.ndarray:
    """The 0–1 test for chaos, K ≈ 0 for regular and K ≈ 1 for chaotic dynamics
    (theory: docs/theory/dynamics.md §4.3).

    For c drawn uniformly in (π/5, 4π/5): p_c(n) + i q_c(n) = Σ_{j≤n} φ_j e^{ijc}; the mean-square
    displacement M_c(n) = mean_{t<N−n} |p_c(t+n) + i q_c(t+n) − p_c(t) − i q_c(t)|² for n ≤ n_cut = N/10,
    D_c(n) = M_c(n) − (Eφ)² (1 − cos nc)/(1 − cos c); K_c = corr(n, D_c(n)); K = median_c K_c. M_c(n) is
    (N − n)⁻¹ Σ_{d<n} w_d cos(dc) G_n(d) with window sums G_n(d) that do not depend on c
    (:func:`_window_sums`), so all frequencies cost one matrix product.

    Args:
        phi: (..., N) scalar series. Returns (...,) K (NaN for a constant or non-finite series or N < 20).
    """
    phi = np.asarray(phi, dtype=np.float64)
    N = phi.shape[-1]
    batch = phi.shape[:-1]
    if N < 20:
        return np.full(batch, np.nan)
    flat = phi.reshape(-1, N)
    ncut = max(N // 10, 2)
    cs = np.random.default_rng(seed).uniform(np.pi / 5, 4 * np.pi / 5, size=n_c)
    n = np.arange(1, ncut + 1)
    d = np.arange(ncut)
    w = np.where(d == 0, 1.0, 2.0)[:, None] * np.cos(d[:, None] * cs)  # (ncut, n_c)
    oscillation = (1 - np.cos(n[:, None] * cs)) / (1 - np.cos(cs))  # (ncut, n_c)
    x = n - n.mean()
    K = np.full(flat.shape[0], np.nan)
    for lo in range(0, flat.shape[0], ZERO_ONE_BLOCK):
        block = flat[lo : lo + ZERO_ONE_BLOCK]
        msd = np.matmul(_window_sums(block, ncut).transpose(0, 2, 1), w) / (N - n)[:, None]  # (b, n, c)
        D = msd - (np.mean(block, axis=-1) ** 2)[:, None, None] * oscillation
        D -= D.mean(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            Kc = np.einsum("bnc,n->bc", D, x) / np.sqrt((x**2).sum() * (D**2).sum(axis=1))
        K[lo : lo + block.shape[0]] = np.median(Kc, axis=-1)
    constant = np.all(flat == flat[:, :1], axis=-1)
    return np.where(np.isfinite(K) & ~constant, K, np.nan).reshape(batch)


def _window_sums(phi: np.ndarray, ncut: int) -> np.ndarray:
    """The c-independent sums of the 0–1 test's mean-square displacement (theory: docs/theory/dynamics.md
    §4.3): with the lagged products y_d(s) = φ_s φ_{s−d} and their prefix sums P_d(u) = Σ_{s<u} y_d(s)
    (0-based s),

        G_n(d) = Σ_{t<N−n} Σ_{t<s−d, s≤t+n} y_d(s) = Σ_{u=N−n+d+1}^{N} P_d(u) − Σ_{u=d+1}^{n} P_d(u),

    for d < n ≤ ncut (0 for d ≥ n). Only the first ncut and the last ncut prefix sums enter: the head from
    the first ncut values, the tail from the whole-series lag sums P_d(N) (one FFT) less the products
    after u.

    Args:
        phi: (b, N) series, N ≥ 10·ncut. Returns: (b, ncut, ncut) G, indexed [lane, d, n − 1].
    """
    b, N = phi.shape
    # head: y_d(s) for s < ncut (0 for s < d); H[d, n − 1] = Σ_{u≤n} P_d(u), which is Σ_{u=d+1}^{n} (P_d(u ≤ d) = 0)
    head = phi[:, :ncut]
    lagged = windows(np.concatenate([np.zeros((b, ncut - 1)), head], axis=-1), ncut, axis=-1)[:, ::-1]
    H = np.cumsum(np.cumsum(head[:, None, :] * lagged, axis=-1), axis=-1)
    # whole-series lag sums P_d(N) = Σ_s φ_s φ_{s−d}
    import scipy.fft  # here, not at import: the trajectory's path does not need it

    nfft = scipy.fft.next_fast_len(N + ncut, real=True)
    f = np.fft.rfft(phi, nfft, axis=-1)
    full = np.fft.irfft(f.real**2 + f.imag**2, nfft, axis=-1)[:, :ncut]
    # tail: P_d(u) for u = N − ncut + 1 … N is P_d(N) less the products y_d(s), s ≥ u
    tail = phi[:, N - ncut :]
    C = np.cumsum(tail[:, None, :] * windows(phi[:, N - 2 * ncut + 1 :], ncut, axis=-1)[:, ::-1], axis=-1)
    C += (full - C[:, :, -1])[:, :, None]
    Ct = np.cumsum(C[:, :, ::-1], axis=-1)  # Ct[d, m − 1] = Σ_{u=N−m+1}^{N} P_d(u)
    # written into rows of width 2·ncut and read back with rows one shorter: row d shifts by d, so that
    # [d, n − 1] reads Ct[d, n − d − 1] and n ≤ d reads the zeros that pad the previous row
    width = 2 * ncut
    buf = np.zeros((b, ncut * width))
    buf.reshape(b, ncut, width)[:, :, :ncut] = Ct
    Y = as_strided(buf, shape=(b, ncut, ncut), strides=(buf.strides[0], (width - 1) * buf.itemsize, buf.itemsize))
    return Y - H


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


def _settled_zero_one(phi: np.ndarray, settled: np.ndarray, o: ClassifyOptions) -> np.ndarray:
    """The 0–1 test of each series read on its settled tail (theory: docs/theory/dynamics.md §4.3):
    ``phi[..., settled:]`` where :func:`settled_period` found an unsettled head, the whole series
    elsewhere; the head's transient is no evidence about the attractor."""
    K = zero_one_test(phi, n_c=o.n_c, seed=o.seed)
    settled = np.broadcast_to(np.asarray(settled), K.shape)
    for s in np.unique(settled[settled > 0]):
        rows = settled == s
        K[rows] = zero_one_test(phi[rows][..., int(s) :], n_c=o.n_c, seed=o.seed)
    return K


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
        dict of (...,) arrays: ``regime`` (int8 code into :data:`REGIMES`), ``regime_reason`` (int8 code
        into :data:`REGIME_REASONS`: the evidence that decided), ``period`` (0: none found,
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
    period_obs, _ = settled_period(safe, o.period_tol, o.max_period, o.confirmations)
    if fingerprint is not None:
        fsafe = np.where(finite[..., None, None], fingerprint, 0.0)
        divergent |= np.max(np.abs(fsafe), axis=(-2, -1)) > o.bound
        joint = np.concatenate([_normalised(safe), _normalised(fsafe)], axis=-1)
        period, settled = settled_period(joint, o.period_tol, o.max_period, o.confirmations)
    else:
        joint = safe
        period, settled = settled_period(safe, o.period_tol, o.max_period, o.confirmations)
    n = orbit.shape[-2]
    pmax = min(o.max_period, n // (o.confirmations + 1))
    recurrence = np.where(period == 0, recurrence_lag(joint, o.period_tol, pmax + 1, o.min_overlap), 0)
    K = _settled_zero_one(safe[..., 0], settled, o)
    lam1 = lam2 = np.full(batch, np.nan)
    if exponents is not None:
        ex = np.asarray(exponents, dtype=np.float64)
        lam1 = ex[..., 0]
        lam2 = ex[..., 1] if ex.shape[-1] > 1 else np.full(batch, np.nan)
    have_lyap = ~np.isnan(lam1)
    have_k = ~np.isnan(K)
    k_chaos = K > 0.5  # the verdict without exponents, and that of ``agree``
    k_says_chaos, k_says_regular = K > o.k_chaotic, K < o.k_regular  # clear verdicts (False for NaN)
    # a record of few Lyapunov times cannot show weak chaos to the 0–1 test: its "regular" is no verdict
    lam = np.nan_to_num(lam1, nan=0.0, posinf=np.inf, neginf=-np.inf)  # ±inf kept: n·λ must not overflow
    few_times = (lam > o.clear_factor * o.theta) & (n * lam < o.min_lyapunov_times)
    k_says_regular = k_says_regular & ~few_times
    k_decides = k_says_chaos | k_says_regular
    # the exponent's verdict: chaos above θ, contraction below −θ, λ₁ ≈ 0 (within its resolution) between
    exp_chaos = have_lyap & (lam1 > o.theta)
    contracting = have_lyap & (lam1 < -o.theta)
    resolved_zero = have_lyap & ~exp_chaos & ~contracting
    long_recurrence = contracting & (recurrence > 0)
    disagree = have_lyap & ((exp_chaos & k_says_regular) | (~exp_chaos & k_says_chaos)) & ~long_recurrence

    regime = np.full(batch, REGIME_CODE["quasi_periodic"], dtype=np.int8)
    reason = np.full(batch, REASON_CODE["exponent_and_zero_one_test"], dtype=np.int8)
    chaotic = np.where(have_lyap, exp_chaos, k_chaos)
    regime[chaotic] = REGIME_CODE["chaotic"]
    hyper = exp_chaos & ~np.isnan(lam2) & (lam2 > o.theta)
    regime[hyper] = REGIME_CODE["hyperchaotic"]
    regime[contracting] = REGIME_CODE["periodic"]  # a periodic orbit longer than max_period (period −1)
    reason[have_lyap & ~k_decides] = REASON_CODE["exponent_alone"]
    reason[~have_lyap] = REASON_CODE["zero_one_test_alone"]
    reason[long_recurrence] = REASON_CODE["long_recurrence_and_exponent"]
    undetermined = np.zeros(batch, bool)
    for mask, why in (
        (disagree, "evidence_disagrees"),
        (resolved_zero & ~k_decides, "exponent_within_resolution"),
        (~have_lyap & (recurrence > 0), "recurrence_too_long"),
        (~have_lyap & (recurrence == 0) & ~have_k, "no_evidence"),
    ):
        mask = mask & (period == 0) & ~undetermined
        reason[mask] = REASON_CODE[why]
        undetermined |= mask
    regime[undetermined] = REGIME_CODE["undetermined"]
    long_period = (period == 0) & contracting & ~undetermined
    period = np.where(long_period, -1, period)
    regime[period > 1] = REGIME_CODE["periodic"]
    regime[period == 1] = REGIME_CODE["fixed_point"]
    reason[period > 0] = REASON_CODE["exact_period"]
    regime[divergent] = REGIME_CODE["divergent"]
    reason[divergent] = REASON_CODE["divergent"]
    period = np.where(divergent, 0, period)
    chaos_like = np.isin(regime, [REGIME_CODE["chaotic"], REGIME_CODE["hyperchaotic"]])
    undefined = np.isnan(K) | divergent | (regime == REGIME_CODE["undetermined"]) | (have_lyap & ~k_decides)
    verdict = np.where(have_lyap, k_says_chaos, k_chaos)
    agree = np.where(undefined, -1, (verdict == chaos_like).astype(np.int8)).astype(np.int8)
    return dict(
        regime=regime,
        regime_reason=reason,
        period=period,
        period_observable=np.where(divergent, 0, period_obs),
        recurrence=np.where(divergent, 0, recurrence),
        lambda1=lam1,
        lambda2=lam2,
        K=K,
        agree=agree,
    )


def regime_counts(codes: np.ndarray, reasons: np.ndarray | None = None) -> str:
    """``name: count`` of every regime among the codes, in code order, padding (−1) left out; with
    ``reasons`` (``regime_reason`` codes), the undetermined count is followed by why, e.g.
    ``undetermined: 3 (evidence_disagrees: 2, exponent_within_resolution: 1)``
    (theory: docs/theory/dynamics.md §4.4)."""
    codes = np.asarray(codes).ravel()
    values, counts = np.unique(codes, return_counts=True)
    parts = []
    for c, n in zip(values, counts):
        if c < 0:
            continue
        text = f"{REGIMES[c]}: {n}"
        if reasons is not None and REGIMES[c] == "undetermined":
            why, k = np.unique(np.asarray(reasons).ravel()[codes == c], return_counts=True)
            text += " (" + ", ".join(f"{REGIME_REASONS[w]}: {m}" for w, m in zip(why, k) if w >= 0) + ")"
        parts.append(text)
    return ", ".join(parts)


def _fmt(v) -> str:
    v = np.asarray(v).item()
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def undetermined_values(ds, limit: int | None = 20) -> list[str]:
    """The points of a classified dataset (variables ``regime``, ``regime_reason``, ``lambda1``, ``K`` over
    any grid dims) labelled undetermined, each as ``beta_o=1.445: evidence_disagrees (λ1 = -0.0011, K =
    0.92)``, in grid order, at most ``limit``, then ``… and N more`` where the list is cut (theory:
    docs/theory/dynamics.md §4.4)."""
    reg = ds["regime"]
    hits = np.argwhere(reg.values == REGIME_CODE["undetermined"])
    out = []
    for idx in hits[: None if limit is None else limit]:
        sel = dict(zip(reg.dims, (int(i) for i in idx)))
        point = ds.isel(sel)
        where = ", ".join(f"{d}={_fmt(point[d].values)}" for d in reg.dims if d in point.coords)
        why = REGIME_REASONS[int(point["regime_reason"])] if "regime_reason" in ds else "?"
        lam = float(point["lambda1"]) if "lambda1" in ds else float("nan")
        K = float(point["K"]) if "K" in ds else float("nan")
        out.append(f"{where}: {why} (λ1 = {lam:.2g}, K = {K:.2f})")
    if limit is not None and len(hits) > limit:
        out.append(f"… and {len(hits) - limit} more")
    return out


def regime_names(codes: np.ndarray) -> np.ndarray:
    """Integer codes → label strings (theory: docs/theory/dynamics.md §4)."""
    return np.asarray(REGIMES, dtype=object)[np.asarray(codes, dtype=int)]

"""Memory beyond the context window: autocorrelation time and low-frequency power, against closed forms."""

import numpy as np
import pytest
from scipy.signal import lfilter

from attnphys.dmft import preset, trajectories
from attnphys.dmft.memory import autocorrelation_time, low_frequency_fraction


def ar1(phi: float, n: int, seed: int = 0) -> np.ndarray:
    """x_t = phi x_{t-1} + e_t, started in its stationary law."""
    e = np.random.default_rng(seed).standard_normal(n)
    e[0] /= np.sqrt(1 - phi**2)
    return lfilter([1.0], [1.0, -phi], e)


@pytest.mark.parametrize("phi", [0.8, 0.95])
def test_autocorrelation_time_of_ar1_is_minus_one_over_log_phi(phi):
    # rho(k) = phi^k = exp(-k / tau0) with tau0 = -1 / ln(phi): the 1/e crossing is at k = tau0
    tau0 = -1.0 / np.log(phi)
    tau = autocorrelation_time(ar1(phi, 200_000))
    assert abs(tau - tau0) < 0.06 * tau0


def test_autocorrelation_time_units_and_batch_axes():
    x = np.stack([ar1(0.9, 50_000, s) for s in range(3)])
    t1 = autocorrelation_time(x)
    t5 = autocorrelation_time(x, dt=5)
    assert t1.shape == (3,)
    np.testing.assert_allclose(t5, 5 * t1)


def test_periodic_series_never_decorrelates_and_constant_has_zero_time():
    t = np.arange(4000)
    assert np.isinf(autocorrelation_time(np.cos(2 * np.pi * t / 28)))
    assert autocorrelation_time(np.full(100, 0.3)) == 0.0
    assert np.isnan(autocorrelation_time(np.ones(5)))


def test_white_noise_decorrelates_within_one_step():
    tau = autocorrelation_time(np.random.default_rng(1).standard_normal(100_000))
    assert 0.5 < tau < 1.0


@pytest.mark.parametrize("L", [4, 32])
def test_low_frequency_fraction_of_white_noise_is_two_over_L(L):
    # flat spectrum on (0, 1/2]: the band (0, 1/L) holds 2/L of the power
    x = np.random.default_rng(2).standard_normal(2**17)
    assert abs(low_frequency_fraction(x, L) - 2 / L) < 0.01


def test_low_frequency_fraction_of_sinusoids():
    t = np.arange(8192)
    slow = np.sin(2 * np.pi * t * 64 / 8192)  # 1/128 cycles per step < 1/4
    fast = np.sin(2 * np.pi * t * 2048 / 8192)  # 1/4 cycles per step: not below 1/L
    assert low_frequency_fraction(slow, 4) == pytest.approx(1.0, abs=1e-12)
    assert low_frequency_fraction(fast, 4) == pytest.approx(0.0, abs=1e-12)
    # sampled every 8 steps, the slow wave is at 1/128 cycles per step still
    assert low_frequency_fraction(slow[::8], 4, dt=8) == pytest.approx(1.0, abs=1e-12)
    assert np.isnan(low_frequency_fraction(np.zeros(64), 4))


def test_trajectory_dataset_carries_the_memory_numbers():
    ds = trajectories(preset("paper"), start="checkpoint", steps=6000, transient=2000, sweep={"beta_o": [1.255, 1.28]})
    for name in ("mo_se_autocorr_time", "mo_se_lowfreq_power"):
        assert ds[name].dims == ("beta_o", "feature")
        assert ds[name].attrs["long_name"]
    assert ds.mo_se_autocorr_time.attrs["units"] == "step"
    rec = ds.mo_se.sel(beta_o=1.28).values.T
    np.testing.assert_array_equal(ds.mo_se_autocorr_time.sel(beta_o=1.28).values, autocorrelation_time(rec))
    np.testing.assert_array_equal(ds.mo_se_lowfreq_power.sel(beta_o=1.28).values, low_frequency_fraction(rec, 4))
    # the quasi-periodic orbit at 1.255 keeps its memory over the whole record; the chaotic one at 1.28
    # decorrelates, but only after many context lengths
    assert np.isinf(ds.mo_se_autocorr_time.sel(beta_o=1.255, feature=0))
    assert 4 < float(ds.mo_se_autocorr_time.sel(beta_o=1.28, feature=0)) < 1000


# ---------------------------------------------------------------- the white-noise baseline and its test


@pytest.mark.parametrize("n,L,dt", [(200, 4, 1), (201, 4, 1), (200, 32, 1), (300, 4, 3)])
def test_white_noise_baseline_is_the_estimators_mean(n, L, dt):
    """Monte Carlo over 20,000 records of Gaussian white noise against the exact mean (4 standard errors)."""
    from attnphys.dmft.memory import white_noise_baseline

    phi = low_frequency_fraction(np.random.default_rng(n + L).standard_normal((20_000, n)), L, dt=dt)
    assert abs(phi.mean() - white_noise_baseline(n, L, dt)) <= 4 * phi.std() / np.sqrt(phi.size) + 1e-12


def test_white_noise_baseline_closed_forms():
    from attnphys.dmft.memory import white_noise_baseline

    # odd n: no Nyquist ordinate, Φ ~ Beta(m_l, m_h); n = 1001, L = 4: k = 1…500, k < 250.25 → 250 of 500
    assert white_noise_baseline(1001, 4) == 0.5
    assert white_noise_baseline(75_001, 4) == pytest.approx(0.5, abs=1e-4)
    # even n: the Nyquist ordinate (one more, heavier-tailed, in the upper band) lowers the mean below m_l/M
    assert 0.4975 < white_noise_baseline(1000, 4) < 249 / 499
    assert white_noise_baseline(64, 4, dt=3) == 1.0  # every frequency (up to 1/6 per step) below 1/L
    assert white_noise_baseline(64, 4, dt=2) < 1.0  # the Nyquist frequency 1/4 is not below 1/L = 1/4
    assert white_noise_baseline(3, 4) == 0.0


def test_white_noise_pvalue_is_uniform_under_the_null_and_small_for_memory():
    from attnphys.dmft.memory import white_noise_pvalue

    n = 200
    phi = low_frequency_fraction(np.random.default_rng(7).standard_normal((3000, n)), 4)
    p = white_noise_pvalue(phi, n, 4)
    for a in (0.05, 0.2, 0.5):
        assert abs(np.mean(p < a) - a) < 4 * np.sqrt(a * (1 - a) / p.size)
    # odd n: exactly the Beta survival function
    from scipy.stats import beta

    assert white_noise_pvalue(0.55, 201, 4) == pytest.approx(beta.sf(0.55, 50, 50), rel=1e-12)
    # an AR(1) series has memory: its low-frequency excess is far beyond white noise
    x = ar1(0.9, 75_000)
    assert white_noise_pvalue(low_frequency_fraction(x, 4), 75_000, 4) < 1e-100
    assert np.isnan(white_noise_pvalue(np.nan, 100, 4))


def test_trajectory_dataset_carries_the_baseline_and_the_test():
    ds = trajectories(preset("paper"), start="checkpoint", steps=3000, transient=1000, sweep={"beta_o": [1.28]})
    from attnphys.dmft.memory import white_noise_baseline, white_noise_pvalue

    n = ds.sizes["step"]
    np.testing.assert_allclose(ds.mo_se_lowfreq_baseline.values, white_noise_baseline(n, 4))
    np.testing.assert_allclose(
        ds.mo_se_lowfreq_pvalue.values, white_noise_pvalue(ds.mo_se_lowfreq_power.values, n, 4), rtol=1e-12
    )
    assert "white" in ds.mo_se_lowfreq_baseline.attrs["long_name"]


def test_white_noise_pvalue_of_a_long_record_below_its_baseline_is_near_one():
    """φ far below the white-noise mean of a long record (n = 75,000): nearly every white-noise record has
    more low-frequency power, so p ≈ 1 (an adaptive integral started at φ missed the bulk: p = 9e−10)."""
    from scipy.stats import beta

    from attnphys.dmft.memory import _bands, white_noise_pvalue

    n, L = 75_000, 4
    ml, mh, nyq = _bands(n, L, 1.0)
    assert nyq
    p = white_noise_pvalue(np.array([0.3, 0.45, 0.49]), n, L)
    # Φ = R·T/(T + ν) ≤ R, and Φ ≥ φ when R ≥ 1.01 φ and ν/T ≤ 0.01 (ν ≤ 750: certain for T ≈ χ²₇₅₀₀₀)
    phi = np.array([0.3, 0.45, 0.49])
    assert np.all(p <= beta.sf(phi, ml, mh) + 1e-12)
    assert np.all(p >= beta.sf(1.01 * phi, ml, mh) - 1e-12)
    assert p[0] > 0.999


def test_white_noise_baseline_series_matches_the_integral():
    from scipy import integrate, special

    from attnphys.dmft.memory import _bands, white_noise_baseline

    for n, L in ((10, 4), (200, 4), (1000, 16), (5000, 3)):
        ml, mh, nyq = _bands(n, L, 1.0)
        assert nyq
        M = ml + mh
        log_c = np.log(2.0) - 0.5 * np.log(2 * M) - float(special.betaln(0.5, M))
        shrink = integrate.quad(
            lambda t, M=M, c=log_c: M / (M + t * t) * np.exp(c - (M + 0.5) * np.log1p(t * t / (2 * M))),
            0,
            np.inf,
            limit=200,
            epsabs=1e-14,
        )[0]
        assert white_noise_baseline(n, L) == pytest.approx(ml / M * shrink, rel=1e-9)

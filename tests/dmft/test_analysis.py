"""Lyapunov spectra, orbit diagrams and regimes of the DMFT map (spec dmft.md §5–6)."""

import json

import numpy as np
import pytest

from attnphys.dmft import bifurcation, lyapunov_spectrum, preset
from attnphys.dmft.tasks import PAPER_SECTION_PAIRS
from attnphys.dynamics.classify import REGIMES


@pytest.fixture(scope="module")
def cfg():
    return preset("paper")


@pytest.mark.slow
def test_reference_exponents_at_1_26(cfg):
    """Spec §5: from the token at β_o = 1.26, 10 000 steps after 10 000 transient: λ1 = +1.7e-4, λ2 = −0.0106."""
    ds = lyapunov_spectrum(cfg.replace(beta_o=1.26), steps=20_000, transient=10_000, exponents=3, start="token")
    lam = ds.exponents.values
    assert lam[0] == pytest.approx(1.7e-4, abs=1e-5)
    assert lam[1] == pytest.approx(-0.0106, abs=2e-4)
    assert list(ds.exponents.dims) == ["exponent"]


@pytest.mark.slow
def test_positional_exponents_are_exactly_zero(cfg):
    """Full state with identity vectors: the L·P positional directions give exactly 0, and the L·M
    attention exponents equal those of the attention block alone."""
    full = lyapunov_spectrum(cfg, sweep={"beta_o": [1.0, 2.0]}, steps=3000, transient=1000, full_state=True)
    att = lyapunov_spectrum(cfg, sweep={"beta_o": [1.0, 2.0]}, steps=3000, transient=1000)
    L, M, P = cfg.L, cfg.M, cfg.P
    assert full.sizes["exponent"] == L * (M + P) and att.sizes["exponent"] == L * M
    ex = full.exponents.values
    assert np.all((ex == 0.0).sum(axis=-1) == L * P)
    nonzero = np.stack([row[row != 0.0] for row in ex])
    np.testing.assert_allclose(nonzero[:, :3], att.exponents.values[:, :3], atol=1e-10)
    assert np.all(np.diff(ex, axis=-1) <= 0)  # descending


@pytest.mark.slow
def test_lower_exponents_flagged_below_roundoff(cfg):
    ds = lyapunov_spectrum(cfg.replace(beta_o=2.0), steps=6000, transient=1000)
    assert not ds.below_roundoff.values[0]
    assert ds.below_roundoff.values[-1]  # γ ≈ 127: nearly one-hot softmax, spec §5


def test_trailing_exponents_flagged_unreliable(cfg):
    """β_o = 2: the trailing directions collapse onto the leading ones within a QR step (fewer than ten
    correct bits), the leading one does not; the flag is stored with the fraction of QR steps."""
    ds = lyapunov_spectrum(cfg.replace(beta_o=2.0), steps=6000, transient=1000)
    assert not ds.unreliable.values[0] and ds.parallel_fraction.values[0] == 0
    assert ds.unreliable.values[-1] and 0 < ds.parallel_fraction.values[-1] <= 1


@pytest.mark.slow
def test_reorthonormalisation_interval_keeps_the_leading_exponents(cfg):
    """A QR every Δ = 8 steps (columns rescaled by powers of two in between) gives the per-step QR's
    leading exponents to round-off — the QR of a product of Jacobians is the product of their QRs — and
    flags none of them."""
    pts = {"beta_o": [1.0, 1.26, 2.0]}
    one = lyapunov_spectrum(cfg, sweep=pts, steps=6000, transient=1000, exponents=3)
    eight = lyapunov_spectrum(cfg, sweep=pts, steps=6000, transient=1000, exponents=3, reortho_every=8)
    np.testing.assert_allclose(eight.exponents.values, one.exponents.values, rtol=0, atol=1e-9)
    assert not eight.unreliable.values.any() and not one.unreliable.values.any()
    assert np.abs(eight.exponents.values - one.exponents.values).max() > 0  # other arithmetic, not a copy


@pytest.mark.slow
def test_lyapunov_history_and_sweep_dims(cfg):
    ds = lyapunov_spectrum(cfg, sweep={"beta_o": [0.5, 1.5], "beta_att": [1.0, 2.2]}, steps=3000, transient=1000, exponents=2,
                           history_every=500)
    assert ds.exponents.dims == ("beta_o", "beta_att", "exponent")
    assert ds.history.shape == (2, 2, 4, 2)
    np.testing.assert_allclose(np.sort(ds.history.values[..., -1, :], -1), np.sort(ds.exponents.values, -1), atol=1e-12)
    assert json.loads(ds.attrs["config"])["M"] == 3


def test_token_start_needs_a_filled_window(cfg):
    with pytest.raises(ValueError, match="L - 1"):
        lyapunov_spectrum(cfg, steps=100, transient=1, start="token")


@pytest.mark.slow
def test_analyse_regimes_and_evidence(cfg):
    ds = bifurcation(cfg, {"beta_o": [0.5, 1.27, 2.0]}, steps=30_000, transient=20_000, exponents=3, start="token")
    names = [REGIMES[c] for c in ds.regime.values]
    # at small β_o the window settles on the cycle the positional code drives: period L = 4
    assert names[0] == "periodic" and int(ds.period.values[0]) == cfg.L and ds.lambda1.values[0] < -0.1
    # β_o = 1.27: the coexisting period-28 and period-56 orbits; which one the token start reaches depends on
    # the rounding along its chaotic transient
    assert names[1] == "periodic" and int(ds.period.values[1]) in (28, 56)
    assert names[2] == "chaotic" and ds.K.values[2] > 0.8 and ds.lambda1.values[2] > 0.01
    assert ds.orbit.dims == ("beta_o", "sample", "feature")
    assert ds.section.dims == ("beta_o", "pair", "crossing")
    assert list(ds.pair.values) == [f"{f}|{g}" for f, g in PAPER_SECTION_PAIRS]
    assert ds.agree.values.all()
    np.testing.assert_allclose(ds.lambda1.values, ds.exponents.values[:, 0])


@pytest.mark.slow
def test_section_points_lie_on_the_plane(cfg):
    ds = bifurcation(cfg, {"beta_o": [2.0]}, steps=12_000, transient=2000, exponents=0, n_orbit=10_000, section_tol=1e-2,
                     start="checkpoint")
    orbit = ds.orbit.values[0]
    for j, (f, g) in enumerate(PAPER_SECTION_PAIRS):
        hits = orbit[np.abs(orbit[:, g]) <= 1e-2, f]
        n = int(ds.section_count.values[0, j])
        assert n == hits.size > 0
        np.testing.assert_allclose(ds.section.values[0, j, :min(n, 1000)], hits[:1000])


@pytest.mark.slow
def test_continuation_dataset(cfg):
    spec = dict(steps=3000, transient=2000, exponents=1, n_orbit=200)
    ds = bifurcation(cfg, {"beta_o": np.linspace(1.0, 2.0, 5)}, **spec, continuation="both")
    assert ds.regime.dims == ("direction", "beta_o")
    assert list(ds.direction.values) == ["up", "down"]
    assert ds.attrs["run_mode"] == "continuation"
    # the down chain's last point (β = 1.0) starts from the β = 1.25 state; the up chain's first from the checkpoint
    cold = bifurcation(cfg, {"beta_o": [1.0]}, **spec)
    np.testing.assert_allclose(ds.orbit.sel(direction="up").values[0], cold.orbit.values[0], rtol=1e-12)

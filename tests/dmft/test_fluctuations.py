"""The system-size expansion of the finite network (theory: docs/theory/fluctuations.md): closed forms of the
propagation, the exact first step, the Lyapunov solution against the propagated one, and simulation."""

import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dmft import (
    compare_fluctuations,
    finite_trajectories,
    fluctuations,
    predicted_horizon,
    preset,
    trajectories,
)
from attnphys.dmft._linear_noise import stationary_bias, stationary_covariance
from attnphys.errors import InputError


@pytest.fixture(scope="module")
def fixed():
    """β_o = 1: the mean field settles on its fixed point (a cycle of period L = 4 of the positional code)."""
    return preset("paper", beta_o=1.0)


@pytest.fixture(scope="module")
def along(fixed):
    """The expansion along 304 steps from the first token."""
    return fluctuations(fixed, steps=304)


def test_stationary_variance_and_bias_of_a_scalar_map_are_the_closed_forms():
    """x' = a x + ½ c x² + ξ, Var ξ = q/N: Σ = q/(1 − a²), and the bias β' = a β + ½ c Σ gives β = ½ c Σ/(1 − a)."""
    a, q, c = 0.6, 2.0, 3.0
    Sig = stationary_covariance(np.full((1, 1, 1), a), np.full((1, 1, 1), q))
    assert Sig[0, 0, 0] == pytest.approx(q / (1 - a * a), rel=1e-12) and Sig[1, 0, 0] == pytest.approx(Sig[0, 0, 0])
    bet = stationary_bias(np.full((1, 1, 1), a), np.full((1, 1), 0.5 * c * Sig[0, 0, 0]))
    assert bet[0, 0] == pytest.approx(0.5 * c * q / (1 - a * a) / (1 - a), rel=1e-12)


def test_cycle_covariance_is_the_fixed_point_of_the_propagation():
    """A two-phase cycle of 3 × 3 maps: the Lyapunov solution on the monodromy is where the phase-by-phase
    propagation settles, at every phase; an unstable cycle has none."""
    rng = np.random.default_rng(0)
    J = 0.5 * rng.standard_normal((2, 3, 3)) / np.sqrt(3)
    B = rng.standard_normal((2, 3, 3))
    Q = B @ np.transpose(B, (0, 2, 1))
    r = rng.standard_normal((2, 3))
    Sig, bet = stationary_covariance(J, Q), stationary_bias(J, r)
    S, b = np.zeros((3, 3)), np.zeros(3)
    for _ in range(200):
        for k in range(2):
            S, b = J[k] @ S @ J[k].T + Q[k], J[k] @ b + r[k]
    np.testing.assert_allclose(S, Sig[2], rtol=1e-10)
    np.testing.assert_allclose(b, bet[2], rtol=1e-10)
    np.testing.assert_allclose(Sig[0], Sig[2], rtol=1e-10)
    with pytest.raises(ValueError, match="not linearly stable"):
        stationary_covariance(np.full((1, 1, 1), 1.2), np.ones((1, 1, 1)))


def test_second_order_contraction_is_the_hessian_contraction():
    """½ ∂²f : S by directional derivatives equals the contraction with the full Hessian."""
    import jax

    from attnphys.dmft._linear_noise import _contract

    def f(x):
        return jnp.stack([jnp.tanh(x[0] * x[1]), jnp.sin(x[2]) * x[0] ** 2, jnp.exp(x[1] - x[2])])

    x = jnp.asarray([0.3, -0.7, 0.2])
    B = np.random.default_rng(1).standard_normal((3, 3))
    S = jnp.asarray(B @ B.T)
    got = jax.jit(lambda x, S: _contract(f, x, S))(x, S)
    want = jax.jit(lambda x, S: 0.5 * jnp.einsum("ijk,jk->i", jax.hessian(f)(x), S))(x, S)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.slow
def test_mean_of_the_expansion_is_the_mean_field_and_first_step_is_exact(fixed, along):
    """With no noise the expansion's step is the mean-field map (records to round-off); at the first step
    the state is deterministic, so the predicted variance of the token's overlaps is exact."""
    pred = along.isel(step=slice(0, 40))
    mf = trajectories(fixed, start="token", steps=40, transient=0)
    for name in ("att", "mo", "mo_se", "mv", "mq", "mk"):
        np.testing.assert_allclose(pred[name].values, mf[name].values, atol=1e-14)
    n, P = 990, 20_000
    fin = finite_trajectories(fixed, n, paths=P, steps=1, seed=3)
    for name in ("mo_se", "mv", "mq", "mk"):
        sd = fin[name].values[:, 0].std(0, ddof=1)
        np.testing.assert_allclose(sd, np.sqrt(pred[f"{name}_var"].values[0] / n), rtol=0.03)
    assert np.all(pred["mo_se_bias"].values[0] == 0)  # the overlaps' conditional mean is exact


@pytest.mark.slow
def test_lyapunov_solution_is_the_late_propagated_covariance(fixed, along):
    paths = along.isel(step=slice(300, 304))
    cyc = fluctuations(fixed, steps=304, transient=300, stationary=True)
    assert cyc.attrs["period"] == 4 and cyc.attrs["spectral_radius"] < 1
    for name in ("att", "mv", "mk"):
        for v in ("_var", "_bias", "_cov"):
            np.testing.assert_allclose(cyc[name + v].values, paths[name + v].values, rtol=1e-6, atol=1e-9)


@pytest.mark.slow
def test_finite_network_agrees_with_the_prediction_at_one_size(fixed):
    """At the fixed point and N = 9,900: the measured standard deviation of every overlap within 10 % of the
    prediction, and the bias-corrected mean no worse than the mean field (the bias is 1e-4 here)."""
    ds = compare_fluctuations(fixed, [9900], paths=200, steps=440, transient=400, seed=5)
    for name in ("att", "mo_se", "mv", "mq", "mk"):
        r = ds[f"{name}_std_ratio"].values
        assert np.all(np.abs(r - 1) < 0.1), (name, r)
        assert np.all(ds[f"{name}_std_ratio_ci_low"].values <= r)
    assert ds.attrs["period"] == 4
    assert np.isnan(ds.horizon.values[0]) and np.all(np.isnan(ds.separation.values))


@pytest.mark.slow
def test_converge_reports_the_predicted_prefactor(fixed):
    """The measured RMS deviation of converge against the predicted c N^-1/2 (fixed point, 64 paths)."""
    from attnphys.dmft import converge

    ds = converge(fixed, [990, 9900], paths=64, steps=120, horizon=100, transient=100)
    c = float(ds.rms_prefactor_predicted)
    assert 0.5 < c < 5
    np.testing.assert_allclose(ds.rms_deviation.values, ds.rms_predicted.values, rtol=0.1)


def test_horizon_is_where_the_spread_reaches_the_threshold():
    import xarray as xr

    ds = xr.Dataset({"spread": ("step", np.exp(0.1 * np.arange(100)))}, coords={"step": np.arange(100)})
    n = 1e4
    assert predicted_horizon(ds, n, 0.1) == pytest.approx(np.ceil(10 * np.log(0.1 * np.sqrt(n))))
    assert np.isnan(predicted_horizon(ds, 1e12, 0.1))


def test_bad_inputs_name_the_argument(fixed):
    from attnphys.dmft.designed import designed_config

    with pytest.raises(InputError, match="cfg"):
        fluctuations(designed_config("4_duplicity_loop_4"), steps=10)
    with pytest.raises(InputError, match="cfg"):
        fluctuations(fixed.replace(correlations={"kind": "gaussian"}), steps=10)
    with pytest.raises(InputError, match="max_period"):
        fluctuations(fixed, steps=10, stationary=True, max_period=2)
    with pytest.raises(InputError, match="transient"):
        fluctuations(fixed, steps=10, transient=10)
    with pytest.raises(InputError, match="record"):
        fluctuations(fixed, steps=10, record=("nope",))
    with pytest.raises(InputError, match="stationary"):
        fluctuations(preset("paper", beta_o=1.4), steps=60, transient=50, stationary=True, max_period=16)
    with pytest.raises(InputError, match="start_step"):
        fluctuations(fixed, steps=10, start_step=10)
    with pytest.raises(InputError, match="start_step"):
        fluctuations(fixed, steps=10, start_step=2, stationary=True)
    with pytest.raises(InputError, match="sizes"):
        compare_fluctuations(fixed, [990, 990], paths=4, steps=10)


@pytest.mark.slow
@pytest.mark.long
def test_acceptance_at_the_fixed_point_and_on_the_period_24_orbit():
    """1,000 paths. Fixed point (β_o = 1): every overlap's standard deviation within 10 % of the prediction at
    N = 990, 9,900, 99,000, and the bias-corrected mean at least 5x closer than the mean field at N = 990.
    Period-24 orbit (β_o = 3): within 10 % at N = 9,900 and 99,000 (at 990 the paths leave the orbit)."""
    overlaps = ("mo_se", "mv", "mq", "mk")
    fp = compare_fluctuations(preset("paper", beta_o=1.0), [990, 9900, 99000], paths=1000, steps=1000, transient=600)
    for k in overlaps:
        assert np.all(np.abs(fp[f"{k}_std_ratio"].values - 1) <= 0.1), k
        assert fp[f"{k}_error_mean_field"].values[0] >= 5 * fp[f"{k}_error_corrected"].values[0], k
    po = compare_fluctuations(preset("paper", beta_o=3.0), [9900, 99000], paths=1000, steps=3480, transient=3000)
    assert po.attrs["period"] == 24
    for k in overlaps + ("att",):
        assert np.all(np.abs(po[f"{k}_std_ratio"].values - 1) <= 0.1), k


@pytest.mark.slow
@pytest.mark.long
def test_acceptance_on_the_period_192_orbit_of_the_five_bit_preset():
    """``paper-pe5`` (P = 5, L = 32) at β_o = 5: a period-192 orbit with monodromy radius 0.0025. 1,000 paths
    started on the orbit: every overlap's standard deviation within 10 % of the prediction at N = 990, 9,900,
    99,000, and at N = 990 the bias-corrected mean at least 5x closer than the mean field, the mean field's
    error far above the sampling error (the gain measures the bias, not noise)."""
    cfg = preset("paper-pe5", beta_o=5.0)
    ds = compare_fluctuations(
        cfg, [990, 9900, 99000], paths=1000, steps=3768, transient=3384, start_step=3000, seed=1,
        record=("mo_se", "mv", "mq", "mk"),
    )  # fmt: skip
    assert ds.attrs["period"] == 192
    for k in ("mo_se", "mv", "mq", "mk"):
        assert np.all(np.abs(ds[f"{k}_std_ratio"].values - 1) <= 0.1), k
        mf, bc, noise = (float(ds[f"{k}_error_{s}"].values[0]) for s in ("mean_field", "corrected", "noise"))
        assert mf >= 5 * bc and mf >= 5 * noise, k


def _phase_remainder(ds, names):
    """Measured minus predicted mean per phase of the cycle and feature (n, phases x features), and its
    sampling error."""
    p = ds.attrs["period"]
    phase = np.arange(ds.sizes["step"]) % p
    rem, se = [], []
    for k in names:
        d = ds[f"{k}_mean_measured"].values - ds[f"{k}_mean_predicted"].values
        e = ds[f"{k}_mean_se"].values
        for ph in range(p):
            sel = phase == ph
            rem.append(d[:, sel].mean(1))
            se.append(np.sqrt((e[:, sel] ** 2).mean(1) / sel.sum()))
    return np.concatenate(rem, 1), np.concatenate(se, 1)


@pytest.mark.slow
@pytest.mark.long
def test_what_the_bias_leaves_on_the_paper_orbit_is_of_higher_order():
    """Paper preset, β_o = 4 (period 24): the bias-corrected mean misses the measured one by a remainder that
    falls faster than 1/N between N = 990 and 3,960 (a wrong O(1/N) bias would leave a remainder falling like
    1/N: slope −1), and that remainder is a fraction of the bias at N = 990. Two independent sets of 3,000 paths
    remove the sampling noise from the remainder's size."""
    names = ("mo_se", "mv", "mq", "mk")
    cfg = preset("paper", beta_o=4.0)
    kw = dict(paths=3000, steps=3288, transient=3048, start_step=3000, record=names)
    (r1, _), (r2, _) = (_phase_remainder(compare_fluctuations(cfg, [990, 3960], seed=s, **kw), names) for s in (3, 4))
    size = np.sqrt(np.maximum(np.sum(r1 * r2, axis=1), 0.0))
    slope = np.log(size[1] / size[0]) / np.log(4.0)
    assert slope < -1.4, slope
    pred = fluctuations(cfg, steps=3288, transient=3048, start_step=3000, record=names)
    bias = np.sqrt(sum(float(np.sum(pred[f"{k}_bias"].values ** 2)) for k in names) / 10) / 990  # per phase visit
    assert size[0] < 0.5 * bias, (size[0], bias)

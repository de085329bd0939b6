"""The toolkit's public analyses return labelled datasets with the known numbers: Lyapunov spectra of the
Hénon and logistic maps, and the continuation of the logistic map's fixed point to its flip at r = 3."""

import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dynamics import EVENT_KINDS, continuation, event_kinds, lyapunov_spectrum
from attnphys.dynamics.maps import HENON, LOGISTIC
from attnphys.errors import InputError


def test_henon_spectrum_sums_to_the_log_determinant():
    ds = lyapunov_spectrum(HENON, jnp.array([0.1, 0.1]), None, jnp.array([1.4, 0.3]), steps=20_000)
    assert ds.exponents.dims == ("exponent",)
    lam = ds.exponents.values
    assert lam[0] == pytest.approx(0.419, abs=0.01) and lam[1] == pytest.approx(-1.62, abs=0.01)
    assert lam.sum() == pytest.approx(np.log(0.3), abs=1e-9)
    assert set(ds.data_vars) == {
        "exponents",
        "roundoff_fraction",
        "below_roundoff",
        "zero_hits",
        "parallel_fraction",
        "unreliable",
    }
    assert ds.exponents.attrs["units"] == "1/step"


def test_a_batch_of_parameters_is_one_dimension():
    rs = np.array([2.5, 4.0])
    ds = lyapunov_spectrum(
        LOGISTIC, jnp.full((2, 1), 0.3), None, jnp.asarray(rs), steps=20_000, batch=True, values=rs, name="r"
    )
    assert ds.exponents.dims == ("r", "exponent") and list(ds.r.values) == [2.5, 4.0]
    assert ds.exponents.sel(r=2.5).item() == pytest.approx(
        np.log(0.5), abs=1e-4
    )  # |f'(x*)| = |2 − r|, after the approach
    assert ds.exponents.sel(r=4.0).item() == pytest.approx(np.log(2), abs=0.01)
    with pytest.raises(InputError, match="exponents"):
        lyapunov_spectrum(HENON, jnp.array([0.1, 0.1]), None, jnp.array([1.4, 0.3]), steps=10, exponents=3)


def test_the_logistic_fixed_point_flips_at_three():
    r0 = 2.8
    x0 = jnp.array([1 - 1 / r0])
    ds = continuation(LOGISTIC, x0, None, lambda s: s, r0, 3.2, period=1, name="r")
    kinds = list(ds.event_kind.values)
    assert kinds and kinds[0] == "flip" and event_kinds(ds) == kinds  # names, not codes
    assert ds.sizes["event"] >= 1 and ds.event_s.values[0] == pytest.approx(3.0, abs=1e-8), kinds
    assert ds.attrs["period"] == 1


def test_event_kinds_of_a_store_written_before_names():
    """Stores of 0.2.0 hold the events as int8 codes with CF flag attributes: they read as the same names."""
    import xarray as xr

    from attnphys.dynamics.classify import flag_attrs

    codes = np.array([2, 0, 3], np.int8)
    old = xr.Dataset({"event_kind": ("event", codes, {"long_name": "bifurcation kind",
                                                      **flag_attrs(EVENT_KINDS, fill=None)})})
    assert event_kinds(old) == ["flip", "fold", "neimark_sacker"]
    assert event_kinds(old.assign(event_kind=("event", codes))) == ["flip", "fold", "neimark_sacker"]


def test_lyapunov_spectrum_under_vmap_says_what_to_use_instead():
    import jax
    import jax.numpy as jnp

    from attnphys.dynamics import lyapunov_spectrum
    from attnphys.dynamics.maps.henon import Henon
    from attnphys.errors import InputError

    m = Henon()
    P = jnp.array([[1.4, 0.3], [1.2, 0.3]])
    X = jnp.full((2, 2), 0.1)
    with pytest.raises(InputError, match="batch=True") as e:
        jax.vmap(lambda x, p: lyapunov_spectrum(m, x, None, p, steps=50))(X, P)
    assert e.value.field == "x0"
    # what it points to: the batch gives one spectrum per row, the same as row by row
    ds = lyapunov_spectrum(m, X, None, P, steps=200, batch=True)
    for i in range(2):
        one = lyapunov_spectrum(m, X[i], None, P[i], steps=200)
        np.testing.assert_allclose(ds.exponents.values[i], one.exponents.values, rtol=1e-12, atol=1e-12)

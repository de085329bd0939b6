"""The designed model object: the DMFT model's interface, starts, scalars, parameter paths and the
trajectory dataset (theory: docs/theory/designed.md §3)."""

import inspect
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dmft import trajectories
from attnphys.dmft.designed import DesignedMap, DesignedModel, designed_config
from attnphys.dmft.designed._config import BATCHED
from attnphys.dmft.designed._model import token_window
from attnphys.dmft.initial import save_window
from attnphys.dmft.model import DMFTModel
from attnphys.dmft.simulate import Schedule
from attnphys.dmft.starts import PrerunStart, TokenStart, window_start
from attnphys.dynamics.maps import AbstractMap
from attnphys.errors import InputError

INTERFACE = (
    "of",
    "scalars",
    "check_start",
    "initial_states",
    "initial_windows",
    "windows_after",
    "prerun_window",
    "map",
    "state_dim",
    "window_of",
)


@pytest.fixture(scope="module")
def model():
    return DesignedModel.of(designed_config("4_duplicity_loop_4", beta_o=3.0, gamma=20.0, epsilon=0.2))


@pytest.mark.parametrize("name", INTERFACE)
def test_the_paper_models_methods_exist_with_the_same_parameters(name):
    ours, theirs = getattr(DesignedModel, name), getattr(DMFTModel, name)
    p_ours = list(inspect.signature(ours).parameters)
    p_theirs = list(inspect.signature(theirs).parameters)
    assert p_ours[: len(p_theirs)] == p_theirs


def test_the_model_is_built_once_per_configuration(model):
    assert DesignedModel.of(model.config) is model
    assert model.config.era == "head" and model.state_dim() == 16 and model.config.state_dim == 16


def test_scalars_of_points_and_their_validation(model):
    sc = model.scalars({"gamma": [1.0, 2.0, 3.0]})
    np.testing.assert_array_equal(np.asarray(sc.gamma), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(sc.gain_o), [3.0] * 3)
    np.testing.assert_array_equal(np.asarray(sc.eps), [0.2] * 3)
    assert np.shape(model.scalars(n=5).gain_o) == (5,)
    with pytest.raises(ValueError, match="only .* vary inside a batch"):
        model.scalars({"L": [4]})
    with pytest.raises(InputError, match="axis epsilon=1.5"):
        model.scalars({"epsilon": [0.5, 1.5]})


def test_token_start_is_the_pattern_index(model):
    w = token_window(model.design, 4, 0)
    np.testing.assert_array_equal(np.asarray(w.A)[0], [0, 0, 0, 1])  # the value order puts pattern 0 last
    np.testing.assert_array_equal(np.asarray(w.pe), [[-1, -1], [1, 1], [1, -1], [-1, 1]])
    assert int(w.n) == 1
    np.testing.assert_array_equal(np.asarray(token_window(model.design, 4, 2).A)[0], [0, 1, 0, 0])
    st = model.initial_states(TokenStart(row=1), model.scalars(n=2))
    assert np.asarray(st.A).shape == (2, 4, 4)


@pytest.mark.parametrize(
    "start, fragment",
    [
        (TokenStart(row=4), "pattern index must be in [0, 3]"),
        ("checkpoint", "belongs to the paper" if False else "the checkpoint start is the paper model"),
        ("pattern:1", "the pattern start belongs to the paper model's hand-set correlations"),
        ({"kind": "window", "att_window": [[0.0] * 3] * 4, "pe_window": [[-1, -1]] * 4}, "att_window must have shape"),
    ],
)
def test_a_start_the_model_cannot_use_is_refused(model, start, fragment):
    with pytest.raises(ValueError) as e:
        model.check_start(start)
    assert fragment in str(e.value)


def test_window_file_and_prerun_starts(model, tmp_path):
    sc = model.scalars(n=1)
    win = model.windows_after("token", sc, 37)
    one = jax.tree_util.tree_map(lambda a: a[0], win)
    path = save_window(one, tmp_path / "w.json")
    model.check_start(str(path))
    np.testing.assert_array_equal(np.asarray(model.initial_windows(str(path), sc).A), np.asarray(win.A))
    pre = PrerunStart(beta_o=3.0, steps=37)
    np.testing.assert_array_equal(np.asarray(model.prerun_window(pre).A), np.asarray(win.A)[0])
    _, a, _ = model.run_batch(sc, pre, Schedule(steps=10))
    _, b, _ = model.run_batch(sc, window_start(one), Schedule(steps=10))
    np.testing.assert_array_equal(np.asarray(a["att"]), np.asarray(b["att"]))


def test_one_start_per_point(model):
    sc = model.scalars({"beta_o": [3.0, 4.0, 5.0]})
    st = model.initial_states([TokenStart(row=0), TokenStart(row=2), TokenStart(row=0)], sc)
    np.testing.assert_array_equal(np.asarray(st.A)[:, 0], [[0, 0, 0, 1], [0, 1, 0, 0], [0, 0, 0, 1]])
    with pytest.raises(ValueError, match="2 starts for 3 points"):
        model.initial_states(["token", "token"], sc)


def test_the_map_is_a_toolkit_map(model):
    m = model.map("mq")
    assert isinstance(m, (AbstractMap, DesignedMap)) and hash(m) == hash(model.map("mq"))
    with pytest.raises(InputError, match="no full-state form"):
        model.map(full_state=True)
    with pytest.raises(ValueError, match="unknown observable"):
        model.map("nope")


@pytest.mark.slow
@pytest.mark.parametrize("param", BATCHED)
def test_params_of_sets_one_parameter_traceably(model, param):
    pf = model.params_of(param)
    assert model.params_of(param) is pf and model.params_of(param, "log") is not pf
    field = {"beta_o": "gain_o", "gamma": "gamma", "epsilon": "eps"}[param]
    cp, sc = jax.jit(pf)(jnp.asarray(0.37))
    assert float(getattr(sc, field)) == 0.37 and cp is not None
    others = [f for f in ("gain_o", "gamma", "eps") if f != field]
    base = jax.tree_util.tree_map(lambda a: a[0], model.scalars(n=1))
    for f in others:
        assert float(getattr(sc, f)) == float(getattr(base, f))
    np.testing.assert_allclose(float(getattr(model.params_of(param, "log")(jnp.log(0.37))[1], field)), 0.37)
    m = model.map()
    win = jax.tree_util.tree_map(lambda a: a[0], model.windows_after("token", model.scalars(n=1), 8))
    x, aux = m.state(win)
    d = jax.jacfwd(lambda s: m.step(x, aux, pf(s))[0])(jnp.asarray(float(getattr(base, field))))
    assert np.all(np.isfinite(np.asarray(d)))


@pytest.mark.slow
def test_trajectories_over_a_grid_carry_the_configuration(model):
    ds = trajectories(
        model.config, steps=12, transient=4, record_every=2, sweep={"gamma": [10.0, 20.0], "epsilon": [0.1, 0.2, 0.3]}
    )
    assert ds["mo_se"].dims == ("gamma", "epsilon", "step", "feature")
    assert ds["mo_se"].shape == (2, 3, 4, 4) and list(ds["step"].values) == [4, 6, 8, 10]
    assert ds["final_A"].shape == (2, 3, 4, 4) and ds["final_pe"].shape == (2, 3, 4, 2)
    cfg = json.loads(ds.attrs["config"])
    assert cfg["design"]["name"] == "4_duplicity_loop_4" and cfg["variant"] == "designed"
    assert "attnphys_version" in ds.attrs
    _, rec, _ = model.run_batch(
        model.scalars({"gamma": [20.0], "epsilon": [0.3]}), "token", Schedule(steps=12, transient=4, record_every=2)
    )
    np.testing.assert_array_equal(ds["mo_se"].sel(gamma=20.0, epsilon=0.3).values, np.asarray(rec["mo_se"])[0])
    by_l = trajectories(model.config, steps=4, sweep={"L": [2, 4]})  # L changes the model: one per value
    assert by_l["final_A"].dims[:2] == ("L", "lag") and np.isnan(by_l["final_A"].sel(L=2).values[2:]).all()
    with pytest.raises(InputError, match="unknown sweep field 'beta_att'"):
        trajectories(model.config, steps=4, sweep={"beta_att": [1.0, 2.0]})


def test_segmented_runs_end_where_the_plain_run_ends(model):
    """Lanes never retired end bitwise where run_batch ends; retired lanes keep their state."""
    sc = model.scalars({"beta_o": [2.0, 3.0, 4.0]})
    final, _, _ = model.run_batch(sc, "token", Schedule(steps=50, transient=50, record=()))
    st, done, retired = model.run_segments(
        sc, "token", 50, segment=20, window=4, stop=lambda rows, att, s, t: rows == 1
    )
    assert list(retired) == [False, True, False] and list(done) == [50, 20, 50]
    np.testing.assert_array_equal(np.asarray(st.A)[[0, 2]], np.asarray(final.A)[[0, 2]])
    assert model.batched == BATCHED


@pytest.mark.slow
def test_an_orbit_diagram_over_gamma_runs_on_the_designed_map(model):
    """The toolkit's orbit sweep (what a bifurcation diagram runs) over γ, with exponents: at γ = 20 the
    recorded orbit is the period-4 cycle with negative exponents (theory: docs/theory/dynamics.md §3)."""
    from attnphys.dynamics.classify import detect_period
    from attnphys.dynamics.orbits import OrbitSpec, orbit_sweep

    sc = model.scalars({"gamma": [0.5, 20.0]})
    m = model.map("mo_se")
    x0, aux0 = m.state(model.windows_after("token", sc, 3))
    out = orbit_sweep(
        m, OrbitSpec(steps=200, transient=300, k=2, align=100, n_orbit=64), x0, aux0, sc, shared=model.couplings
    )
    orbits = np.asarray(out["orbit"])
    assert orbits.shape == (2, 64, 4)
    assert int(detect_period(orbits[1])) == 4
    from attnphys.dmft.designed import emitted_patterns
    from attnphys.dmft.designed._report import is_cycle

    assert is_cycle(emitted_patterns(orbits[1, -4:], model.design), [0, 1, 2, 1])
    assert not is_cycle(emitted_patterns(orbits[0, -4:], model.design), [0, 1, 2, 1])
    assert np.all(np.asarray(out["exponents"])[1] < 0)

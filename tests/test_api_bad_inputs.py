"""Bad arguments of the Python analyses, as a new user gives them from a notebook: each is refused at once
with an error that names the argument (``InputError``, or ``ResourceError`` for what cannot fit), never a
traceback from pydantic, JAX or xarray, and never a result. The table grows with every case found."""

import numpy as np
import pytest

from attnphys.errors import InputError, ResourceError


def _dmft():
    import attnphys.dmft as d

    return d, d.DMFTConfig()


def _logistic():
    from attnphys.dynamics.maps import EXAMPLES

    return EXAMPLES["logistic"]


def _census_along(params):
    from attnphys.dynamics._census import census_batch

    return census_batch(_logistic(), np.asarray(params), n_ics=4, param_values=np.asarray(params))


def _continue(**kw):
    import jax.numpy as jnp

    from attnphys.dynamics import continuation

    args = dict(start_value=2.5, stop_value=2.8, period=1) | kw
    return continuation(_logistic(), jnp.array([0.5]), None, lambda s: s, **args)


def _orbit_continuation(**kw):
    import attnphys.dmft as d
    from attnphys.dmft.designed import designed_config

    args = dict(start_value=100.0, stop_value=101.0, start="token", transient=600) | kw
    return d.orbit_continuation(designed_config("4_duplicity_loop_4"), "beta_o", **args)


def _flow(**kw):
    from attnphys.clouds import particle_flow

    return particle_flow(**(dict(tokens=8, t_max=1.0, saves=3) | kw))


def _layers(**kw):
    from attnphys.clouds import iterate_layers

    return iterate_layers(**(dict(tokens=8, dim=4, layers=2) | kw))


def _config(**kw):
    import attnphys.dmft as d

    return d.DMFTConfig(**kw)


def _preset(name="paper", **kw):
    import attnphys.dmft as d

    return d.preset(name, **kw)


def _clouds():
    import attnphys.clouds as c

    return c


def _ki():
    import attnphys.dynamics as d

    return d


def _sk(n=4):
    return _ki().asymmetric_sk(n)


def _tiny():
    import xarray as xr

    return xr.Dataset(
        {"regime": ("beta_o", np.array([0, 1], np.int8)), "period": ("beta_o", [1, 2]),
         "lambda1": ("beta_o", [-0.5, -0.1])},
        coords={"beta_o": [1.0, 2.0]},
    )


def _folder():
    from pathlib import Path

    Path("folder").mkdir()
    return "folder"


def _toolkit_lyapunov(m=None, x0=None, params=3.5, batch=False):
    from attnphys.dynamics import lyapunov_spectrum

    m = _logistic() if m is None else m
    x0 = np.array([0.5]) if x0 is None else x0
    return lyapunov_spectrum(m, x0, None, params, steps=10, batch=batch)


CASES = [
    # configurations: pydantic's error becomes one naming the Python field, without pydantic's words
    ("config correlations without kind", lambda: _config(correlations={"seed": 1}), InputError,
     "correlations: must be a mapping that names its kind"),
    ("config correlations unknown kind", lambda: _config(correlations={"kind": "bogus"}), InputError,
     "correlations: kind 'bogus' is not one of"),
    ("config M text", lambda: _config(M="x"), InputError, "M:"),
    ("config M boolean", lambda: _config(M=True), InputError, "M: must be a number or text, not the boolean True"),
    ("config unknown field", lambda: _config(steps=3), InputError, "steps: not a field of DMFTConfig"),
    ("preset beta_o<0", lambda: _preset(beta_o=-1), InputError, "beta_o:"),
    ("preset unknown", lambda: _preset("nope"), InputError, "unknown preset 'nope'"),
    ("trajectories steps=True", lambda: _dmft()[0].trajectories(_dmft()[1], steps=True), InputError,
     "steps: must be a number or text, not the boolean True"),
    ("trajectories steps 2e9", lambda: _dmft()[0].trajectories(_dmft()[1], steps=2 * 10**9), ResourceError,
     "lower `steps`"),
    ("trajectories steps 1e30", lambda: _dmft()[0].trajectories(_dmft()[1], steps=10**30), InputError,
     "steps: must be at most 2,147,483,647"),
    ("bifurcation steps 1e25", lambda: _dmft()[0].bifurcation(_dmft()[1], {"beta_o": [1.0]}, steps=10**25,
                                                              transient=10, n_orbit=20), InputError,
     "steps: must be at most"),
    ("trajectories sweep list", lambda: _dmft()[0].trajectories(_dmft()[1], sweep=[1, 2], steps=5), InputError,
     "sweep: must be a mapping of field to values"),
    ("trajectories sweep gamma", lambda: _dmft()[0].trajectories(_dmft()[1], sweep={"gamma": [1.0]}, steps=5),
     InputError, "gamma is a field of designed models"),
    ("final_windows of a list", lambda: _dmft()[0].final_windows([1]), InputError, "ds: must be the dataset"),
    ("final_windows of another dataset", lambda: _dmft()[0].final_windows(__import__("xarray").Dataset()),
     InputError, "ds: holds no final windows"),
    ("save_window of text", lambda: _dmft()[0].save_window("x", "w.json"), InputError, "win: must be a Window"),
    # the dynamics toolkit: wrong types and batches of different sizes, before anything is traced
    ("lyapunov map text", lambda: _toolkit_lyapunov("logistic"), InputError, "m: must be a map"),
    ("lyapunov params text", lambda: _toolkit_lyapunov(params="a"), InputError, "params: must hold numbers"),
    ("lyapunov x0 text", lambda: _toolkit_lyapunov(x0="x"), InputError, "x0: must be an array"),
    ("lyapunov batches differ", lambda: _toolkit_lyapunov(x0=np.full((3, 1), 0.5), params=np.array([3.5, 3.6]),
                                                          batch=True), InputError, "params: every leaf"),
    ("orbit spec text", lambda: __import__("attnphys.dynamics", fromlist=["orbit"]).orbit(
        _logistic(), "x", np.array([0.5]), None, 3.5), InputError, "spec: must be an OrbitSpec"),
    # the DMFT analyses: a task's refused option names the argument, not pydantic's model
    ("trajectories steps<1", lambda: _dmft()[0].trajectories(_dmft()[1], steps=-1), InputError, "steps:"),
    ("trajectories record_every=0", lambda: _dmft()[0].trajectories(_dmft()[1], steps=10, transient=0,
                                                                    record_every=0), InputError, "record_every"),
    ("trajectories observable", lambda: _dmft()[0].trajectories(_dmft()[1], steps=10, transient=0,
                                                                record=("bogus",)), InputError, "bogus"),
    ("lyapunov exponents=0", lambda: _dmft()[0].lyapunov_spectrum(_dmft()[1], steps=10, transient=0, exponents=0),
     InputError, "exponents"),
    ("finite n_orbit", lambda: _dmft()[0].bifurcation(_dmft()[1], {"beta_o": [1.0]}, steps=40, transient=10,
                                                      n_orbit=0), InputError, "n_orbit"),
    # where a sweep runs: checked by a dry run as by the real call
    ("bifurcation chunk=0", lambda: _dmft()[0].bifurcation(_dmft()[1], {"beta_o": [1.0]}, steps=40, transient=10,
                                                           n_orbit=20, chunk=0), InputError, "chunk:"),
    ("bifurcation workers=0", lambda: _dmft()[0].bifurcation(_dmft()[1], {"beta_o": [1.0]}, steps=40,
                                                             transient=10, n_orbit=20, executor="processes",
                                                             workers=0), InputError, "workers:"),
    ("bifurcation executor plan", lambda: _dmft()[0].plan_bifurcation(_dmft()[1], {"beta_o": [1.0, 1.5]}, steps=40,
                                                                      transient=10, n_orbit=20, executor="gpu"),
     InputError, "executor:"),
    ("bifurcation workers in process", lambda: _dmft()[0].bifurcation(_dmft()[1], {"beta_o": [1.0]}, steps=40,
                                                                      transient=10, n_orbit=20, workers=2),
     InputError, "workers:"),
    # wrong values of every keyword, one at a time (a sweep of the analyses' signatures found these)
    ("trajectories record_every huge", lambda: _dmft()[0].trajectories(_dmft()[1], steps=40, record_every=10**12),
     InputError, "record_every:"),
    ("lyapunov transient=0 from a token", lambda: _dmft()[0].lyapunov_spectrum(_dmft()[1], steps=60, transient=0),
     InputError, "transient:"),
    ("lyapunov history_every huge", lambda: _dmft()[0].lyapunov_spectrum(_dmft()[1], steps=60, transient=20,
                                                                         history_every=10**12),
     InputError, "history_every:"),
    ("bifurcation transient=0 from a token", lambda: _dmft()[0].bifurcation(_dmft()[1], {"beta_o": [1.0]}, steps=60,
                                                                            transient=0, exponents=1, n_orbit=20),
     InputError, "transient:"),
    ("bifurcation classify text", lambda: _dmft()[0].bifurcation(_dmft()[1], {"beta_o": [1.0]}, steps=60,
                                                                 transient=20, n_orbit=20, classify="x"),
     InputError, "classify"),
    ("bifurcation continuation 'x'", lambda: _dmft()[0].bifurcation(_dmft()[1], {"beta_o": [1.0]}, steps=60,
                                                                    transient=20, n_orbit=20, continuation="x"),
     InputError, "continuation"),
    ("bifurcation overwrite text", lambda: _dmft()[0].bifurcation(_dmft()[1], {"beta_o": [1.0]}, steps=60,
                                                                  transient=20, n_orbit=20, overwrite="x"),
     InputError, "overwrite"),
    ("phase diagram max_section huge", lambda: _dmft()[0].phase_diagram(
        _dmft()[1], {"beta_o": [1.0], "beta_att": [2.0]}, steps=60, transient=20, exponents=1, max_section=10**12),
     InputError, "max_section"),
    ("attractors exponents huge", lambda: _dmft()[0].attractors(_dmft()[1], ics=4, steps=1500, transient=500,
                                                                exponents=10**6),
     InputError, "exponents:"),
    ("attractors max_attractors huge", lambda: _dmft()[0].attractors(_dmft()[1], ics=4, steps=1500, transient=500,
                                                                     max_attractors=10**9),
     ResourceError, "max_attractors"),
    ("finite n not a multiple of n_se", lambda: _dmft()[0].finite_trajectories(_dmft()[1], 100, steps=20),
     InputError, "n:"),
    # continuation: the direction is from start_value to stop_value; a step must move
    ("continuation step=0", lambda: _continue(step=0.0), InputError, "step:"),
    ("continuation step<0", lambda: _continue(step=-0.01), InputError, "step:"),
    ("continuation max_points=0", lambda: _continue(max_points=0), InputError, "max_points:"),
    ("continuation start text", lambda: _continue(start_value="2.5"), InputError, "start_value:"),
    ("continuation start nan", lambda: _continue(start_value=float("nan")), InputError, "start_value:"),
    ("dmft orbit continuation step=0", lambda: _orbit_continuation(step=0.0), InputError, "step:"),
    ("dmft orbit continuation start text", lambda: _orbit_continuation(start_value="100.0"), InputError,
     "start_value:"),
    # censuses and tracks
    ("census params nan", lambda: __import__("attnphys.dynamics", fromlist=["census"]).census(
        _logistic(), float("nan"), n_ics=4), InputError, "params:"),
    ("census options dict", lambda: __import__("attnphys.dynamics", fromlist=["census"]).census(
        _logistic(), 3.5, n_ics=4, options={"budget": 10}), InputError, "options:"),
    ("census 1e9 starts", lambda: __import__("attnphys.dynamics", fromlist=["census"]).census(
        _logistic(), 3.5, n_ics=10**9), ResourceError, "ics:"),
    ("tracks of no census", lambda: __import__("attnphys.dynamics", fromlist=["tracks"]).tracks(
        __import__("xarray").Dataset()), InputError, "ds:"),
    ("tracks unsorted", lambda: __import__("attnphys.dynamics", fromlist=["tracks"]).tracks(
        _census_along([3.2, 3.5, 3.3])), InputError, "increasing"),
    ("tracks tol<0", lambda: __import__("attnphys.dynamics", fromlist=["tracks"]).tracks(
        _census_along([3.2, 3.3]), tol=-1.0), InputError, "tol:"),
    ("tracks quantile", lambda: __import__("attnphys.dynamics", fromlist=["tracks"]).tracks(
        _census_along([3.2, 3.3]), quantile=2.0), InputError, "quantile:"),
    # clouds
    ("flow tokens=0", lambda: _flow(tokens=0), InputError, "tokens:"),
    ("flow dim=1", lambda: _flow(dim=1), InputError, "dim:"),
    ("flow dynamics", lambda: _flow(dynamics="bogus"), InputError, "dynamics:"),
    ("flow init", lambda: _flow(init="bogus"), InputError, "init:"),
    ("flow rtol=0", lambda: _flow(rtol=0.0), InputError, "rtol:"),
    ("flow cluster_delta nan", lambda: _flow(cluster_delta=float("nan")), InputError, "cluster_delta:"),
    ("layers heads<0", lambda: _layers(heads=-1), InputError, "heads:"),
    ("layers mlp", lambda: _layers(mlp="bogus"), InputError, "mlp:"),
    ("layers resample_every<0", lambda: _layers(resample_every=-1), InputError, "resample_every:"),
    ("layers beta text", lambda: _layers(beta="1"), InputError, "beta:"),
    ("flow 1e9 tokens", lambda: _flow(tokens=10**9), ResourceError, "tokens:"),
    ("flow 1e10 saves", lambda: _flow(tokens=4, saves=10**10), InputError, "saves: must be at most 2,147,483,647"),
    ("layers 1e9 tokens", lambda: _layers(tokens=10**9), ResourceError, "tokens:"),
    ("layers 1e11 layers", lambda: _layers(layers=10**11), InputError, "layers: must be at most 2,147,483,647"),
    ("layers 1e7 dimensions", lambda: _layers(dim=10**7), ResourceError, "dim:"),
    # causal clusters and Renyi parking
    ("renyi centers of text", lambda: _clouds().renyi_centers("x", 0.5), InputError, "x: must be real numbers"),
    ("renyi delta text", lambda: _clouds().renyi_centers(np.ones((3, 2)), "0.5"), InputError, "delta:"),
    ("parking mean of a negative delta", lambda: _clouds().parking_mean(-1.0), InputError,
     "delta: must be angles in (0, pi]"),
    ("parking mean of delta 0", lambda: _clouds().parking_mean(np.array([0.5, 0.0])), InputError, "delta:"),
    ("parking mean of text", lambda: _clouds().parking_mean("x"), InputError, "delta:"),
    ("causal clusters beta text", lambda: _clouds().causal_clusters("x"), InputError, "beta:"),
    ("causal clusters seed -1", lambda: _clouds().causal_clusters([64.0], tokens=4, saves=10, seed=-1), InputError,
     "seed:"),
    ("causal clusters 1e9 saves", lambda: _clouds().causal_clusters([64.0], tokens=4, saves=10**9), ResourceError,
     "saves:"),
    # kinetic Ising
    ("kinetic ising steps=True", lambda: _ki().kinetic_ising_mean_field(*_sk(), steps=True), InputError, "steps:"),
    ("kinetic ising steps 1e12", lambda: _ki().kinetic_ising_mean_field(*_sk(), steps=10**12), InputError,
     "steps: must be an integer in [1, 2,147,483,647]"),
    ("kinetic ising steps 1e9", lambda: _ki().kinetic_ising_mean_field(*_sk(), steps=10**9), ResourceError,
     "steps:"),
    ("kinetic ising fields text", lambda: _ki().kinetic_ising_mean_field("x", _sk()[1], steps=3), InputError, "H:"),
    ("kinetic ising no spins", lambda: _ki().kinetic_ising_mean_field(np.zeros(0), np.zeros((0, 0)), steps=3),
     InputError, "H: must be a vector of fields (n,) with n >= 1"),
    ("kinetic ising NaN field", lambda: _ki().kinetic_ising_mean_field(np.array([np.nan, 0.0]), np.zeros((2, 2)),
                                                                       steps=3), InputError, "H: the fields"),
    ("kinetic ising m0 NaN", lambda: _ki().kinetic_ising_mean_field(*_sk(), steps=3, m0=np.full(4, np.nan)),
     InputError, "m0:"),
    ("kinetic ising method list", lambda: _ki().kinetic_ising_mean_field(*_sk(), steps=3, method=["tap"]),
     InputError, "method:"),
    ("kinetic ising 1e15 samples", lambda: _ki().kinetic_ising_sample(*_sk(), steps=3, samples=10**15), InputError,
     "samples:"),
    ("kinetic ising sample seed -1", lambda: _ki().kinetic_ising_sample(*_sk(), steps=3, samples=4, seed=-1),
     InputError, "seed:"),
    ("kinetic ising batch 0", lambda: _ki().kinetic_ising_sample(*_sk(), steps=3, samples=4, batch=0), InputError,
     "batch:"),
    ("kinetic ising exact steps 1e15", lambda: _ki().kinetic_ising_exact(*_sk(), steps=10**15), InputError,
     "steps:"),
    ("asymmetric SK beta NaN", lambda: _ki().asymmetric_sk(4, beta=float("nan")), InputError, "beta:"),
    ("asymmetric SK 1e7 spins", lambda: _ki().asymmetric_sk(10**7), ResourceError, "n:"),
    ("kinetic ising errors of lists", lambda: _ki().kinetic_ising_errors([1], [2]), InputError, "pred:"),
    ("kinetic ising errors of other sizes", lambda: _ki().kinetic_ising_errors(
        _ki().kinetic_ising_mean_field(*_sk(), steps=3), _ki().kinetic_ising_mean_field(*_sk(5), steps=3)),
     InputError, "ref: has other spins"),
    # diagram comparison and portraits: wrong types
    ("compare tol text", lambda: _dmft()[0].compare_diagrams(_tiny(), _tiny(), tol="x"), InputError, "tol:"),
    ("compare a list", lambda: _dmft()[0].compare_diagrams([1], _tiny()), InputError, "a: must be a dataset"),
    ("compare a folder", lambda: _dmft()[0].compare_diagrams(_tiny(), _folder()), InputError,
     "b: folder is a folder that is not a result store"),
    ("compare regime codes of another version", lambda: _dmft()[0].compare_diagrams(
        _tiny().assign(regime=_tiny().regime * 0 + 99), _tiny()), InputError, "a: holds regime codes"),
    ("portraits of no sweep record", lambda: _dmft()[0].diagram_portraits(_tiny(), [1.0]), InputError,
     "diagram: records no sweep"),
]


@pytest.mark.slow
@pytest.mark.parametrize("case, call, error, names", CASES, ids=[c[0] for c in CASES])
def test_a_bad_argument_is_refused_naming_it(case, call, error, names, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error) as info:
        call()
    assert type(info.value).__module__ == "attnphys.errors"
    assert names in str(info.value), str(info.value)
    # the Python argument is named, never a command-line option or pydantic's internals
    for word in ("discriminator", "Input tag", " --", "unknown option"):
        assert word not in str(info.value), str(info.value)


@pytest.mark.parametrize("bad, shown", [(np.nan, "nan"), (-1.0, "-1.0"), (np.inf, "inf")])
def test_a_long_axis_is_checked_at_its_extremes_and_its_first_non_finite_value(bad, shown):
    """An axis of a real field longer than LARGE_AXIS is checked where its rules can fail (intervals: the
    extremes; and the first NaN or infinity), so a bad value anywhere in it is still refused, by name."""
    from attnphys.dmft._variant import LARGE_AXIS
    from attnphys.dmft.designed import designed_config

    for cfg in (_dmft()[1], designed_config("4_duplicity_loop_4")):
        values = np.linspace(0.5, 2.0, LARGE_AXIS + 5)
        cfg.check_axis("beta_o", values)
        values[LARGE_AXIS // 3] = bad
        with pytest.raises(InputError, match=f"beta_o=({shown}|{bad:g})"):
            cfg.check_axis("beta_o", values)


@pytest.mark.slow
def test_save_window_follows_the_output_rules(tmp_path):
    """An existing file is replaced only with ``overwrite``, and only when it is a window file."""
    import attnphys.dmft as d
    from attnphys.errors import OutputError

    cfg = d.DMFTConfig()
    win = d.final_windows(d.trajectories(cfg, steps=3))[0]
    path = d.save_window(win, tmp_path / "w.json")
    with pytest.raises(OutputError, match="exists; pass overwrite=True"):
        d.save_window(win, path)
    d.save_window(win, path, overwrite=True)
    foreign = tmp_path / "notes.json"
    foreign.write_text('{"mine": 1}')
    with pytest.raises(OutputError, match="not a window file"):
        d.save_window(win, foreign, overwrite=True)
    assert foreign.read_text() == '{"mine": 1}'


@pytest.fixture(scope="module")
def diagrams():
    """Two tiny bifurcation diagrams of the default network on one grid: a, and b of another schedule."""
    import attnphys.dmft as d

    grid = {"beta_o": [0.0, 1.5, 3.0]}
    a = d.bifurcation(d.DMFTConfig(), grid, steps=30, transient=10, n_orbit=20, exponents=1)
    b = d.bifurcation(d.DMFTConfig(), grid, steps=40, transient=20, n_orbit=20, exponents=1)
    return a, b


@pytest.mark.slow
def test_portraits_of_a_cut_diagram_read_the_chosen_point(diagrams):
    """A dataset cut from a diagram keeps the whole grid in its sweep record: the stored values of a point
    are those at its parameter values (they were those of the record's index, another point), and a point
    the cut lacks is refused, naming the diagram."""
    import attnphys.dmft as d

    a = diagrams[0]
    full = d.diagram_portraits(a, [1.5], keep=1)
    cut = d.diagram_portraits(a.isel(beta_o=[1, 2]), [1.5], keep=1)
    np.testing.assert_array_equal(cut.stored_exponents.values, full.stored_exponents.values)
    np.testing.assert_array_equal(cut.stored_exponents.values[0], a.exponents.sel(beta_o=1.5).values)
    with pytest.raises(InputError, match="diagram: holds no stored point"):
        d.diagram_portraits(a.isel(beta_o=[0, 2]), [1.5], keep=1)


@pytest.mark.parametrize(
    "values, fragment",
    [
        (None, "must be a list of points"),
        ("abc", "must be a list of points"),
        ({"beta_o": 1.5}, "list of points"),
        ([[1.5, 2.0]], "each point needs 1 value"),
        ([float("nan")], "is not a finite value"),
        (["x"], "a number"),
    ],
)
def test_portraits_values_of_a_wrong_kind(diagrams, values, fragment):
    import attnphys.dmft as d

    with pytest.raises(InputError, match="values: ") as e:
        d.diagram_portraits(diagrams[0], values)
    assert fragment in str(e.value)


@pytest.mark.parametrize("keep, record", [(2.5, ("mo_se",)), (True, ("mo_se",)), ("3", ("mo_se",)), (None, 3)])
def test_portraits_keep_and_record_of_a_wrong_kind(diagrams, keep, record):
    import attnphys.dmft as d

    with pytest.raises(InputError, match="keep: |record: "):
        d.diagram_portraits(diagrams[0], [1.5], keep=keep, record=record)


def test_compare_names_the_run_options_that_differ(diagrams):
    """Diagrams of the same configuration run with other schedules were reported as of 'the same'
    configuration: the run options that differ are listed beside the configuration's."""
    import json

    import attnphys.dmft as d

    ds = d.compare_diagrams(*diagrams)
    assert json.loads(ds.attrs["config_changes"]) == {}
    assert json.loads(ds.attrs["run_changes"]) == {"steps": [30, 40], "transient": [10, 20]}
    assert json.loads(d.compare_diagrams(diagrams[0], diagrams[0]).attrs["run_changes"]) == {}

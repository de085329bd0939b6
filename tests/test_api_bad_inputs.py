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
    ("lyapunov params text", lambda: _toolkit_lyapunov(params="a"), InputError, "params: must be an array"),
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
]


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

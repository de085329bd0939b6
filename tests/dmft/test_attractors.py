"""Attractors of the mean-field map: census at β_o = 1.27, exact exponents of periodic attractors,
continuation of a periodic orbit, basins along β_o (through the command line where a command exists)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from typer.testing import CliRunner

from attnphys.cli import app
from attnphys.dynamics.classify import flag_names
from attnphys.io import load

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def census_127(tmp_path_factory):
    d = tmp_path_factory.mktemp("att")
    res = invoke("dmft", "attractors", "--preset", "paper", "--beta-o", "1.27", "--ics", "16", "--steps", "60000",
                 "--transient", "40000", "--sampler", "random", "--out", d / "att.zarr", "--plot", d / "att.png")
    assert res.exit_code == 0, res.output
    return load(d / "att.zarr"), d


@pytest.mark.slow
def test_census_finds_the_coexisting_period_28_and_56_orbits(census_127):
    ds, d = census_127
    assert (d / "att.png").stat().st_size > 0
    n = int(ds.n_attractors)
    found = ds.isel(attractor=slice(0, n))
    assert {28, 56} <= set(found.period.values.tolist())
    names = flag_names(ds.kind.attrs)
    assert all(names[k] == "periodic" for k in found.kind.values)
    # every start is counted once: basins and the unsettled share add up to 1
    assert float(found.basin_fraction.sum() + ds.unsettled_fraction) == pytest.approx(1.0, abs=1e-12)
    for a in range(n):
        members = int((ds.label.values == a).sum())
        assert members == int(found.n_members[a]) and found.basin_fraction[a] == pytest.approx(members / 16)
        assert found.basin_ci_low[a] <= found.basin_fraction[a] <= found.basin_ci_high[a]
    # exponents of a periodic attractor are log|μ|/p, sorted descending, and the orbits are stable
    np.testing.assert_allclose(found.exponents.values, np.log(found.floquet_abs.values) / found.period.values[:, None],
                               rtol=1e-12)
    assert np.all(np.diff(found.exponents.values, axis=1) <= 0) and np.all(found.stable.values == 1)
    # the command's interface: dims and variables named as documented
    assert {"attractor", "ic", "exponent"} <= set(ds.dims)
    for v in ("kind", "period", "basin_fraction", "basin_ci_low", "basin_ci_high", "exponents", "floquet_abs",
              "label", "settle_step"):
        assert v in ds and ds[v].attrs.get("long_name"), v
    assert ds.label.dims == ("ic",) and ds.exponents.dims == ("attractor", "exponent")
    settled = ds.label.values >= 0
    assert np.all(ds.settle_step.values[settled] >= 0) and np.all(ds.settle_step.values[settled] <= 60000)


@pytest.mark.slow
def test_floquet_exponents_equal_benettin_on_the_same_orbit():
    """The checkpoint start settles on one of the coexisting period-28 and period-56 orbits at β_o = 1.27
    (which one depends on the rounding along its chaotic transient); Benettin over whole periods from
    aligned vectors must reproduce log|μ_i|/p."""
    from attnphys.dmft._api.attractors import exact_period
    from attnphys.dmft.config import preset
    from attnphys.dmft.model import DMFTModel
    from attnphys.dmft.starts import parse_start
    from attnphys.dynamics._lyapunov import lyapunov
    from attnphys.dynamics.periodic import floquet, refine

    model = DMFTModel.of(preset("paper"))
    par = model.params_of("beta_o")(jnp.asarray(1.27))
    sc = jax.tree_util.tree_map(lambda a: jnp.asarray(a)[None], par[1])
    win = jax.tree_util.tree_map(lambda a: a[0], model.windows_after(parse_start("checkpoint"), sc, 40_000))
    p = exact_period(model, win, par[1], 256)
    assert p in (28, 56)
    m = model.map()
    orb = refine(m, *m.state(win), par, p)
    assert float(orb.residual) < 1e-12
    fl = floquet(m, orb, params=par)
    ben = lyapunov(m, orb.x, orb.aux, par, steps=100 * p, k=3, align=20 * p)
    # compared as growth rates of 1-, 2- and 3-volumes (partial sums): the period-28 orbit's leading multipliers
    # are a complex pair, whose single exponents Benettin separates only at O(1/T)
    np.testing.assert_allclose(
        np.cumsum(-np.sort(-np.asarray(ben.exponents)))[1:], np.cumsum(np.asarray(fl.exponents[:3]))[1:], atol=1e-6
    )
    assert np.asarray(ben.exponents).max() == pytest.approx(float(fl.exponents[0]), abs=5e-4)


@pytest.mark.slow
def test_orbit_continuation_locates_the_fold_where_the_orbit_is_born(tmp_path):
    """The checkpoint start settles on a period-16 orbit at β_o = 1.25; followed downwards it turns at a
    fold (μ = +1). Independent check: Newton finds the orbit just above the fold and none just below."""
    from attnphys.dmft.config import preset
    from attnphys.dmft.model import DMFTModel
    from attnphys.dmft.starts import parse_start
    from attnphys.dynamics.periodic import refine

    out = tmp_path / "cont.zarr"
    res = invoke("dmft", "orbit-continuation", "--preset", "paper", "--start-value", "1.25", "--stop-value", "1.2",
                 "--transient", "40000", "--max-points", "200", "--out", out)
    assert res.exit_code == 0, res.output
    ds = load(out)
    assert ds.attrs["period"] == 16
    folds = [i for i, k in enumerate(ds.event_kind.values) if k == "fold"]  # names in the store
    assert folds
    i = folds[0]
    s_fold = float(ds.event_s[i])
    mult = ds.event_multiplier_real.values[i] + 1j * ds.event_multiplier_imag.values[i]
    assert np.min(np.abs(mult - 1.0)) < 1e-6
    assert 1.2 < s_fold < 1.25
    # the branch turns at the fold: its points stay above it, the nearest within one arclength step
    assert 0 <= float(ds.s.values.min()) - s_fold < 1e-4
    model = DMFTModel.of(preset("paper"))
    m, pf = model.map(), model.params_of("beta_o")
    sc = jax.tree_util.tree_map(lambda a: jnp.asarray(a)[None], pf(jnp.asarray(1.25))[1])
    win = jax.tree_util.tree_map(lambda a: a[0], model.windows_after(parse_start("checkpoint"), sc, 40_000))
    aux = m.state(win)[1]  # the positional phase the branch was computed with
    x = jnp.asarray(ds.event_x.values[i])
    above = refine(m, x, aux, pf(jnp.asarray(s_fold + 1e-4)), 16)
    assert bool(above.converged) and float(jnp.max(jnp.abs(above.x - x))) < 0.05
    below = refine(m, x, aux, pf(jnp.asarray(s_fold - 1e-4)), 16)
    assert not bool(below.converged) or float(jnp.max(jnp.abs(below.x - x))) > 0.05


@pytest.mark.slow
@pytest.mark.long
def test_basins_command_tracks_the_coexisting_orbits(tmp_path):
    out, fig = tmp_path / "bas.zarr", tmp_path / "bas.png"
    res = invoke("dmft", "basins", "--preset", "paper", "--param", "beta_o", "--start-value", "1.265",
                 "--stop-value", "1.275", "--num", "3", "--ics", "16", "--steps", "60000", "--transient", "40000",
                 "--out", out, "--plot", fig)
    assert res.exit_code == 0, res.output
    ds = load(out)
    assert ds.kind.dims == ("beta_o", "attractor") and "track" in ds
    assert fig.stat().st_size > 0
    total = ds.basin_fraction.fillna(0).sum("attractor") + ds.unsettled_fraction
    np.testing.assert_allclose(total.values, 1.0, atol=1e-12)
    # the period-28 orbit at 1.27 belongs to a track that also exists at the neighbouring value
    mid = ds.isel(beta_o=1)
    a28 = int(np.flatnonzero(mid.period.values == 28)[0])
    t = int(mid.track.values[a28])
    assert np.isfinite(ds.track_basin_fraction.values[:, t]).sum() >= 2
    # continued ids (basin overlap over the common starts, then distance): one distinct id per attractor present
    cid, present = ds.continued_id.values, ds.kind.values >= 0
    assert ((cid >= 0) == present).all()
    assert all(len(set(cid[b, present[b]])) == present[b].sum() for b in range(cid.shape[0]))
    assert ((ds.matched_by.values > 0) <= present).all() and (ds.matched_by.values[0] == 0).all()


@pytest.mark.slow
def test_cached_attention_map_follows_the_plain_map_and_settles_alike():
    """The DMFT map's cached step (one new row of overlaps per step) follows its plain step to round-off
    over a chaotic stretch, and a settle run on it finds the same periods and settling steps as one on the
    plain step (theory: docs/theory/dynamics.md §1.1, docs/theory/dmft.md §3.7)."""
    from dataclasses import dataclass

    from attnphys.dmft.config import preset
    from attnphys.dmft.maps import AttentionMap
    from attnphys.dmft.model import DMFTModel
    from attnphys.dmft.tasks import WindowSampler
    from attnphys.dynamics.settle import SettleOptions, settle

    cfg = preset("paper")
    model = DMFTModel.of(cfg)
    m = model.map("mo_se")
    sc = model.scalars({"beta_o": np.array([1.27, 1.2738])}, n=2)
    x0, aux0 = WindowSampler(cfg.L, cfg.M, cfg.P).sample(m, jax.random.PRNGKey(3), 8, None)
    params = (model.couplings, jax.tree_util.tree_map(lambda a: a[0], sc))
    x, aux = x0[0], jax.tree_util.tree_map(lambda a: a[0], aux0)
    c = m.cache_aux(x, aux, params)
    step, cached = jax.jit(m.step), jax.jit(m.step_cached)
    for _ in range(300):
        x2, aux = step(x, aux, params)
        xc, c = cached(x, c, params)
        np.testing.assert_allclose(xc, x2, rtol=0, atol=1e-13)
        x = x2
    for got, want in zip(m.uncache_aux(c), aux):
        np.testing.assert_array_equal(got, want)

    @dataclass(frozen=True)
    class Plain(AttentionMap):
        def cache_aux(self, x, aux, params):
            return aux

        def step_cached(self, x, caux, params):
            return self.step(x, caux, params)

        def uncache_aux(self, caux):
            return caux

    o = SettleOptions(budget=40_000, transient=20_000)
    pidx = np.repeat([0, 1], 4)
    runs = [settle(mm, x0, aux0, pidx, sc, model.couplings, o) for mm in (m, Plain(cfg.L, cfg.M))]
    for f in ("status", "period", "settle", "t"):
        np.testing.assert_array_equal(getattr(runs[0], f), getattr(runs[1], f), err_msg=f)
    assert set(runs[0].period[runs[0].status == 1].tolist()) & {28, 56}


@pytest.mark.parametrize(
    "preset_name, beta_o, pre, steps",
    [("paper", 1.27, 0, 6), ("paper", 2.2, 0, 40), ("paper-2024", 1.5, 4, 40), ("paper-pe5", 1.554, 0, 40)],
)
@pytest.mark.slow
def test_closed_form_tangents_equal_forward_mode_tangents(preset_name, beta_o, pre, steps):
    """The DMFT map's cached tangent step (closed-form Jacobian row with cached slopes, theory:
    docs/theory/dmft.md §6.1) gives the states of the cached step bit for bit and J Q of forward-mode
    differentiation of the plain step to round-off, on filling windows (n < L) and full ones, for L = 4
    and the P = 5 preset's L = 32."""
    from attnphys.dmft.config import preset
    from attnphys.dmft.model import DMFTModel

    cfg = preset(preset_name)
    model = DMFTModel.of(cfg)
    m = model.map("mo_se")
    sc = model.scalars({"beta_o": np.array([beta_o])})
    params = (model.couplings, jax.tree_util.tree_map(lambda a: a[0], sc))
    # a token start: the window fills during the first L - 1 steps (the 2024 era's token leaves it first)
    x, aux = m.state(jax.tree_util.tree_map(lambda a: a[0], model.windows_after("token", sc, pre)))
    D = x.shape[0]
    Q = jnp.asarray(np.linalg.qr(np.random.default_rng(1).normal(size=(D, 3)))[0])
    c = m.cache_aux(x, aux, params)
    t = m.tangent_aux(x, c, params)
    tangent, cached, plain = jax.jit(m.tangent), jax.jit(m.tangent_cached), jax.jit(m.step_cached)
    for i in range(steps):
        x2, aux2, JQ = tangent(x, aux, params, Q)
        xt, t, JQt = cached(x, t, params, Q)
        xc, c = plain(x, c, params)
        np.testing.assert_array_equal(xt, xc)  # the tangent step moves the state exactly as the cached step
        np.testing.assert_allclose(xt, x2, rtol=0, atol=1e-13)
        scale = float(jnp.max(jnp.abs(JQ)))
        np.testing.assert_allclose(JQt, JQ, rtol=0, atol=1e-12 * scale, err_msg=f"step {i}")
        x, aux, Q = xc, aux2, jnp.linalg.qr(JQt)[0]
    assert int(aux[1]) == min(cfg.L, 1 + pre + steps)


@pytest.mark.slow
def test_lyapunov_exponents_unchanged_by_the_cached_tangents():
    """Benettin exponents of the DMFT map with the cached, closed-form tangents equal those of forward-mode
    tangents on the plain map: to 1e-12 on the period-28/56 orbits at β_o = 1.27, and over a short chaotic
    stretch at β_o = 2.2 (before round-off differences of the trajectories grow) to 1e-9
    (theory: docs/theory/dmft.md §6.1, docs/theory/dynamics.md §2.1)."""
    from attnphys.dmft.config import preset
    from attnphys.dmft.model import DMFTModel
    from attnphys.dynamics._lyapunov import lyapunov
    from attnphys.dynamics.maps import FunctionMap

    cfg = preset("paper")
    model = DMFTModel.of(cfg)
    m = model.map("mo_se")
    plain = FunctionMap(m.step)  # no cache: forward-mode tangents on the plain step
    for beta_o, transient, steps, tol in ((1.27, 20_000, 5600, 1e-12), (2.2, 5000, 300, 1e-9)):
        sc = model.scalars({"beta_o": np.array([beta_o])})
        params = (model.couplings, jax.tree_util.tree_map(lambda a: a[0], sc))
        win = jax.tree_util.tree_map(lambda a: a[0], model.windows_after("checkpoint", sc, transient))
        x, aux = m.state(win)
        got = lyapunov(m, x, aux, params, steps=steps, k=12)
        want = lyapunov(plain, x, aux, params, steps=steps, k=12)
        np.testing.assert_allclose(got.exponents[:3], want.exponents[:3], rtol=0, atol=tol, err_msg=f"beta_o={beta_o}")
        # below the top three, directions fall below round-off (theory: docs/theory/dmft.md §6.2): those
        # exponents are set by the arithmetic, not by the map; the resolved ones agree
        resolved = (np.asarray(got.roundoff) == 0) & (np.asarray(want.roundoff) == 0)
        assert resolved[:3].all()
        np.testing.assert_allclose(got.exponents[resolved], want.exponents[resolved], rtol=0, atol=tol)


# -- starts outside the map's domain: refused, never counted as an attractor ------------------------------

AMPLITUDES = {
    # case: (the amplitude given, refused?)
    "overflowing": ("1e308", True),
    "first steps overflow": ("1e10", True),
    "above the cube": ("1.5", True),
    "the cube's edge": ("1", False),
    "inside": ("0.25", False),
}


@pytest.mark.parametrize("command", ["attractors", "stability", "basins"])
@pytest.mark.parametrize("case", list(AMPLITUDES))
def test_random_starts_outside_the_cube_of_attention_outputs_are_refused_naming_the_amplitude(
    tmp_path, monkeypatch, command, case
):
    import attnphys.dynamics
    import attnphys.dynamics._census as census_module
    import attnphys.sweeps.engine as engine

    amplitude, refused = AMPLITUDES[case]

    def never(*args, **kwargs):
        raise AssertionError("ran")

    monkeypatch.setattr(engine, "compute_chunk", never)
    # the name the analyses import first: reading it loads the real function, which the undo then restores
    monkeypatch.setattr(attnphys.dynamics, "census", never)
    monkeypatch.setattr(census_module, "census", never)
    monkeypatch.chdir(tmp_path)  # the commands without --out write to the working folder
    extra = ["--param", "beta_o", "--start-value", "1.2", "--stop-value", "1.3", "--num", "2", "--out",
             tmp_path / "b.zarr"] if command == "basins" else []
    res = invoke("dmft", command, "--amplitude", amplitude, "--ics", "4", "--steps", "2000", "--transient", "100",
                 *extra)
    if refused:
        assert res.exit_code == 2, res.output
        message = " ".join(res.output.split())
        assert f"--amplitude: must be at most 1 (got {float(amplitude):g})" in message
        assert "outside the map's domain" in message and "Traceback" not in res.output
    else:  # accepted: the run starts (and stops at the stand-in for the computation)
        assert "--amplitude" not in res.output and isinstance(res.exception, AssertionError), res.output


@pytest.mark.parametrize("analysis", ["attractors", "stability", "basins"])
def test_the_functions_refuse_an_overflowing_amplitude_naming_the_keyword(analysis):
    from attnphys import dmft
    from attnphys.errors import InputError

    args = ({"beta_o": [1.2]},) if analysis == "basins" else ()
    with pytest.raises(InputError, match=r"^amplitude: must be at most 1 \(got 1e\+308\)") as err:
        getattr(dmft, analysis)(dmft.DMFTConfig(), *args, amplitude=1e308)
    assert err.value.field == "amplitude"
    getattr(dmft, f"plan_{analysis}")(dmft.DMFTConfig(), *args, amplitude=1.0)  # the cube's edge is a start

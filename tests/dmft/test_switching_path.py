"""The geometry of the switch (docs/theory/switching.md §2.1): the stored least-action paths start on their
attractor and end on the other, their action recomputed from the stored states is ΔS, they cross the basin
boundary once, and ``--path-plot`` draws them."""

from __future__ import annotations

import numpy as np
import pytest

from tests.dmft.test_switching_command import invoke


@pytest.fixture
def spy_paths(monkeypatch):
    """:func:`attnphys.dmft.switching` replaced by one that returns a result with paths."""
    import attnphys.dmft
    import attnphys.dmft.switching  # noqa: F401
    from tests.plots.test_switching_figure import path_result

    monkeypatch.setattr(attnphys.dmft, "switching", lambda cfg, **kw: path_result(laws=kw["laws"]))


def test_the_command_draws_the_paths(tmp_path, spy_paths):
    res = invoke(
        "dmft", "switching", "--beta-o", "1.27", "--n", "990,1980", "--out", tmp_path / "s.zarr",
        "--path-plot", tmp_path / "p.png",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert (tmp_path / "p.png").stat().st_size > 0


def test_the_command_does_not_replace_a_file_at_the_path_plot(tmp_path, spy_paths):
    (tmp_path / "p.png").write_bytes(b"mine")
    res = invoke("dmft", "switching", "--out", tmp_path / "s.zarr", "--path-plot", tmp_path / "p.png")
    assert res.exit_code == 2 and "--path-plot" in res.output and "Traceback" not in res.output, res.output
    assert (tmp_path / "p.png").read_bytes() == b"mine" and not (tmp_path / "s.zarr").exists()
    res = invoke("dmft", "switching", "--out", tmp_path / "s.zarr", "--path-plot", tmp_path / "p.txt")
    assert res.exit_code == 2 and "--path-plot" in res.output, res.output


SMALL = dict(
    sizes=(9900,), walkers=2, max_steps=10, b_level=0.8, ics=16, census_steps=30_000, census_transient=20_000,
    screen_steps=28, max_horizon=28, keep=1, phase_stride=14, laws=("gaussian", "binomial"), seed=3,
)  # fmt: skip


@pytest.mark.slow
def test_the_stored_paths_join_the_attractors_and_their_action_is_the_barrier():
    from attnphys.dmft import preset, switching
    from attnphys.dmft._switching_map import BinomialNoise, ClassNoise, NetworkMap, network_params
    from attnphys.dynamics import discrete_action

    cfg = preset("paper", beta_o=1.27)
    ds = switching(cfg, **SMALL)
    net, sc = network_params(cfg)
    L, C = cfg.L, int(net.W.shape[-1])
    m, laws = NetworkMap(L, C), {"gaussian": ClassNoise(L, C), "binomial": BinomialNoise(L, C)}
    import jax

    for i in ds.attractor.values:
        a = ds.sel(attractor=i)
        b = ds.sel(attractor=int(a.target))
        p = int(a.period)
        assert np.all(np.isfinite(a.orbit.values[:p])) and np.all(np.isnan(a.orbit.values[p:]))
        for w in ds.law.values:
            c = a.sel(law=w)
            T, j = int(c.horizon), int(c.phase)
            X = c.path.values[: T + 1]
            assert np.all(np.isfinite(X)) and np.all(np.isnan(c.path.values[T + 1 :]))
            np.testing.assert_allclose(X[0], a.orbit.values[j], atol=1e-12)  # on attractor a at phase j
            np.testing.assert_allclose(X[-1], b.orbit.values[0], atol=1e-12)  # on attractor b
            with jax.enable_x64(True):
                again = discrete_action(m, laws[str(w)], X, (net, sc), aux0=np.int32((int(a.loop_step) + j) % L))
            assert float(again.action) == pytest.approx(float(c.action), rel=1e-6)
            assert np.nansum(c.step_action.values) == pytest.approx(float(c.action), rel=1e-12)
            k = int(c.crossing_step)
            assert 0 <= k < T and np.all(np.isfinite(c.crossing.values))
            # the crossing lies on the kick of step k: between F(x_k) and x_(k+1)
            with jax.enable_x64(True):
                fx = np.asarray(m.step(X[k], np.int32((int(a.loop_step) + j + k) % L), (net, sc))[0])
            kick, off = X[k + 1] - fx, c.crossing.values - fx
            s = float(off @ kick / (kick @ kick))
            assert -1e-9 <= s <= 1 + 1e-9 and np.linalg.norm(off - s * kick) <= 1e-9 * np.linalg.norm(kick) + 1e-12
    assert int(ds.saddle_period.sel(attractor=1, law="gaussian")) == 28  # the period-28 saddle between them

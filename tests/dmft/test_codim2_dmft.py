"""The fold curve of the paper network's period-16 orbit in (β_o, β_att) against the one-parameter
continuation's fold (theory: docs/theory/dynamics.md §9.1, docs/theory/dmft.md §7.5)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dmft import orbit_continuation, preset
from attnphys.dmft.config import gamma_of
from attnphys.dmft.model import model_of
from attnphys.dynamics import bifurcation_curve


@pytest.mark.slow
@pytest.mark.long
def test_fold_curve_meets_the_one_parameter_fold():
    """The curve continued from the fold at β_att = 2.2 and the start of a new curve at β_att = 1.9 (Newton
    with β_att held: the fold there) agree with ``orbit_continuation``'s Floquet-located folds."""
    cfg = preset("paper")
    model = model_of(cfg)
    folds = {}
    for beta_att, start in ((2.2, 1.25), (1.9, 1.2522)):
        c = cfg.replace(beta_att=beta_att)
        br = orbit_continuation(c, "beta_o", start, 1.24, start="checkpoint", max_points=300)
        assert br.attrs["period"] == 16
        k = list(br.event_kind.values).index("fold")
        folds[beta_att] = (float(br.event_s.values[k]), br.event_x.values[k])
    sc = model.params_of("beta_o")(jnp.asarray(1.25))[1]
    win = jax.tree_util.tree_map(
        lambda a: a[0],
        model.windows_after("checkpoint", jax.tree_util.tree_map(lambda a: jnp.asarray(a)[None], sc), 40_000),
    )
    m = model.map()
    _, aux0 = m.state(win)

    def params_of(s):
        return model.couplings, sc._replace(gain_o=s[0] * cfg.scaling_o, gamma=gamma_of(s[1], cfg.scaling_att, cfg.M))

    b22, x22 = folds[2.2]
    curve = bifurcation_curve(m, "fold", x22, [b22, 2.2], params_of, aux0=aux0, period=16, max_points=2)
    assert curve.s1.values[0] == pytest.approx(b22, abs=1e-9)
    b19, x19 = folds[1.9]
    other = bifurcation_curve(m, "fold", x19, [b19 + 1e-4, 1.9], params_of, aux0=aux0, period=16, max_points=2)
    assert other.s2.values[0] == pytest.approx(1.9, abs=1e-14)
    assert other.s1.values[0] == pytest.approx(b19, abs=1e-9)
    assert np.all(np.isfinite(other.coefficient.values))


@pytest.mark.slow
@pytest.mark.long
def test_neimark_sacker_curve_is_the_periodic_quasi_periodic_boundary():
    """The period-4 orbit's Neimark–Sacker point at β_att = 2.2, continued to β_att = 1.9 (Newton with β_att
    held), separates the grid diagram's period-4 points from its quasi-periodic ones 0.002 to either side;
    d < 0 there (a stable invariant circle is born)."""
    from attnphys.dmft import phase_diagram
    from attnphys.dynamics.classify import REGIMES

    cfg = preset("paper")
    model = model_of(cfg)
    br = orbit_continuation(cfg, "beta_o", 1.24, 1.26, start="checkpoint", max_points=300)
    assert br.attrs["period"] == 4
    k = list(br.event_kind.values).index("neimark_sacker")
    b22, x22 = float(br.event_s.values[k]), br.event_x.values[k]
    sc = model.params_of("beta_o")(jnp.asarray(1.24))[1]
    win = jax.tree_util.tree_map(
        lambda a: a[0],
        model.windows_after("checkpoint", jax.tree_util.tree_map(lambda a: jnp.asarray(a)[None], sc), 40_000),
    )
    m = model.map()
    _, aux0 = m.state(win)

    def params_of(s):
        return model.couplings, sc._replace(gain_o=s[0] * cfg.scaling_o, gamma=gamma_of(s[1], cfg.scaling_att, cfg.M))

    at22 = bifurcation_curve(m, "neimark_sacker", x22, [b22, 2.2], params_of, aux0=aux0, period=4, max_points=2)
    assert at22.s1.values[0] == pytest.approx(b22, abs=1e-9)
    at19 = bifurcation_curve(m, "neimark_sacker", x22, [b22, 1.9], params_of, aux0=aux0, period=4, max_points=2)
    b19 = float(at19.s1.values[0])
    assert at19.s2.values[0] == pytest.approx(1.9, abs=1e-14)
    assert at19.coefficient.values[0] < 0
    grid = {"beta_o": np.array([b19 - 0.002, b19 + 0.002]), "beta_att": np.array([1.9])}
    ds = phase_diagram(cfg, grid, start="checkpoint", steps=120_000, transient=100_000, exponents=2, adaptive=True)
    regimes = [REGIMES[c] for c in ds.regime.transpose("beta_att", "beta_o").values[0]]
    assert regimes == ["periodic", "quasi_periodic"]
    assert int(ds.period.transpose("beta_att", "beta_o").values[0, 0]) == 4

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

"""Vectorised settling (theory: docs/theory/dynamics.md §7.2)."""

import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.dynamics.maps import LOGISTIC
from attnphys.dynamics.settle import DIVERGENT, EXHAUSTED, PERIODIC, SettleOptions, settle


@pytest.mark.slow
def test_lanes_stop_and_compaction_keeps_results():
    """Logistic at r = 3.2 (period 2, settles fast), r = 4 (chaos, never settles) and r = 4.5 (escapes):
    lanes finish at very different times; compaction must not mix them up."""
    o = SettleOptions(budget=3000, block=64, max_period=16, round_blocks=2)
    rs = jnp.array([3.2, 4.0, 4.5])
    x0 = np.tile(np.linspace(0.1, 0.9, 10), 3)[:, None]
    pidx = np.repeat(np.arange(3), 10)
    lanes = settle(LOGISTIC, x0, None, pidx, rs, options=o)
    assert np.all(lanes.status[:10] == PERIODIC) and np.all(lanes.period[:10] == 2)
    assert np.all(lanes.status[10:20] == EXHAUSTED) and np.all(lanes.t[10:20] >= 3000)
    assert np.all(lanes.status[20:] == DIVERGENT)
    np.testing.assert_array_equal(np.asarray(x0)[:, 0], np.tile(np.linspace(0.1, 0.9, 10), 3))  # inputs intact
    # a periodic lane is frozen on its orbit: two more steps return to the same point
    x = lanes.x[:10, 0]
    np.testing.assert_allclose(3.2 * (3.2 * x * (1 - x)) * (1 - 3.2 * x * (1 - x)), x, atol=1e-8)


@pytest.mark.slow
def test_unfilled_ring_never_matches():
    """Lags reaching into the part of the ring not yet filled (max_period > block) must not count as
    recurrences: chaotic lanes (Hénon 1.4, 0.3, started on the attractor), in a batch wide enough to be
    vectorised, stay unsettled."""
    from attnphys.dynamics.maps import HENON

    x, pts = np.array([0.1, 0.1]), []
    for t in range(1000 + 16 * 37):
        x = np.array([1 - 1.4 * x[0] ** 2 + x[1], 0.3 * x[0]])
        if t >= 1000 and (t - 1000) % 37 == 0:
            pts.append(x)
    o = SettleOptions(budget=2048, block=64, max_period=256, round_blocks=4)
    lanes = settle(HENON, np.asarray(pts), None, np.zeros(16, int), jnp.array([[1.4, 0.3]]), options=o)
    assert np.all(lanes.status == EXHAUSTED) and np.all(lanes.period == 0)

"""The continued Neimark–Sacker boundary against the grid phase diagram at the 201×201 grid's spacing
(theory: docs/theory/dmft.md §7.8; benchmarks/codim2_boundary.py runs the whole grid)."""

import numpy as np
import pytest

from attnphys.dmft import boundary, phase_diagram, preset
from attnphys.dynamics.classify import REGIMES


@pytest.mark.slow
@pytest.mark.long
def test_a_strip_of_the_201_grid_at_480k_steps_meets_the_curve_to_one_spacing():
    """Three rows of the 201×201 grid's columns (spacing 9.0e-5 in β_o) across the period-4
    Neimark–Sacker curve, at the refinement schedule of the benchmark (480,000 steps, 460,000 transient,
    adaptive): every cell left of the curve is the period-4 orbit, every cell right of it is not, except
    cells within one grid spacing of the curve (at the paper's 120,000 steps the slow band reaches 3–4
    spacings into the stable side)."""
    cfg = preset("paper")
    c = boundary(
        cfg, "neimark_sacker", ("beta_o", "beta_att"), 1.24, 1.26, start="checkpoint", curve_points=10, curve_step=0.05
    )
    order = np.argsort(c.beta_att.values)
    ba, bo = c.beta_att.values[order], c.beta_o.values[order]
    rows = np.array([2.1, 2.2, 2.3])
    assert ba[0] < rows[0] and rows[-1] < ba[-1]
    xs_all = np.linspace(1.236, 1.254, 201)
    dx = xs_all[1] - xs_all[0]
    curve_x = np.interp(rows, ba, bo)
    first = np.searchsorted(xs_all, curve_x)  # first column right of the curve, per row
    cols = np.arange(first.min() - 3, first.max() + 2)
    xs = xs_all[cols]
    ds = phase_diagram(
        cfg,
        {"beta_o": xs, "beta_att": rows},
        start="checkpoint",
        steps=480_000,
        transient=460_000,
        exponents=2,
        adaptive=True,
    )
    reg = ds.regime.transpose("beta_att", "beta_o").values
    per = ds.period.transpose("beta_att", "beta_o").values
    p4 = (reg == REGIMES.index("periodic")) & (per == 4)
    left = xs[None, :] < curve_x[:, None]
    off = np.abs(xs[None, :] - curve_x[:, None]) / dx
    bad = p4 != left
    assert p4[:, 0].all() and not p4[:, -1].any()
    assert (off[bad] <= 1.0).all(), [(rows[j], round(float(off[j, i]), 2)) for j, i in np.argwhere(bad)]

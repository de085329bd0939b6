"""The saddle between the paper network's coexisting period-28 and period-56 attractors at (β_o, β_att) =
(1.27, 2.2) (theory: docs/theory/dmft.md §7.9; docs/theory/dynamics.md §11.5–11.6): a period-28 orbit with one
unstable multiplier, reached by continuing the period-28 attractor up in β_o past its folds; its unstable
manifold's two branches end on the two attractors, the starts x* ± ε v_u reach different ones, and edge tracking
between the attractors converges to it. The study is the one ``benchmarks/dmft_saddle.py`` prints."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "dmft_saddle.py"
P = 28


def _study():
    spec = importlib.util.spec_from_file_location("dmft_saddle_benchmark", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.saddle_study(starts=32, settle=56_000, edge_steps=1000, pieces=200)


@pytest.mark.slow
@pytest.mark.long
def test_the_period_28_saddle_separates_the_coexisting_attractors():
    out = _study()
    assert set(out["counts"]) == {P, 2 * P}  # the two attractors from the starts around the checkpoint

    # the saddle: the attractor's branch continued up in beta_o comes back to 1.27 unstable
    assert out["events"][:3] == ["flip", "flip", "fold"]
    assert out["residual"] < 1e-12
    mu = out["multipliers"]
    assert np.sum(np.abs(mu) > 1) == 1
    assert mu[0].real == pytest.approx(2.8316, abs=1e-3) and abs(mu[0].imag) < 1e-12
    d1, d2 = out["saddle_distances"]
    assert d1 > 0.05 and d2 > 0.005  # a third orbit, not a point of either attractor

    # the two branches of its unstable manifold end on the two attractors
    near = sorted(out["manifold_end_distances"])
    assert near[0][0] < 1e-9 and near[0][1] > 0.05  # one branch on the period-28 attractor
    assert near[1][1] < 1e-9 and near[1][0] > 0.05  # the other on the period-56 attractor

    # x* ± eps v_u reach different attractors for eps from 1e-9 to 1e-2: the stable manifold is the boundary
    eps, labels = out["eps"], out["labels"]
    small = eps <= 1e-2
    assert (labels[0, small] == 2 * P).all() and (labels[1, small] == P).all()

    # edge tracking from the segment between a point of each attractor converges to the saddle orbit
    d = out["edge_distance"]
    assert out["edge_status"] == "done"
    assert d[0] > 1e-3  # the first bisected point lies on the boundary, far from the saddle
    assert np.max(d[500:]) < 1e-6 and d[out["bisection_steps"][-1]] < 1e-8

    # in the plane x* + c v_s + s v_u the boundary passes through the saddle tangent to v_s: s(c) ∝ c²
    c, s_c = out["slice_c"], out["slice_s"]
    assert abs(s_c[np.isclose(c, 0.0, atol=1e-15)][0]) < 1e-10
    i5, i10 = np.flatnonzero(np.isclose(c, -0.005))[0], np.flatnonzero(np.isclose(c, -0.01))[0]
    assert 3.0 < s_c[i10] / s_c[i5] < 5.0  # quadratic: 4 when c doubles

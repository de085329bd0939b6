"""Global stability of the mean-field map's attractors through the command line and the function it
calls (theory: docs/theory/dynamics.md §10, docs/theory/dmft.md §7.5)."""

import numpy as np
import pytest
from typer.testing import CliRunner

from attnphys.cli import app
from attnphys.dmft import preset, stability
from attnphys.errors import InputError
from attnphys.io import load

runner = CliRunner()
SMALL = dict(ics=4, steps=4000, transient=0, max_period=64, directions=2, origins=1, scan=4, bisections=5, rounds=0)


def _flags(opts: dict) -> list[str]:
    return [s for k, v in opts.items() for s in (f"--{k.replace('_', '-')}", str(v))]


@pytest.mark.slow
def test_the_command_stores_what_the_function_computes(tmp_path):
    """β_o = 0.8: one period-4 attractor, so no shock leaves (NaN, lands nowhere) and every start converges
    to it; the stored result is the function's, bit for bit."""
    out = tmp_path / "st.zarr"
    res = runner.invoke(
        app, ["dmft", "stability", "--preset", "paper", "--beta-o", "0.8", *_flags(SMALL), "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert "no shock up to the radius leaves" in res.output
    got = load(out)
    want = stability(preset("paper").replace(beta_o=0.8), **SMALL)
    assert got["period"].values.tolist() == [4] and np.isnan(got["shock_norm"].values).all()
    assert got["lands_on"].values.tolist() == [-1] and float(got["agreement"]) == 1.0
    for name in ("time", "label", "time_quantile", "ray_norm", "origin", "exponents"):
        np.testing.assert_array_equal(got[name].values, want[name].values, err_msg=name)


def test_a_bad_search_option_is_refused_naming_it():
    res = runner.invoke(app, ["dmft", "stability", "--preset", "paper", "--directions", "0"])
    assert res.exit_code != 0 and "--directions" in res.output and "Traceback" not in res.output
    with pytest.raises(InputError, match="rounds"):
        stability(preset("paper"), rounds=-1, dry_run=True)


@pytest.mark.slow
@pytest.mark.long
def test_the_coexisting_orbits_at_beta_o_1_27_are_each_one_shock_from_the_other(tmp_path):
    """β_o = 1.27: the period-28 and period-56 orbits coexist; the minimal shock of each lands on the other,
    and the weakly stable period-56 orbit (λ₁ ≈ −0.0035) is the one lost to the smaller shock."""
    ds = stability(
        preset("paper").replace(beta_o=1.27), ics=16, directions=8, origins=2, scan=8, bisections=20, rounds=1
    )
    assert sorted(ds["period"].values.tolist()) == [28, 56]
    assert sorted(ds["lands_on"].values.tolist()) == [0, 1]
    n28, n56 = (float(ds["shock_norm"].values[ds["period"].values == p][0]) for p in (28, 56))
    assert 0 < n56 < n28 < 1

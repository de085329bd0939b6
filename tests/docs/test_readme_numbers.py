"""The numbers the README states about a run are those of the run it names: the basins of the attractor
census at β_o = 1.27, with their 95 % Wilson intervals, from the README's own `dmft attractors` command."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# "the period-28 orbit a basin of 0.875 [0.829, 0.910]", "a period-16 orbit 0.004 [0.001, 0.022]"
CLAIM = re.compile(r"period-(\d+)\s+orbit\s+(?:a\s+basin\s+of\s+)?(\d\.\d+)\s+\[(\d\.\d+),\s+(\d\.\d+)\]")


def readme_command(name: str) -> list[str]:
    """The README's console command ``attnphys dmft NAME ...`` (continuation lines joined) as arguments."""
    text = README.replace("\\\n", " ")
    m = re.search(rf"^\$ attnphys dmft {name} (.*)$", text, re.M)
    assert m, f"the README shows no `attnphys dmft {name}` command"
    return ["dmft", name, *shlex.split(m.group(1))]


def stated_basins() -> dict[int, tuple[float, float, float]]:
    para = README[README.index("At β_o = 1.27 periodic attractors coexist") :][:600]
    return {int(p): (float(b), float(lo), float(hi)) for p, b, lo, hi in CLAIM.findall(para)}


def test_the_readme_states_three_basins():
    assert sorted(stated_basins()) == [16, 28, 56]


@pytest.mark.slow
def test_the_readme_basins_at_1_27_are_those_of_its_command(tmp_path):
    from typer.testing import CliRunner

    import attnphys.io
    from attnphys.cli import app

    args = readme_command("attractors")
    args = [a for a in args if not a.endswith(".png")]
    if "--plot" in args:
        args.remove("--plot")
    args[args.index("--out") + 1] = str(tmp_path / "att.zarr")
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    ds = attnphys.io.load(tmp_path / "att.zarr")
    n = int(ds["n_attractors"])
    runs = {int(ds["period"][i]): i for i in range(n)}
    stated = stated_basins()
    assert sorted(runs) == sorted(stated), (runs, stated)
    for period, (basin, lo, hi) in stated.items():
        i = runs[period]
        got = float(ds["basin_fraction"][i]), float(ds["basin_ci_low"][i]), float(ds["basin_ci_high"][i])
        np.testing.assert_allclose((basin, lo, hi), got, atol=5e-4, err_msg=f"period {period}")
        assert got[1] <= basin <= got[2]

"""``attnphys rerun STORE --out NEW`` repeats the job recorded in a stored result, to an identical result:
every variable and coordinate bit for bit, and the same recorded options apart from the output path."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr
from typer.testing import CliRunner

from attnphys.cli import app

runner = CliRunner()

CASES = {
    "trajectory": ["dmft", "trajectory", "--preset", "paper", "--beta-o", "1.26,2.0", "--steps", "120",
                   "--transient", "20", "--start", "token"],
    "bifurcation": ["dmft", "bifurcation", "--preset", "paper", "--start-value", "1.2", "--stop-value", "1.3",
                    "--num", "3", "--steps", "80", "--transient", "40", "--exponents", "1", "--n-orbit", "20",
                    "--start", "token"],
    "clouds": ["clouds", "run", "--dim", "4", "--tokens", "24", "--layers", "6", "--stats-every", "2",
               "--seed", "3"],
}

# attributes that name the run rather than describe the result
RUN_ATTRS = {"attnphys_job", "attnphys_given", "created", "attnphys_manifest"}


def _invoke(*args):
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res


def _open(path):
    return xr.open_zarr(path, consolidated=False)


def _bits(a: np.ndarray) -> bytes:
    a = np.ascontiguousarray(a)
    return a.tobytes() if a.dtype.kind != "O" else repr(a.tolist()).encode()


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_rerun_reproduces_the_result_bit_for_bit(case, tmp_path):
    first, again = tmp_path / "first.zarr", tmp_path / "again.zarr"
    _invoke(*CASES[case], "--out", first)
    _invoke("rerun", first, "--out", again)
    a, b = _open(first), _open(again)

    assert set(a.variables) == set(b.variables)
    for name in a.variables:
        x, y = a[name].values, b[name].values
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert _bits(x) == _bits(y), f"{case}: {name} differs after rerun"
        assert a[name].attrs == b[name].attrs, name

    assert {k: v for k, v in a.attrs.items() if k not in RUN_ATTRS} == \
           {k: v for k, v in b.attrs.items() if k not in RUN_ATTRS}
    given_a, given_b = (set(json.loads(x.attrs["attnphys_given"])) for x in (a, b))
    assert given_b <= given_a | {"out", "overwrite"}, "the rerun gives the options given then"
    ja, jb = json.loads(a.attrs["attnphys_job"]), json.loads(b.attrs["attnphys_job"])
    assert ja.pop("out") == str(first) and jb.pop("out") == str(again)
    assert ja == jb, "the rerun records the same options"


def test_rerun_of_a_rerun_is_the_same_job(tmp_path):
    """The recorded options are complete: a rerun's store reruns to the same options again."""
    first, second, third = (tmp_path / f"{n}.zarr" for n in ("first", "second", "third"))
    _invoke(*CASES["clouds"], "--out", first)
    _invoke("rerun", first, "--out", second)
    _invoke("rerun", second, "--out", third)
    jobs = [json.loads(_open(p).attrs["attnphys_job"]) for p in (first, second, third)]
    for j in jobs:
        j.pop("out")
    assert jobs[0] == jobs[1] == jobs[2]


@pytest.mark.slow
def test_attnphys_rerun_repeats_a_stored_result_from_python(tmp_path):
    """``attnphys.rerun`` is the command's Python twin: the same numbers, returned as the loaded result."""
    import attnphys
    from attnphys.errors import InputError
    from attnphys.io import load

    first = tmp_path / "first.zarr"
    _invoke("dmft", "trajectory", "--beta-o", "1.26", "--steps", "40", "--transient", "10", "--out", first)
    again = attnphys.rerun(first, tmp_path / "again.zarr")
    assert isinstance(again, xr.Dataset)
    xr.testing.assert_identical(again.drop_attrs(), load(first).drop_attrs())
    (tmp_path / "plain.zarr").mkdir()
    with pytest.raises(InputError, match="^store: "):
        attnphys.rerun(tmp_path / "plain.zarr", tmp_path / "x.zarr")


def _same_numbers(a: xr.Dataset, b: xr.Dataset) -> None:
    assert set(b.variables) - set(a.variables) <= {"point_seed"}  # kept in stores only
    for name in a.variables:
        assert _bits(a[name].values) == _bits(b[name].values), f"{name} differs after rerun"


@pytest.mark.slow
def test_a_result_made_through_the_python_api_reruns_bit_for_bit(tmp_path):
    """No command recorded it: its store's own record of the sweep (task, grid, seeds) is repeated, from
    Python and from the command line, to the same numbers; an edited record is refused, not repeated."""
    import zarr

    import attnphys
    from attnphys.dmft import bifurcation, preset
    from attnphys.errors import DamagedResultError
    from attnphys.io import load, save

    first = tmp_path / "first.zarr"
    bifurcation(preset("paper"), {"beta_o": [1.2, 1.27]}, steps=300, transient=100, exponents=1, n_orbit=20,
                store=first)
    _same_numbers(load(first), attnphys.rerun(first, tmp_path / "again.zarr"))
    _invoke("rerun", first, "--out", tmp_path / "cli.zarr")
    _same_numbers(load(first), load(tmp_path / "cli.zarr"))

    # an in-memory result saved with attnphys.io.save carries the same record
    saved = tmp_path / "saved.zarr"
    save(bifurcation(preset("paper"), {"beta_o": [1.27]}, steps=300, transient=100, exponents=0, n_orbit=20), saved)
    _same_numbers(load(saved), attnphys.rerun(saved, tmp_path / "saved-again.zarr"))

    g = zarr.open_group(str(first), mode="r+")
    sweep = json.loads(g.attrs["sweep"])
    sweep["grid"]["axes"][0]["values"] = [1.2, 9.9]
    g.attrs["sweep"] = json.dumps(sweep)
    with pytest.raises(DamagedResultError, match="sweep changed"):
        attnphys.rerun(first, tmp_path / "edited.zarr")
    assert not (tmp_path / "edited.zarr").exists()
    res = runner.invoke(app, ["rerun", str(first), "--out", str(tmp_path / "edited.zarr")])
    assert res.exit_code == 2 and "sweep changed" in res.output

"""``attnphys reproduce``: the list, every figure in --quick mode, and the P = 5 continuation from the authors'
checkpoint."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from attnphys.cli import app
from attnphys.dmft.reference import reference_checkpoint
from attnphys.io import load
from attnphys.reproduce import FIGURES
from attnphys.reproduce.job import ReproduceJob

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.mark.slow
def test_list_names_every_figure_with_its_run_time():
    res = invoke("reproduce", "list")
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    for name in FIGURES:
        assert name in text
    assert "measured on this machine" in text
    rows = ReproduceJob(name="list").execute(progress=False).rows
    for name in FIGURES:
        assert "Full run ≈" in rows[name] and "--quick ≈" in rows[name]


def test_list_without_calibration_and_unknown_names():
    res = invoke("reproduce", "list", "--no-calibrate")
    assert res.exit_code == 0 and "development machine" in " ".join(res.output.split())
    res = invoke("reproduce", "fig9", "--quick")
    assert res.exit_code == 2 and "unknown figure 'fig9'" in res.output and "fig3a" in res.output
    res = invoke("reproduce", "fig3a", "--pair", "1|2")
    assert res.exit_code == 2 and "--pair" in res.output


def test_default_output_folder():
    assert str(ReproduceJob(name="fig5").out) == "fig5"
    assert str(ReproduceJob(name="fig5", quick=True).out) == "fig5-quick"
    assert ReproduceJob(name="list").out is None


def check_outputs(folder, name):
    files = {p.name for p in folder.iterdir()}
    assert {f"{name}.zarr", f"{name}.png", f"{name}.pdf", f"{name}.txt"} <= files
    assert (folder / f"{name}.png").stat().st_size > 10_000 and (folder / f"{name}.pdf").stat().st_size > 5_000
    ds = load(folder / f"{name}.zarr")
    for v in ds.data_vars:
        assert ds[v].attrs.get("long_name"), v
    for v in ("lambda1", "exponents", "mo_se_autocorr_time", "period"):
        if v in ds:
            assert ds[v].attrs.get("units"), v
    settings = json.loads(ds.attrs["settings"])
    assert json.loads(ds.attrs["config"])["M"] == 3 and ds.attrs["quick"] == 1
    assert json.loads(ds.attrs["attnphys_job"])["name"] == name
    caption = (folder / f"{name}.txt").read_text()
    assert FIGURES[name].source in caption and f"{settings['steps']:,}" in caption
    return ds


def run_quick(tmp_path, name, *extra):
    out = tmp_path / name
    res = invoke("reproduce", name, "--quick", "--out", out, *extra)
    assert res.exit_code == 0, res.output
    return check_outputs(out, name)


@pytest.mark.slow
def test_fig5_quick(tmp_path):
    ds = run_quick(tmp_path, "fig5")
    # quasi-periodic memory never decays; the chaotic one does, after more than one context length
    tau = ds.mo_se_autocorr_time.sel(feature=0).values
    assert np.isinf(tau[0]) and 4 < tau[1] < 1000


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in FIGURES if n != "fig5" and not n.startswith("particles-")])
@pytest.mark.long
def test_every_figure_quick(tmp_path, name):
    extra = ("--filter", "reference", "--pair", "1|0") if name == "fig3b" else ()
    ds = run_quick(tmp_path, name, *extra)
    if name.startswith("cont"):
        assert list(ds.direction.values) == ["down", "up"]
        assert ds.start_A.shape[-2] == (32 if "pe5" in name else 4)


@pytest.mark.slow
def test_p5_continuation_from_the_authors_checkpoint(tmp_path):
    ck = reference_checkpoint("exp_pe5__general_beta_idx-258_value_1.554_window_chpt.npz")
    out, fin = tmp_path / "c.zarr", tmp_path / "fin.npz"
    res = invoke("dmft", "bifurcation", "--preset", "paper-pe5", "--continuation", "down", "--start", ck,
                 "--start-value", 1.50, "--stop-value", 1.548, "--num", 3, "--steps", 300, "--transient", 0,
                 "--exponents", 0, "--n-orbit", 20, "--save-final", fin, "--out", out)
    assert res.exit_code == 0, res.output
    ds = load(out)
    assert ds.sizes["direction"] == 1 and ds.sizes["beta_o"] == 3
    assert np.isfinite(ds.orbit.values).all()
    with np.load(fin) as z:  # the chain ends at the smallest value: its window, readable by --start
        assert z["att_window"].shape == (32, 3) and z["pe_window"].shape == (32, 5) and int(z["n"]) == 32
        assert float(z["beta"]) == 1.50
    res = invoke(
        "dmft",
        "trajectory",
        "--preset",
        "paper-pe5",
        "--beta-o",
        1.5,
        "--steps",
        10,
        "--start",
        fin,
        "--out",
        tmp_path / "t.zarr",
    )
    assert res.exit_code == 0, res.output


def test_save_final_needs_a_continuation(tmp_path):
    res = invoke(
        "dmft",
        "bifurcation",
        "--num",
        2,
        "--steps",
        20,
        "--transient",
        0,
        "--save-final",
        tmp_path / "f.npz",
        "--out",
        tmp_path / "b.zarr",
    )
    assert res.exit_code == 2 and "--save-final" in res.output and "--continuation" in res.output


@pytest.mark.slow
def test_a_window_not_yet_full_is_saved_with_its_fill_count(tmp_path):
    # two steps from the token: the window holds three rows; continuing from the file is the same run
    w = tmp_path / "w.npz"
    first, second, whole = (tmp_path / f"{n}.zarr" for n in ("a", "b", "c"))
    common = ("dmft", "trajectory", "--beta-o", 1.27, "--steps")
    assert invoke(*common, 2, "--start", "token", "--save-final", w, "--out", first).exit_code == 0
    with np.load(w) as z:
        assert int(z["n"]) == 3 and z["att_window"].shape == (4, 3)
    res = invoke(*common, 2, "--start", w, "--out", second)
    assert res.exit_code == 0, res.output
    assert invoke(*common, 4, "--start", "token", "--out", whole).exit_code == 0
    a, b, c = load(first), load(second), load(whole)
    np.testing.assert_array_equal(np.concatenate([a.att.values, b.att.values]), c.att.values)


def run_particles_quick(tmp_path, name):
    out = tmp_path / name
    res = invoke("reproduce", name, "--quick", "--out", out)
    assert res.exit_code == 0, res.output
    assert (out / f"{name}.png").stat().st_size > 10_000 and (out / f"{name}.txt").exists()
    ds = load(out / f"{name}.zarr")
    for v in ds.data_vars:
        assert ds[v].attrs.get("long_name"), v
    assert FIGURES[name].source in (out / f"{name}.txt").read_text() and ds.attrs["quick"] == 1
    return ds


@pytest.mark.slow
def test_particles_scaling_quick(tmp_path):
    ds = run_particles_quick(tmp_path, "particles-scaling")
    assert float(ds.gamma_c) == 2.0
    np.testing.assert_allclose(ds.measured.values, ds.predicted.values, atol=0.05)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["particles-clusters", "particles-equiangular"])
@pytest.mark.long
def test_particle_figures_quick(tmp_path, name):
    ds = run_particles_quick(tmp_path, name)
    if name == "particles-clusters":
        assert ds.predicted.sel(dim=2).values.tolist() == [1, 3]
        assert float(ds.agree.sel(dim=2, beta=5.0)) >= 0.75
    else:
        assert float(ds.deviation.max()) < 1e-7


@pytest.mark.slow
def test_particles_middle_quick(tmp_path):
    ds = run_particles_quick(tmp_path, "particles-middle")
    assert float(ds.deviation) < 0.035
    assert float(ds.critical_times.sel(alibi=1.0, beta=2.0)) == pytest.approx(0.600716, abs=1e-6)
    assert ds.u_shaped.values.tolist() == [t < float(ds.critical_time) for t in ds.time.values]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["particles-staircase", "particles-placements"])
@pytest.mark.long
def test_particle_law_figures_quick(tmp_path, name):
    ds = run_particles_quick(tmp_path, name)
    if name == "particles-staircase":
        ok = np.isfinite(ds.energy.values)
        np.testing.assert_allclose(ds.energy.values[ok], ds.energy_predicted.values[ok], rtol=1e-5)
    else:
        assert np.all(np.abs(ds.fitted.values / ds.predicted.values - 1) < 0.06)

"""Damaged stores are never loaded as complete (docs/theory/sweeps.md §2.3): a variable's chunks or
metadata deleted, a done chunk overwritten with other bytes, an unreadable done flag. Loading refuses,
naming what is missing; re-running repairs the store and recomputes exactly the damaged points."""

import json
import os
import shutil
import tarfile
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

from attnphys._integrity import ATTRIBUTES, CHUNK_VARS, MANIFEST, chunk_file, manifest_files
from attnphys.errors import DamagedResultError, IncompleteResultError
from attnphys.io import load, save
from attnphys.sweeps import DamagedStoreWarning, Grid, Sweep, done_mask, open_result, run_sweep
from attnphys.sweeps.task import task_class
from tests.sweeps.test_sweeps import assert_same_store


def _sweep() -> Sweep:
    task, grid = task_class("dmft-trajectory").example()
    return Sweep(grid=Grid(axes=grid.axes, chunk=2), task=task)


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """A finished sweep store, and its result (copied into each test's folder)."""
    path = tmp_path_factory.mktemp("whole") / "s.zarr"
    return path, run_sweep(_sweep(), path, progress=False)


def _copy(whole, tmp_path):
    path = tmp_path / "s.zarr"
    shutil.copytree(whole[0], path)
    return path


def _file(path, var: str, chunk: int):
    shape = zarr.open_array(store=str(path), path=var, mode="r").shape
    return chunk_file(path, var, (chunk,) + (0,) * (len(shape) - 1))


def _data_var(path) -> str:
    """A result variable whose every chunk holds a file (finite values)."""
    return "mo_se"


@pytest.mark.slow
def test_a_finished_store_records_its_files_and_chunk_sums(whole):
    attrs = dict(zarr.open_group(str(whole[0]), mode="r").attrs)
    manifest = json.loads(attrs[MANIFEST])
    files = manifest_files(manifest)
    assert "mo_se/zarr.json" in files and all(":" in v for v in files.values())
    assert {"sweep", "config", CHUNK_VARS} <= set(manifest[ATTRIBUTES])
    assert "mo_se" in json.loads(attrs[CHUNK_VARS])
    assert_same_store(open_result(whole[0]).drop_attrs(), whole[1].drop_attrs())


@pytest.mark.parametrize("damage", ["chunk deleted", "chunk overwritten", "metadata deleted", "sums deleted"])
def test_a_damaged_store_is_refused_naming_what_and_a_rerun_repairs_it(whole, tmp_path, damage):
    path = _copy(whole, tmp_path)
    var = _data_var(path)
    if damage == "chunk deleted":
        os.remove(_file(path, var, 1))
        named = f"chunk 1 ({var}"
    elif damage == "chunk overwritten":
        _file(path, var, 0).write_bytes(b"not what was written" * 50)
        named = f"chunk 0 ({var}"
    elif damage == "metadata deleted":
        os.remove(path / var / "zarr.json")
        named = f"variable {var}: its metadata ({var}/zarr.json) is missing"
    else:
        shutil.rmtree(path / "chunk_sums")
        named = "chunk_sums"
    for reader in (load, open_result):
        with pytest.raises(DamagedResultError, match="is damaged") as err:
            reader(path)
        assert named in str(err.value) and "re-run the same command" in str(err.value)
    if damage == "sums deleted":  # the template itself: a run cannot repair it
        with pytest.raises(DamagedResultError, match="--overwrite"):
            run_sweep(_sweep(), path, progress=False)
        return
    with pytest.warns(DamagedStoreWarning, match="computed again"):
        again = run_sweep(_sweep(), path, progress=False)
    assert done_mask(path).all()
    assert_same_store(again.drop_attrs(), whole[1].drop_attrs())
    assert_same_store(load(path).drop_attrs(), whole[1].drop_attrs())


def test_an_unreadable_done_flag_counts_as_not_done(whole, tmp_path):
    path = _copy(whole, tmp_path)
    flag = chunk_file(path, "done", (1,))
    flag.write_bytes(b"\x00garbage")
    assert done_mask(path).tolist() == [True, False, True]
    with pytest.raises(IncompleteResultError, match="1 of 3 chunks are not done"):
        open_result(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DamagedStoreWarning)  # nothing was damaged: the chunk was simply not done
        again = run_sweep(_sweep(), path, progress=False)
    assert_same_store(again.drop_attrs(), whole[1].drop_attrs())


@pytest.mark.parametrize("damage", ["chunk deleted", "metadata deleted", "chunk overwritten"])
def test_a_damaged_single_result_is_refused(tmp_path, damage):
    ds = xr.Dataset({"a": (("x", "y"), np.arange(12.0).reshape(4, 3)), "b": ("x", np.ones(4))},
                    attrs={"attnphys_version": "test"})
    path = save(ds, tmp_path / "r.zarr")
    xr.testing.assert_identical(load(path).drop_attrs(), ds.drop_attrs())
    if damage == "chunk deleted":
        os.remove(_file(path, "a", 0))
    elif damage == "metadata deleted":
        os.remove(path / "b" / "zarr.json")
    else:
        _file(path, "a", 0).write_bytes(b"garbage")
    with pytest.raises(DamagedResultError, match="is damaged") as err:
        load(path)
    assert ("variable a" if damage != "metadata deleted" else "variable b: its metadata") in str(err.value)


OLD_STORE = Path(__file__).parents[1] / "data" / "store_0.2.0_trajectory.tar.gz"
"""A store written by the 0.2.0 release (commit 9ad9e28): ``attnphys dmft trajectory --beta-o
1.0,1.1,1.2,1.3 --steps 12``; it carries no records."""


def _old_store(tmp_path) -> Path:
    with tarfile.open(OLD_STORE) as tar:
        tar.extractall(tmp_path, filter="data")
    return tmp_path / "trajectory-0.2.0.zarr"


def test_a_store_written_by_0_2_0_without_records_is_read_as_before(tmp_path):
    """Stores written before the records existed have none to compare with: one that holds what its
    version wrote loads."""
    ds = load(_old_store(tmp_path))
    assert ds.attrs["attnphys_version"] == "0.2.0" and MANIFEST not in ds.attrs
    np.testing.assert_array_equal(ds["beta_o"].values, [1.0, 1.1, 1.2, 1.3])
    assert np.isfinite(ds["mo_se"].values).all()


def test_a_current_store_relabelled_0_1_0_without_records_is_refused_naming_what_is_missing(whole, tmp_path):
    """The version is an attribute: a store of this version with its records removed, its label set to
    0.1.0, a sweep value edited and a chunk deleted (it loaded β_o = 9.9 and NaN) is refused."""
    path = _copy(whole, tmp_path)
    _edit_attrs(path, lambda a: [a.pop(MANIFEST), a.pop(CHUNK_VARS), a.update(attnphys_version="0.1.0")])
    _edit_attrs(path, _relabel)
    os.remove(_file(path, "mo_se", 1))
    for reader in (load, open_result):
        with pytest.raises(DamagedResultError, match="is damaged") as err:
            reader(path)
        message = str(err.value)
        assert f"lacks {MANIFEST} and {CHUNK_VARS}" in message and "names attnphys 0.1.0" in message
        assert "variables chunk_sums" in message and "task.config.variant" in message
    with pytest.raises(DamagedResultError, match="--overwrite"):
        run_sweep(Sweep.model_validate_json(zarr.open_group(str(path), mode="r").attrs["sweep"]), path,
                  progress=False)


def _add_variable(path, name: str) -> None:
    shutil.copytree(path / "mo_se_autocorr_time", path / name)


def _edit_definition(change):
    def edit(attrs) -> None:
        d = json.loads(attrs["sweep"])
        change(d)
        attrs["sweep"] = json.dumps(d, sort_keys=True)
    return edit


def _config_variant(attrs) -> None:
    attrs["config"] = json.dumps({**json.loads(attrs["config"]), "variant": "paper"}, sort_keys=True)


def _consolidate(path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.consolidate_metadata(str(path))


LATER_CONTENTS = {
    # case: (what a later version writes, added to the 0.2.0 store; what the refusal names)
    "records' attribute": (lambda p: _edit_attrs(p, lambda a: a.update({CHUNK_VARS: '["mo_se"]'})),
                           f"root attribute {CHUNK_VARS}"),
    "later attribute": (lambda p: _edit_attrs(p, lambda a: a.update(attnphys_given='["steps"]')),
                        "root attribute attnphys_given"),
    "records' variable": (lambda p: _add_variable(p, "chunk_sums"), "variable chunk_sums"),
    "later variable": (lambda p: _add_variable(p, "mo_se_lowfreq_pvalue"), "variable mo_se_lowfreq_pvalue"),
    "later definition field": (
        lambda p: _edit_attrs(p, _edit_definition(lambda d: d["task"]["config"].update(variant="paper"))),
        "field task.config.variant of its sweep definition",
    ),
    "later task kind": (
        lambda p: _edit_attrs(p, _edit_definition(lambda d: d["task"].update(kind="dmft-attractors"))),
        "task kind 'dmft-attractors'",
    ),
    "later config field": (lambda p: _edit_attrs(p, _config_variant), "field variant of its config attribute"),
    "consolidated metadata": (_consolidate, "consolidated metadata"),
}


@pytest.mark.parametrize("case", list(LATER_CONTENTS))
def test_a_store_naming_0_2_0_that_holds_what_0_2_0_never_wrote_is_refused(tmp_path, case):
    path = _old_store(tmp_path)
    add, named = LATER_CONTENTS[case]
    add(path)
    with pytest.raises(DamagedResultError, match="is damaged") as err:
        load(path)
    message = str(err.value)
    assert named in message and f"lacks {MANIFEST}" in message and "names attnphys 0.2.0" in message
    assert "re-run the command that makes it" in message


@pytest.mark.slow
def test_a_chunk_is_never_larger_than_the_grid(tmp_path):
    """The Zarr chunk (whose buffer is allocated whole when a region is written) is capped at the grid."""
    task, grid = task_class("dmft-trajectory").example()
    sweep = Sweep(grid=Grid(axes=grid.axes, chunk=10**9), task=task)
    run_sweep(sweep, tmp_path / "s.zarr", progress=False)
    arr = zarr.open_array(store=str(tmp_path / "s.zarr"), path="mo_se", mode="r")
    assert arr.chunks[0] == grid.size
    # the same sweep with the chunk given as the grid's size resumes the store (one chunk either way)
    run_sweep(Sweep(grid=Grid(axes=grid.axes, chunk=grid.size), task=task), tmp_path / "s.zarr", progress=False)


# -- root attributes and records: every way of making a store lie is refused on open and on resume --------


def _edit_attrs(path, change) -> None:
    g = zarr.open_group(str(path), mode="r+")
    attrs = dict(g.attrs)
    change(attrs)
    g.attrs.clear()
    g.attrs.update(attrs)


def _relabel(attrs) -> None:
    """The stored β_o = 0.8 relabelled 9.9 (the edit that would make computed points lie)."""
    d = json.loads(attrs["sweep"])
    d["grid"]["axes"][0]["values"][0] = 9.9
    attrs["sweep"] = json.dumps(d, sort_keys=True)


def _edit_config(attrs) -> None:
    c = json.loads(attrs["config"])
    c["beta_att"] = 7.5
    attrs["config"] = json.dumps(c, sort_keys=True)


ATTRIBUTE_DAMAGE = {
    # case: (edit of the root attributes, what the refusal names)
    "records deleted": (
        lambda a: [a.pop(MANIFEST), a.pop(CHUNK_VARS)],
        f"lacks {MANIFEST} and {CHUNK_VARS}",
    ),
    "manifest deleted": (lambda a: a.pop(MANIFEST), f"lacks {MANIFEST},"),
    "sweep value edited": (_relabel, "root attribute sweep changed"),
    "config edited": (_edit_config, "root attribute config changed"),
    "job record added": (lambda a: a.update(attnphys_job='{"steps": 5}'), "root attribute attnphys_job added"),
    "version removed": (lambda a: a.pop("attnphys_version"), "root attribute attnphys_version removed"),
    "attribute record deleted": (
        lambda a: a.update({MANIFEST: json.dumps(manifest_files(json.loads(a[MANIFEST])))}),
        "record of its attributes",
    ),
}


@pytest.mark.parametrize("case", list(ATTRIBUTE_DAMAGE))
def test_a_store_with_edited_root_attributes_is_refused_on_open_and_on_resume(whole, tmp_path, case):
    path = _copy(whole, tmp_path)
    edit, named = ATTRIBUTE_DAMAGE[case]
    if case == "records deleted":  # with a chunk gone too: once verification was off, it loaded NaN
        os.remove(_file(path, "mo_se", 1))
    _edit_attrs(path, edit)
    for reader in (load, open_result):
        with pytest.raises(DamagedResultError, match="is damaged") as err:
            reader(path)
        assert named in str(err.value)
    sweep = _sweep()
    if case == "sweep value edited":  # the resume that matches the edited definition
        sweep = Sweep.model_validate_json(zarr.open_group(str(path), mode="r").attrs["sweep"])
    with pytest.raises(DamagedResultError, match="is damaged") as err:
        run_sweep(sweep, path, progress=False)
    assert named in str(err.value) and "--overwrite" in str(err.value)
    again = run_sweep(_sweep(), path, progress=False, replace=True)
    assert_same_store(again.drop_attrs(), whole[1].drop_attrs())


def test_a_store_naming_an_older_version_with_an_edited_attribute_but_a_record_is_refused(whole, tmp_path):
    """The record, where there is one, is checked whatever the version says."""
    path = _copy(whole, tmp_path)
    _edit_attrs(path, _relabel)
    _edit_attrs(path, lambda a: a.update(attnphys_version="0.1.0"))
    with pytest.raises(DamagedResultError, match="sweep"):
        load(path)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["load then to_zarr", "open_zarr then to_zarr"])
@pytest.mark.parametrize("kind", ["sweep", "single"])
def test_a_copy_written_with_to_zarr_says_what_it_is(whole, tmp_path, how, kind):
    if kind == "sweep":
        path = whole[0]
    else:
        ds = xr.Dataset({"a": (("x",), np.arange(4.0))}, attrs={"attnphys_version": "0.2.0"})
        path = save(ds, tmp_path / "r.zarr")
    copy = tmp_path / "copy.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if how == "load then to_zarr":
            load(path).to_zarr(copy)
        else:
            with xr.open_zarr(path, consolidated=False) as src:
                src.to_zarr(copy)
    try:
        got = load(copy)
    except DamagedResultError as e:  # refused: the message says what the copy is and how to copy instead
        assert "to_zarr" in str(e) and "interrupted" not in str(e)
    else:  # loadable only where its files are the ones recorded
        xr.testing.assert_equal(got.drop_attrs(), load(path).drop_attrs())
    # attnphys.io.save makes a verified copy
    again = save(load(path), tmp_path / "saved.zarr")
    xr.testing.assert_equal(load(again).drop_attrs(), load(path).drop_attrs())


def test_a_loaded_sweep_result_travels_as_netcdf_with_plain_xarray(whole, tmp_path):
    """The core install writes NetCDF-3 (scipy): the sweep's uint32 ``point_seed`` (values beyond int32)
    is encoded so that plain ``to_netcdf`` works and reads back the same numbers."""
    ds = load(whole[0])
    assert ds["point_seed"].dtype == np.uint32 and int(ds["point_seed"].max()) > np.iinfo(np.int32).max
    ds.to_netcdf(tmp_path / "r.nc", engine="scipy")
    back = xr.load_dataset(tmp_path / "r.nc")
    np.testing.assert_array_equal(back["point_seed"].values, ds["point_seed"].values)
    for name in ds.data_vars:
        np.testing.assert_array_equal(back[name].values, ds[name].values)
    # attnphys.io.save writes the stored type again, not the portable encoding
    again = load(save(ds, tmp_path / "again.zarr"))
    assert again["point_seed"].dtype == np.uint32


def test_a_full_disk_is_named_by_the_output_and_leaves_nothing_hidden(tmp_path, monkeypatch):
    import errno

    import attnphys.io as io
    from attnphys.errors import OutputError

    def full(ds, path, netcdf=False):
        (path / "part").mkdir(parents=True)
        raise OSError(errno.ENOSPC, "No space left on device", str(path / "part" / "c0"))

    monkeypatch.setattr(io, "write_dataset", full)
    with pytest.raises(OutputError, match=r"r\.zarr: no space left on the device while writing it") as err:
        save(xr.Dataset({"a": ("x", np.ones(3))}), tmp_path / "r.zarr")
    assert ".partial" not in str(err.value)
    assert list(tmp_path.iterdir()) == []

"""Every input file through one reader (attnphys._files): options files, design files, weight files
(JSON and .npz), window files and probe texts refuse, each by name, what is not a regular file of a
sensible size, archives that unpack beyond a cap, keys given twice, and dates or binary data given as
values; relative paths in an options file are read against the file's folder."""

import importlib
import json
import os
import signal
import zipfile
from pathlib import Path

import numpy as np
import pytest

from attnphys.clouds._api import flow_weights
from attnphys.dmft.correlations.explicit import read_weights
from attnphys.dmft.designed._design import load_design
from attnphys.dmft.initial import read_window_file
from attnphys.errors import InputError
from attnphys.jobs import build_job, job_class, read_options_file
from attnphys.probes.capture import read_text

DESIGN = Path(__file__).resolve().parents[1] / "src/attnphys/data/designs/3_no_duplicity.yaml"

READERS = {
    # reader: (call, suffix of its files, module constants that cap its size)
    "config": (read_options_file, ".yaml", [("attnphys.jobs.MAX_OPTIONS_BYTES", 1 << 10)]),
    "design": (load_design, ".yaml", [("attnphys.dmft.designed._design.MAX_DESIGN_BYTES", 1 << 10)]),
    "weights json": (read_weights, ".json", [("attnphys.dmft.correlations.explicit.MAX_WEIGHTS_BYTES", 1 << 10)]),
    "weights npz": (read_weights, ".npz", [("attnphys.dmft.correlations.explicit.MAX_WEIGHTS_BYTES", 1 << 10)]),
    "flow weights": (lambda p: flow_weights(str(p), 2), ".npz", [("attnphys.clouds._api.MAX_WEIGHTS_BYTES", 1 << 10)]),
    "window": (read_window_file, ".json", [("attnphys.dmft._window_files.MAX_START_BYTES", 1 << 10)]),
    "probe text": (read_text, ".txt", [("attnphys.probes.capture.MAX_TEXT_BYTES", 1 << 10)]),
}


@pytest.fixture(autouse=True)
def _never_hang():
    """A reader that opened a named pipe would wait forever: fail instead."""
    signal.signal(signal.SIGALRM, lambda *a: pytest.fail("the reader blocked"))
    signal.alarm(20)
    yield
    signal.alarm(0)


def _cap(monkeypatch, caps, value: int | None) -> None:
    for name, default in caps:
        module, attr = name.rsplit(".", 1)
        monkeypatch.setattr(importlib.import_module(module), attr, value or default)


def _make(kind: str, folder: Path, suffix: str) -> Path:
    p = folder / f"input{suffix}"
    if kind == "folder":
        p.mkdir()
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "device":
        return Path("/dev/zero")
    elif kind == "link to a device":
        p.symlink_to("/dev/zero")
    elif kind == "link to nothing":
        p.symlink_to(folder / "nothing")
    elif kind == "too large":
        p.write_bytes(b"#" * (1 << 12) if suffix != ".npz" else b"PK" * (1 << 11))
    return p


NOT_A_FILE = {
    # kind: what the refusal says
    "folder": "is a folder",
    "fifo": "named pipe (FIFO)",
    "device": "/dev/zero is a character device",
    "link to a device": "(a symbolic link to /dev/zero) is a character device",
    "link to nothing": "is a symbolic link to",
    "too large": "is larger than 1 KiB",
}


@pytest.mark.parametrize("kind", list(NOT_A_FILE))
@pytest.mark.parametrize("reader", list(READERS))
def test_every_reader_refuses_what_is_not_a_file_of_sensible_size(tmp_path, monkeypatch, reader, kind):
    call, suffix, caps = READERS[reader]
    _cap(monkeypatch, caps, None)
    path = _make(kind, tmp_path, suffix)
    with pytest.raises(ValueError) as err:  # InputError (a ValueError); window files: ValueError
        call(path)
    assert NOT_A_FILE[kind] in str(err.value)
    if reader != "window":
        assert isinstance(err.value, InputError)


def _bomb(path: Path, unpacked: int) -> None:
    """An .npz whose one array unpacks to ``unpacked`` bytes of zeros (a few KiB on disk)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf, zf.open("W.npy", "w") as f:
        header = np.lib.format.header_data_from_array_1_0(np.zeros(unpacked // 8))
        np.lib.format.write_array_header_1_0(f, header)
        block = bytes(1 << 16)
        for _ in range(unpacked // len(block)):
            f.write(block)


@pytest.mark.parametrize("reader", ["weights npz", "flow weights", "window"])
def test_an_archive_that_unpacks_beyond_the_cap_is_refused_before_unpacking(tmp_path, monkeypatch, reader):
    call, suffix, caps = READERS[reader]
    _cap(monkeypatch, caps, 1 << 20)
    path = tmp_path / "bomb.npz"
    _bomb(path, 4 << 20)
    assert path.stat().st_size < 1 << 16
    with pytest.raises(ValueError, match="unpacks to 4 MiB, more than 1 MiB"):
        call(path)


MAPPING_FILES = {
    # case: (reader, file name, text, what the refusal says)
    "config yaml key twice": ("config", "o.yaml", "steps: 3\nsteps: 4\n", "line 2: the key 'steps' is given twice"),
    "config json key twice": ("config", "o.json", '{"steps": 3, "steps": 4}', "the key 'steps' is given twice"),
    "config toml key twice": ("config", "o.toml", "steps = 3\nsteps = 4\n", "not valid TOML"),
    "design yaml key twice": ("design", "d.yaml", DESIGN.read_text() + "m_se: 2\n", "the key 'm_se' is given twice"),
    "design json key twice": ("design", "d.json", '{"m_se": 3, "m_se": 2}', "the key 'm_se' is given twice"),
    "weights json key twice": ("weights json", "w.json", '{"W": [], "W": []}', "the key 'W' is given twice"),
    "window json key twice": ("window", "s.json", '{"n": 1, "n": 2}', "the key 'n' is given twice"),
    "config yaml date": ("config", "o.yaml", "steps: 2024-01-01\n", "'2024-01-01' is a date"),
    "config toml date": ("config", "o.toml", "steps = 1979-05-27\n", "steps is a date or time"),
    "design yaml date": ("design", "d.yaml", DESIGN.read_text().replace("m_se: 3", "m_se: 2024-01-01"), "is a date"),
    "config yaml binary": ("config", "o.yaml", "steps: !!binary aGVsbG8=\n", "binary data (!!binary)"),
    "design yaml binary": ("design", "d.yaml", "m_se: !!binary aGVsbG8=\n", "binary data (!!binary)"),
}


@pytest.mark.parametrize("case", list(MAPPING_FILES))
def test_keys_given_twice_dates_and_binary_are_refused_by_every_reader(tmp_path, case):
    reader, name, text, said = MAPPING_FILES[case]
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        READERS[reader][0](path)
    assert said in str(err.value) and str(path) in str(err.value)


def test_a_date_in_an_options_file_is_a_message_not_a_traceback(tmp_path):
    path = tmp_path / "o.yaml"
    path.write_text("steps: 2024-01-01\n")
    with pytest.raises(InputError, match="--config.*is a date"):
        build_job(job_class("dmft trajectory"), {}, path)


@pytest.mark.parametrize("field", ["design", "correlations"])
def test_relative_paths_in_an_options_file_are_read_against_its_folder(tmp_path, monkeypatch, field):
    folder = tmp_path / "opts"
    folder.mkdir()
    (folder / "my.yaml").write_text(DESIGN.read_text())
    w = folder / "w.json"
    w.write_text(json.dumps({"W": np.ones((4, 3, 5)).tolist()}))
    opts = folder / "run.yaml"
    opts.write_text("design: my.yaml\n" if field == "design" else "correlations: {kind: weights, path: w.json}\n")
    monkeypatch.chdir(tmp_path)  # another folder: the paths name files beside the options file
    job = build_job(job_class("dmft trajectory"), {"out": str(tmp_path / "o.zarr")}, opts)
    got = job.design if field == "design" else job.correlations
    if field == "design":
        assert got == str(folder / "my.yaml")
    else:
        assert isinstance(got, dict) and got["path"] == str(w)


def test_a_design_with_huge_orders_is_refused_at_once_with_a_short_message():
    """The permutation check is linear in M (it was quadratic: minutes for a long list), and the message
    shows the start of the list, not all of it."""
    from attnphys.dmft.designed._design import design_from_mapping

    M = 200_000
    lists = {c: [0] * M for c in "qkvo"}
    with pytest.raises(InputError, match=r"orders\.q.*is not a permutation of 0\.\.199999") as err:
        design_from_mapping({"m_se": 1, "P": 1, "orders": lists, "projection": lists, "positional": lists})
    assert len(str(err.value)) < 400


def test_a_designed_model_too_large_is_refused_before_it_is_built(monkeypatch):
    """A valid design of many mean-field patterns is sized before its arrays are allocated."""
    import attnphys.dmft as d
    from attnphys.dmft.designed import designed_config
    from attnphys.errors import MAX_MEMORY_ENV, ResourceError

    monkeypatch.setenv(MAX_MEMORY_ENV, "1G")
    M = 20_000
    design = {
        "m_se": 12,
        "P": 16,
        "orders": {c: list(range(M)) for c in "qkvo"},
        "projection": {c: [i % 12 for i in range(M)] for c in "qkvo"},
        "positional": {c: [0] * M for c in "qkvo"},
    }
    cfg = designed_config(design, L=4)
    with pytest.raises(ResourceError, match=r"design: the arrays of a designed model with M = 20000"):
        d.trajectories(cfg, steps=5)

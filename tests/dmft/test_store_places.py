"""A store the analyses cannot create is refused before anything is computed, naming ``store`` and the
place (docs/theory/sweeps.md §5), as the commands refuse ``--out``."""

import contextlib
import errno

import pytest

import attnphys._paths as paths
import attnphys.sweeps.engine as engine
import attnphys.sweeps.store as store_module
from attnphys import dmft
from attnphys.errors import OutputError


def _read_only(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "_mount_of", lambda p: ("ext4", {"ro", "relatime"}))
    return tmp_path / "b.zarr", "is on a read-only file system"


def _parent_is_a_file(monkeypatch, tmp_path):
    (tmp_path / "notes").write_text("notes")
    return tmp_path / "notes" / "b.zarr", f"its parent {tmp_path / 'notes'} is a file"


def _kernel_interface(monkeypatch, tmp_path):
    return "/proc/attnphys-test-store.zarr", "not to storage"


def _refuses_new_files(monkeypatch, tmp_path):
    @contextlib.contextmanager
    def refuse(path, replace=True):
        raise PermissionError(errno.EPERM, "Operation not permitted", str(path))
        yield  # pragma: no cover

    monkeypatch.setattr(store_module, "staged", refuse)
    return tmp_path / "b.zarr", "cannot create the store in"


PLACES = {
    # case: (set-up returning the store and what the refusal says)
    "read-only file system": _read_only,
    "parent is a file": _parent_is_a_file,
    "kernel interface": _kernel_interface,
    "folder refusing new files": _refuses_new_files,
}

ANALYSES = {
    "bifurcation": lambda store: dmft.bifurcation(
        dmft.DMFTConfig(), {"beta_o": [1.0, 1.1]}, steps=40, transient=20, n_orbit=20, store=store
    ),
    "phase_diagram": lambda store: dmft.phase_diagram(
        dmft.DMFTConfig(), {"beta_o": [1.0], "beta_att": [2.0]}, steps=40, transient=20, n_orbit=20, store=store
    ),
}


@pytest.mark.parametrize("analysis", list(ANALYSES))
@pytest.mark.parametrize("case", list(PLACES))
def test_a_store_that_cannot_be_created_is_refused_before_computing(tmp_path, monkeypatch, case, analysis):
    store, says = PLACES[case](monkeypatch, tmp_path)

    def never(*args, **kwargs):
        raise AssertionError("computed before the store was checked")

    monkeypatch.setattr(engine, "compute_chunk", never)
    with pytest.raises(OutputError) as err:
        ANALYSES[analysis](store)
    message = str(err.value)
    assert message.startswith(f"store {store}") and says in message
    assert not any(p.name.endswith(".zarr") or ".partial-" in p.name for p in tmp_path.iterdir())

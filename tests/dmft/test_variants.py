"""The registry of model variants: a variant written outside the package (here a fixture package under
tmp_path, found through its entry point without any install) gives its own results through the Python API,
the sweep tasks and the command line, and its stored configuration reads back as itself; configurations
stored by 0.2.0 (no tag) still load, and a conflicting registration is refused.

The worked example of docs/theory/variants.md: the paper's network with its positional code reversed (bit p
read as bit P − 1 − p). With ε = 0 the positional code does not enter the map, so the two models must agree
exactly; with ε > 0 they must differ."""

import json
import sys
import textwrap

import numpy as np
import pytest
from typer.testing import CliRunner

from attnphys.dmft import DMFTConfig, bifurcation, preset, variant_class, variant_names
from attnphys.dmft._variant import as_config, register_variant
from attnphys.errors import ExtensionError, InputError

VARIANT = textwrap.dedent('''
    """A model variant: the paper's network with its positional code reversed (bit p read as bit P-1-p)."""

    from typing import Any, ClassVar, Literal

    from attnphys.dmft import DMFTConfig, DMFTModel


    class ReversedModel(DMFTModel):
        """The paper's model whose positional weights read the code's bits in reverse order."""

        @classmethod
        def build(cls, cfg):
            model = super().build(cfg)
            reversed_pe = model.couplings.W_pe[..., ::-1]
            return cls(cfg, model.correlations, model.couplings._replace(W_pe=reversed_pe))


    class ReversedConfig(DMFTConfig):
        """The paper's network, positional code reversed."""

        variant: Literal["reversed"] = "reversed"
        model: ClassVar[Any] = ReversedModel
''')


def write_package(root, name: str, files: dict[str, str], entry_points: dict[str, dict[str, str]]) -> None:
    """A package ``name`` under ``root`` with its distribution metadata (the entry points an install would
    write), so that putting ``root`` on the path is all it takes to use it."""
    pkg = root / name
    pkg.mkdir()
    for rel, text in files.items():
        (pkg / rel).write_text(text)
    info = root / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "".join(f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n" for g, eps in entry_points.items())
    )


@pytest.fixture
def reversed_variant(tmp_path, monkeypatch):
    """The fixture package ``revpos`` on the path, its variant found through its entry point."""
    write_package(
        tmp_path, "revpos", {"__init__.py": VARIANT}, {"attnphys.model_variants": {"reversed": "revpos:ReversedConfig"}}
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("revpos", None)


SMALL = dict(steps=3000, transient=2000, exponents=0, n_orbit=50, start="token")


@pytest.mark.slow
def test_a_variant_from_an_entry_point_gives_its_own_bifurcation(reversed_variant):
    assert "reversed" in variant_names()
    cfg = preset("paper", variant="reversed")
    assert type(cfg).__name__ == "ReversedConfig" and isinstance(cfg, DMFTConfig)
    assert type(cfg.replace(beta_o=2.0)) is type(cfg)  # a copy stays the variant
    sweep = {"epsilon": [0.0, 0.02]}
    mine, paper = bifurcation(cfg, sweep, **SMALL), bifurcation(preset("paper"), sweep, **SMALL)
    orbit, ref = mine.orbit.values, paper.orbit.values
    np.testing.assert_array_equal(orbit[0], ref[0])  # no positional weight: the same map
    assert np.nanmax(np.abs(orbit[1] - ref[1])) > 1e-4  # the reversed code moves the orbit
    stored = as_config(mine.attrs["config"])
    assert type(stored) is type(cfg) and stored == cfg.replace(epsilon=stored.epsilon)
    assert json.loads(mine.attrs["config"])["variant"] == "reversed"


def test_a_sweep_task_round_trips_the_variant(reversed_variant):
    from attnphys.dmft.tasks import TrajectoryTask

    task = TrajectoryTask(config=preset("paper", variant="reversed"), steps=10)
    back = TrajectoryTask.model_validate_json(task.model_dump_json())
    assert type(back.config) is type(task.config) and back == task


def test_the_command_line_runs_the_variant_and_reruns_it(reversed_variant):
    from attnphys.cli import app
    from attnphys.io import load

    out, again = reversed_variant / "b.zarr", reversed_variant / "again.zarr"
    runner = CliRunner()
    r = runner.invoke(
        app,
        [
            "dmft",
            "bifurcation",
            "--variant",
            "reversed",
            "--start",
            "token",
            "--steps",
            "3000",
            "--transient",
            "2000",
            "--exponents",
            "0",
            "--n-orbit",
            "50",
            "--num",
            "2",
            "--start-value",
            "1.2",
            "--stop-value",
            "1.3",
            "--out",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    ds = load(out)
    assert json.loads(ds.attrs["config"])["variant"] == "reversed"
    r = runner.invoke(app, ["rerun", str(out), "--out", str(again)])
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(load(again).orbit.values, ds.orbit.values)
    r = runner.invoke(app, ["dmft", "bifurcation", "--variant", "nope", "--out", str(reversed_variant / "x.zarr")])
    assert r.exit_code != 0 and "--variant" in r.output and "reversed" in r.output


def test_configurations_of_0_2_0_load_by_their_fields():
    paper = preset("paper").model_dump(mode="json")
    paper.pop("variant")
    assert type(as_config(paper)) is DMFTConfig
    designed = {"kind": "designed", "design": "4_duplicity_loop_4", "L": 4}
    cfg = as_config(designed)
    assert cfg.variant == "designed" and type(cfg) is variant_class("designed")
    with pytest.raises(InputError, match="variant"):
        as_config({**paper, "bias": 1.0})  # no 0.2.0 configuration had it: not guessed
    with pytest.raises(InputError, match="unknown model variant 'nope'"):
        as_config({**paper, "variant": "nope"})


def test_a_tag_given_to_two_classes_is_refused(reversed_variant):
    from typing import Literal

    class Other(DMFTConfig):
        variant: Literal["paper"] = "paper"

    register_variant(variant_class("paper"))  # the same class again: fine
    with pytest.raises(ExtensionError, match="already"):
        register_variant(Other)


def test_an_entry_point_naming_a_builtin_is_ignored_or_skipped_with_a_warning(tmp_path, monkeypatch):
    from attnphys.jobs import command_names

    write_package(
        tmp_path,
        "same",
        {"__init__.py": ""},
        {"attnphys.commands": {"dmft trajectory": "attnphys.dmft._commands.trajectory:TrajectoryJob"}},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert command_names().count("dmft trajectory") == 1
    other = tmp_path / "other"
    other.mkdir()
    write_package(
        other,
        "clash",
        {"__init__.py": "class Job:\n    pass\n"},
        {"attnphys.commands": {"dmft trajectory": "clash:Job"}},
    )
    monkeypatch.syspath_prepend(str(other))
    # the colliding plugin is skipped with a warning naming it; the built-in stays and every command runs
    from attnphys.errors import ExtensionWarning
    from attnphys.jobs import job_class

    with pytest.warns(ExtensionWarning, match="dmft trajectory.*clash:Job"):
        assert command_names().count("dmft trajectory") == 1
    import warnings

    from typer.testing import CliRunner

    from attnphys.cli import app

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtensionWarning)
        assert job_class("dmft trajectory").__module__ == "attnphys.dmft._commands.trajectory"
        r = CliRunner().invoke(app, ["dmft", "attractors", "--help"])
    assert r.exit_code == 0, r.output


def test_a_configuration_class_without_its_own_tag_or_registration_is_refused():
    from typing import Literal

    from attnphys.dmft.tasks import TrajectoryTask

    with pytest.raises(ExtensionError, match="inherits the variant tag 'paper'"):

        class Untagged(DMFTConfig):  # would be read back as the paper's network
            pass

    class Unregistered(DMFTConfig):
        variant: Literal["unregistered"] = "unregistered"

    class ForeignPaper(DMFTConfig):
        variant: Literal["paper"] = "paper"

    with pytest.raises(ValueError, match="unknown model variant 'unregistered'"):
        TrajectoryTask(config=Unregistered(), steps=10)  # a worker could not read it back
    with pytest.raises(ValueError, match="not the registered class"):
        as_config(ForeignPaper())  # registered under its tag is another class

"""Each option declared once (theory: docs/theory/sweeps.md §1): a sweep task built on its analysis'
options (:func:`attnphys.sweeps.task.options_task`) takes their types, defaults, bounds, validators and help
from there, and declares only what the analysis does not have."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from attnphys.registry import all_registries
from attnphys.sweeps.task import AbstractTask, options_task

TASKS = all_registries()["task kind"]

# The DMFT tasks still re-declare their analysis' options under the stored names of 0.3-0.4 (``n_ics``,
# ``k``, ...); moving them onto the options needs the mapping of those stores' names.
NOT_YET = {
    "dmft-trajectory": "attnphys.dmft._analysis_options:TrajectoriesOptions",
    "dmft-lyapunov": "attnphys.dmft._analysis_options:LyapunovOptions",
    "dmft-orbits": "attnphys.dmft._analysis_options:OrbitPoint",
    "dmft-finite": "attnphys.dmft._analysis_options:FinitePoint",
    "dmft-converge": "attnphys.dmft._analysis_options:ConvergeOptions",
    "dmft-attractors": "attnphys.dmft._analysis_options:CensusPoint",
}


def own_fields(cls: type[BaseModel]) -> set[str]:
    """The fields a class body declares itself (not the ones options_task gave its base)."""
    out: set[str] = set()
    for klass in cls.__mro__:
        if klass is AbstractTask or getattr(klass, "options_model", None) is not None and klass is not cls:
            break
        out |= set(klass.__dict__.get("__annotations__", {})) & set(cls.model_fields)
    return out - {"kind"}


def redeclared(cls: type[BaseModel], options: type[BaseModel]) -> list[str]:
    return sorted(own_fields(cls) & set(options.model_fields))


def _options_of(kind: str) -> type[BaseModel]:
    from attnphys._plugins import load

    cls = TASKS[kind]
    return getattr(cls, "options_model", None) or load(NOT_YET[kind])


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param(k, marks=pytest.mark.xfail(strict=True, reason="declares its options twice (open)"))
        if k in NOT_YET
        else k
        for k in TASKS.builtin_names()
    ],
)
def test_a_task_declares_no_option_of_its_analysis_again(kind):
    cls = TASKS[kind]
    assert redeclared(cls, _options_of(kind)) == []


def test_the_task_takes_the_options_rules_and_the_check_finds_a_second_declaration():
    from typing import Literal

    from pydantic import Field, ValidationError

    from attnphys.clouds._analysis_options import ClusteringPoint
    from attnphys.clouds.phase import ClusteringTask

    for name, f in ClusteringTask.model_fields.items():
        if name in ClusteringPoint.model_fields:
            g = ClusteringPoint.model_fields[name]
            assert (f.default, f.description, f.metadata) == (g.default, g.description, g.metadata), name
    with pytest.raises(ValidationError, match="unknown attention 'nope'"):
        ClusteringTask(dynamics="nope")
    with pytest.raises(ValidationError, match="tokens"):
        ClusteringTask(tokens=1)

    class Twice(options_task(ClusteringPoint, exclude=("seed",))):  # negative control
        kind: Literal["twice"] = "twice"
        tokens: int = Field(default=32, ge=2)

    assert redeclared(Twice, ClusteringPoint) == ["tokens"]
    assert "seed" not in ClusteringTask.model_fields
    with pytest.raises(ValueError, match="no field 'sead'"):
        options_task(ClusteringPoint, exclude=("sead",))
    # an options class with checks of its own: its fields alone would not run them, so it is refused
    from attnphys.dmft._analysis_options import ConvergePoint

    with pytest.raises(ValueError, match="ConvergePoint has validators .*_horizon"):
        options_task(ConvergePoint)

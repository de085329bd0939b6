"""The token clouds' registries — normalizations, attention kernels, weight ensembles — readable without
importing the numerical libraries (theory: docs/theory/clouds.md §3, docs/theory/particles.md §2,
docs/theory/clouds.md §6.3).

Each is an :class:`attnphys.registry.Registry` whose built-ins are the ``"module:Class"`` references of
:data:`attnphys._plugins.BUILTINS`, imported when a member is first used, so that the command line lists
their names (its help, its choices) without loading JAX; outside packages add members through the
entry-point groups ``attnphys.norms``, ``attnphys.attentions`` and ``attnphys.ensembles``.
"""

from __future__ import annotations

from typing import Annotated, TypeAlias

from pydantic import AfterValidator

from attnphys._plugins import BUILTINS
from attnphys.registry import MemberOf, Registry


def _subclass_of(base: str):
    """``accept`` of a registry of classes: the object where it is a subclass of ``base`` (a reference)."""

    def accept(obj: object) -> object:
        from attnphys._plugins import load

        cls = load(base)
        return obj if isinstance(obj, type) and issubclass(obj, cls) else None

    return accept


NORMS: Registry = Registry(
    "normalization",
    group="attnphys.norms",
    builtins=BUILTINS["attnphys.norms"],
    accept=_subclass_of("attnphys.clouds.norms._base:AbstractNorm"),
    field="norm",
    member="a normalization class ([token clouds page](clouds.md) §3), name = its `name`",
    adding="one file, one line in `_plugins.py`",
    theory="clouds.md §3",
)
"""The normalization classes by name (:class:`attnphys.clouds.norms.AbstractNorm`)."""

ATTENTIONS: Registry = Registry(
    "attention",
    group="attnphys.attentions",
    builtins=BUILTINS["attnphys.attentions"],
    accept=_subclass_of("attnphys.clouds.attention._base:AbstractAttention"),
    field="kind",
    member="an attention class ([particles page](particles.md) §2), name = its `name`",
    adding="one file, one line in `_plugins.py`",
    theory="particles.md §2",
)
"""The attention classes by name (:class:`attnphys.clouds.attention.AbstractAttention`)."""

ENSEMBLES: Registry = Registry(
    "ensemble",
    group="attnphys.ensembles",
    builtins=BUILTINS["attnphys.ensembles"],
    accept=_subclass_of("attnphys.clouds.ensembles._base:AbstractEnsemble"),
    field="ensemble",
    member="a class of random weights ([token clouds page](clouds.md) §6.3), name = its `name`",
    adding="one file, one line in `_plugins.py`",
    theory="clouds.md §6.3",
)
"""The ensembles of random weights by name (:class:`attnphys.clouds.ensembles.AbstractEnsemble`)."""

AttentionName: TypeAlias = Annotated[str, AfterValidator(MemberOf(ATTENTIONS))]
"""The type of an option naming an attention of :data:`ATTENTIONS`."""

NormName: TypeAlias = Annotated[str, AfterValidator(MemberOf(NORMS))]
"""The type of an option naming a normalization of :data:`NORMS`."""

EnsembleName: TypeAlias = Annotated[str, AfterValidator(MemberOf(ENSEMBLES))]
"""The type of an option naming an ensemble of :data:`ENSEMBLES`."""

__all__ = ["ATTENTIONS", "AttentionName", "ENSEMBLES", "EnsembleName", "NORMS", "NormName"]

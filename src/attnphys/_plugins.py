"""The registries' shared rules for outside packages, and the built-ins named by reference (theory:
docs/theory/variants.md §5).

:data:`BUILTINS` names the library's own members of the registries whose members are importable classes
(commands, sweep tasks, model variants, normalizations, attention kernels, ensembles, result views) as
``"module:attribute"`` references, imported only when a member is used, so that a new command, task or
variant inside the package is one new file and one line here, with no reinstall. Each registry is an
:class:`attnphys.registry.Registry`, which merges these, the members registered in code and the entry
points of outside packages (:func:`outside`): an entry point that names a built-in or a member registered
in code is ignored when it refers to the same object (an installed copy of the package's own metadata),
and skipped with a warning when it refers to another one: two objects under one name would make the result
depend on what happens to be installed.

A light module: nothing here imports a numerical library.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from attnphys.errors import ExtensionError

BUILTINS: dict[str, dict[str, str]] = {
    "attnphys.commands": {
        "dmft trajectory": "attnphys.dmft._commands.trajectory:TrajectoryJob",
        "dmft lyapunov": "attnphys.dmft._commands.lyapunov:LyapunovJob",
        "dmft bifurcation": "attnphys.dmft._commands.diagrams:BifurcationJob",
        "dmft phase-diagram": "attnphys.dmft._commands.diagrams:PhaseDiagramJob",
        "dmft compare-diagrams": "attnphys.dmft._commands.compare:CompareDiagramsJob",
        "dmft portraits": "attnphys.dmft._commands.compare:PortraitsJob",
        "dmft attractors": "attnphys.dmft._commands.attractors:AttractorsJob",
        "dmft basins": "attnphys.dmft._commands.attractors:BasinsJob",
        "dmft orbit-continuation": "attnphys.dmft._commands.attractors:OrbitContinuationJob",
        "dmft boundary": "attnphys.dmft._commands.boundary:BoundaryJob",
        "dmft stability": "attnphys.dmft._commands.attractors:StabilityJob",
        "dmft finite": "attnphys.dmft._commands.finite:FiniteJob",
        "dmft converge": "attnphys.dmft._commands.finite:ConvergeJob",
        "dmft fluctuations": "attnphys.dmft._commands.fluctuations:FluctuationsJob",
        "dmft switching": "attnphys.dmft._commands.switching:SwitchingJob",
        "dmft presets": "attnphys.dmft._commands.presets:PresetsJob",
        "dmft designs": "attnphys.dmft._commands.presets:DesignsJob",
        "dmft design-report": "attnphys.dmft._commands.design:DesignReportJob",
        "clouds run": "attnphys.clouds.jobs:CloudsRunJob",
        "clouds flow": "attnphys.clouds.jobs:CloudsFlowJob",
        "clouds phase-diagram": "attnphys.clouds.jobs:CloudsPhaseDiagramJob",
        "clouds through-model": "attnphys.clouds.jobs:CloudsThroughModelJob",
        "probe": "attnphys.probes.jobs:ProbeJob",
        "verify": "attnphys.expfam.jobs:VerifyJob",
        "reproduce": "attnphys.reproduce.job:ReproduceJob",
        "demo": "attnphys.demo:DemoJob",
    },
    "attnphys.sweep_tasks": {
        "dmft-trajectory": "attnphys.dmft.tasks.trajectory:TrajectoryTask",
        "dmft-lyapunov": "attnphys.dmft.tasks.lyapunov:LyapunovTask",
        "dmft-orbits": "attnphys.dmft.tasks.orbits:OrbitTask",
        "dmft-finite": "attnphys.dmft.tasks.finite:FiniteTask",
        "dmft-converge": "attnphys.dmft.tasks.converge:ConvergeTask",
        "dmft-attractors": "attnphys.dmft.tasks.attractors:AttractorTask",
        "clouds-clustering": "attnphys.clouds.phase:ClusteringTask",
    },
    "attnphys.model_variants": {
        "paper": "attnphys.dmft.config:DMFTConfig",
        "designed": "attnphys.dmft.designed._config:DesignedConfig",
    },
    "attnphys.norms": {
        "layernorm": "attnphys.clouds.norms.layernorm:LayerNorm",
        "rmsnorm": "attnphys.clouds.norms.rmsnorm:RMSNorm",
        "rn": "attnphys.clouds.norms.rn:RN",
        "diagonal_rn": "attnphys.clouds.norms.diagonal_rn:DiagonalRN",
        "sphere": "attnphys.clouds.norms.sphere:Sphere",
        "none": "attnphys.clouds.norms.identity:Identity",
    },
    "attnphys.attentions": {
        "sa": "attnphys.clouds.attention.softmax:SoftmaxAttention",
        "usa": "attnphys.clouds.attention.unnormalised:UnnormalisedAttention",
        "sinkhorn": "attnphys.clouds.attention.sinkhorn:SinkhornAttention",
    },
    "attnphys.ensembles": {
        "gaussian": "attnphys.clouds.ensembles.gaussian:Gaussian",
        "goe": "attnphys.clouds.ensembles.goe:GOE",
        "pm_kq": "attnphys.clouds.ensembles.pm_kq:PlusMinusKQ",
    },
    "attnphys.result_views": {
        "sweep-task": "attnphys.sweeps.engine:finalized",
    },
}
"""The library's own members of each registry (entry-point group → name → ``"module:attribute"``)."""


def load(ref: str) -> Any:
    """The object a ``"module:attribute"`` reference names (importing its module)."""
    module, _, attr = ref.partition(":")
    obj: Any = import_module(module.strip())
    for part in attr.strip().split(".") if attr.strip() else ():
        obj = getattr(obj, part)
    return obj


def _same(ref: str, obj: Any) -> bool:
    """Whether ``ref`` names ``obj`` (by reference first; by identity of what it loads otherwise)."""
    if obj is None:
        return False
    if isinstance(obj, str):
        if "".join(ref.split()) == "".join(obj.split()):
            return True
        obj = load(obj)
    try:
        return load(ref) is obj
    except Exception:  # an entry point that does not load names nothing the registry holds
        return False


def _where(ep) -> str:
    dist = getattr(ep, "dist", None)
    return f" (from the distribution {dist.name})" if dist is not None else ""


def skipped(what: str, why: str) -> None:
    """Warn that an outside package's member was skipped (an :class:`~attnphys.errors.ExtensionWarning`
    naming it and why): the registry goes on without it, and no unrelated command breaks."""
    import warnings

    from attnphys.errors import ExtensionWarning, find_stack_level

    warnings.warn(f"skipped {what}: {why}", ExtensionWarning, stacklevel=find_stack_level())


def outside(group: str, registered: dict[str, Any] | None = None, own: dict[str, str] | None = None) -> dict[str, str]:
    """The entry points of ``group`` that add members (name → reference): those naming a built-in or a
    registered member with the same object are left out.

    Args:
        registered: the members registered in code in this process (name → object).
        own: the built-ins (name → reference; default :data:`BUILTINS` of ``group``).

    An entry point that gives a built-in's or a registered member's name to another object is skipped with
    an :class:`~attnphys.errors.ExtensionWarning` naming the entry point, the name and both objects: the
    existing member is kept, and nothing unrelated breaks (one colliding plugin never takes down every
    command). Two outside entry points that give one name to two objects are both skipped, with a warning
    naming both (which one would win depends on what happens to be installed); the same reference twice (one
    package seen twice on the path) is one member.
    """
    from importlib.metadata import entry_points

    builtins = BUILTINS.get(group, {}) if own is None else own
    registered = registered or {}
    out: dict[str, str] = {}
    clashing: dict[str, list[str]] = {}
    for ep in entry_points(group=group):
        mine = builtins.get(ep.name, registered.get(ep.name))
        if mine is None:
            if ep.name in out and not _same_ref(out[ep.name], ep.value):
                clashing.setdefault(ep.name, [out[ep.name]]).append(f"{ep.value}{_where(ep)}")
            out.setdefault(ep.name, ep.value)
            continue
        if not _same(ep.value, mine):
            ours = (
                mine
                if isinstance(mine, str)
                else f"{getattr(mine, '__module__', '?')}:{getattr(mine, '__qualname__', mine)}"
            )
            skipped(
                f"the entry point {ep.name!r} of the group {group}{_where(ep)}",
                f"it names {ep.value}, but {ep.name!r} is already {ours}; rename the outside one (one name, one "
                "object)",
            )
    for name, refs in clashing.items():
        out.pop(name, None)
        skipped(
            f"the entry points {name!r} of the group {group}",
            f"outside packages give that name to {len(refs)} objects ({', '.join(refs)}); which one would be used "
            "depends on what happens to be installed: rename all but one (one name, one object)",
        )
    return out


def _same_ref(a: str, b: str) -> bool:
    return "".join(a.split()) == "".join(b.split())


def load_outside(group: str, name: str, ref: str) -> Any:
    """The object the outside entry point ``name`` of ``group`` names (``ref``), imported now.

    Raises:
        ExtensionError: it cannot be imported (its module fails, or has no such attribute): the message names
            the entry point, the reference and the error, never the outside package's bare traceback.
    """
    try:
        return load(ref)
    except Exception as e:  # an outside package's failure, whatever it is, told as the plugin's
        raise ExtensionError(
            f"the entry point {name!r} of the group {group} names {ref}, which fails to load "
            f"({type(e).__name__}: {e}); fix or uninstall the package that declares it"
        ) from e

"""The names of the 0.2.0 release that moved or went away, kept importable until 0.5.0.

One table says where each one went. A module that lost a name ends with
``__getattr__ = _deprecated.module_getattr(__name__)`` (a lazily loaded package wraps its own ``__getattr__``
with :func:`extend`); a module of 0.2.0 that no longer exists is a two-line file that calls :func:`shim`.
Every access warns with a :class:`DeprecationWarning` naming the replacement. A name whose replacement
behaves differently (the plot functions that wrote files, for instance) is importable, and calling it raises
:class:`NotImplementedError` saying what to call instead: a script fails where it would have given a
different result.

``tests/data/surface_0.2.0.txt`` lists the 0.2.0 names (``scripts/public_surface.py released``); a test
imports each of them.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

SINCE = "0.3.0"
UNTIL = "0.5.0"

_D = "attnphys.dynamics"
_M = "attnphys.dmft"
_P = "attnphys.plots"

MODULES: dict[str, str] = {
    "attnphys.clouds.through_model": "attnphys.clouds.through_model (the function) and attnphys.clouds.pretrained",
    "attnphys.dmft.analysis": "attnphys.dmft.bifurcation and attnphys.dmft.lyapunov_spectrum",
    "attnphys.dmft.converge": "attnphys.dmft.converge (the function)",
    "attnphys.dmft.jobs": "the commands (attnphys dmft ...) or the functions of attnphys.dmft",
    "attnphys.dmft.trajectory": "attnphys.dmft.trajectories and attnphys.dmft.final_windows",
    "attnphys.dynamics.census": "attnphys.dynamics.census (the function) and attnphys.dynamics.census_batch",
    "attnphys.dynamics.lyapunov": "attnphys.dynamics.lyapunov_spectrum",
    "attnphys.dynamics.tracks": "attnphys.dynamics.tracks (the function)",
    "attnphys.plots.bifurcation": "attnphys.plots",
    "attnphys.plots.clouds": "attnphys.plots",
    "attnphys.plots.converge": "attnphys.plots",
    "attnphys.plots.particles": "attnphys.plots",
    "attnphys.plots.phase": "attnphys.plots",
    "attnphys.plots.probes": "attnphys.plots",
    "attnphys.plots.reproduce": "attnphys.plots",
    "attnphys.plots.trajectory": "attnphys.plots",
}
"""The modules of 0.2.0 that are gone, and where their names are now."""

MOVED: dict[str, tuple[str, str]] = {}
"""``old.module:name`` -> (``module:attribute`` holding the object now, the replacement a user should call)."""

REMOVED: dict[str, str] = {}
"""``old.module:name`` of a function whose replacement behaves differently -> what to call instead."""


def _moved(old_module: str, target_module: str, names: str, replacement: str | None = None) -> None:
    for name in names.split():
        target = f"{target_module}:{name}"
        MOVED[f"{old_module}:{name}"] = (target, replacement or target.replace(":", "."))


def _internal(old_module: str, target_module: str, names: str, use: str) -> None:
    """Helpers that are internal now: still the same objects, the warning names the public analysis."""
    for name in names.split():
        MOVED[f"{old_module}:{name}"] = (f"{target_module}:{name}", f"{use} (the helper is internal since {SINCE})")


# attnphys.clouds
_moved("attnphys.clouds.through_model", "attnphys.clouds.pretrained", "through_model", "attnphys.clouds.through_model")
_internal(
    "attnphys.clouds.through_model",
    "attnphys.clouds.pretrained",
    "LayerOperators OPERATORS THROUGH_INITS initial_model_cloud model_operators push random_operators theory_operators",
    "attnphys.clouds.through_model",
)
# attnphys.dmft: the package's names of 0.2.0 that now live in its modules only
_moved(_M, f"{_M}.maps", "AttentionMap FullStateMap")
_moved(_M, f"{_M}.tasks.converge", "ConvergeTask")
_moved(_M, f"{_M}.tasks.finite", "FiniteTask")
_moved(_M, f"{_M}.tasks.lyapunov", "LyapunovTask")
_moved(_M, f"{_M}.tasks.orbits", "OrbitTask")
_moved(_M, f"{_M}.tasks.trajectory", "TrajectoryTask")
_moved(_M, f"{_M}.correlations", "Correlations FAMILIES moments_from_weights odd_subsets sign_matrix sign_vectors")
_moved(_M, f"{_M}.correlations.gaussian", "gaussian_correlations")
_moved(_M, f"{_M}.correlations.segments", "paper_segment_weights")
_moved(_M, f"{_M}.correlations.random", "random_weights")
_moved(_M, f"{_M}.meanfield", "Couplings Scalars State couplings overlaps scalars semantic_overlap step")
_moved(_M, f"{_M}.simulate", "Schedule run run_batch")
_moved(_M, f"{_M}.initial", "from_json from_token initial_window position_code token_positions window_to_json")
_moved(_M, f"{_M}.starts", "parse_start")
_moved(_M, f"{_M}.finite", "random_network repeated_network")
_moved(_M, f"{_M}.tasks", "orbit_spec")
_internal(_M, f"{_M}._convergence", "fitted_slope", "attnphys.dmft.converge")
MOVED[f"{_M}:SWEEPABLE"] = (f"{_M}.config:BATCHED", f"{_M}.BATCHED (or {_M}.sweepable_fields() for every field)")
REMOVED[f"{_M}:analyse"] = "attnphys.dmft.bifurcation (the orbit diagram with regimes and exponents, as a dataset)"
# attnphys.dmft.analysis
_moved(f"{_M}.analysis", _M, "lyapunov_spectrum")
_moved(f"{_M}.analysis", f"{_M}.tasks", "PAPER_SECTION_PAIRS orbit_spec")
_internal(f"{_M}.analysis", f"{_M}.tasks._evidence", "evidence", "attnphys.dmft.lyapunov_spectrum")
REMOVED[f"{_M}.analysis:analyse"] = REMOVED[f"{_M}:analyse"]
# attnphys.dmft.converge, .finite, .trajectory
_moved(f"{_M}.converge", f"{_M}._api.finite", "converge", "attnphys.dmft.converge(cfg, sizes, sweep={'beta_o': betas})")
_internal(f"{_M}.converge", f"{_M}._convergence", "fitted_slope", "attnphys.dmft.converge")
_moved(f"{_M}.finite", _M, "finite_trajectories")
_moved(f"{_M}.trajectory", _M, "final_windows trajectories")
MOVED[f"{_M}.trajectory:SWEEPABLE"] = MOVED[f"{_M}:SWEEPABLE"]
REMOVED[f"{_M}.trajectory:grid_axes"] = "attnphys.dmft.trajectories(cfg, sweep={name: values})"
# attnphys.dmft.initial: the starts moved to attnphys.dmft.starts
_moved(f"{_M}.initial", f"{_M}.starts", "BaseStart StartSpec start_cache window_start")
_moved(f"{_M}.initial", _M, "WindowStart")
# attnphys.dmft.jobs: the commands
_internal(f"{_M}.jobs", f"{_M}._commands.diagrams", "BifurcationJob PhaseDiagramJob", "attnphys.dmft.bifurcation")
_internal(f"{_M}.jobs", f"{_M}._commands.finite", "ConvergeJob FiniteJob", "attnphys.dmft.finite_trajectories")
_internal(f"{_M}.jobs", f"{_M}._commands.lyapunov", "LyapunovJob", "attnphys.dmft.lyapunov_spectrum")
_internal(f"{_M}.jobs", f"{_M}._commands.trajectory", "TrajectoryJob", "attnphys.dmft.trajectories")
_internal(f"{_M}.jobs", f"{_M}._commands.presets", "PresetsJob", "attnphys.dmft.PRESETS")
_internal(f"{_M}.jobs", f"{_M}._commands._options", "ModelOptions", "attnphys.dmft.DMFTConfig")
_moved(f"{_M}.jobs", _M, "OBSERVABLES")
# attnphys.dmft.meanfield, .tasks: the observables' table
_moved(f"{_M}.meanfield", _M, "OBSERVABLES")
_moved(f"{_M}.meanfield", f"{_M}.observables", "OBSERVABLE_TABLE Observable observe record_mo_se")
_moved(f"{_M}.tasks", f"{_M}.observables", "Observable check_observable")
_moved(f"{_M}.tasks", f"{_M}.config", "check_schedule")
# attnphys.dynamics
MOVED[f"{_D}:Map"] = (f"{_D}:FunctionMap", f"{_D}.FunctionMap (or {_D}.AbstractMap, the interface)")
MOVED[f"{_D}.maps:Map"] = MOVED[f"{_D}:Map"]
MOVED[f"{_D}.orbits:continuation"] = (f"{_D}.orbits:continuation_chains", f"{_D}.continuation_chains")
_moved(f"{_D}.census", _D, "CensusOptions census_batch")
_moved(f"{_D}.census", f"{_D}._census", "census", f"{_D}.census")
_internal(f"{_D}.census", f"{_D}._census", "OUTCOMES combine", f"{_D}.census")
_moved(f"{_D}.lyapunov", _D, "LyapunovResult")
MOVED[f"{_D}.lyapunov:lyapunov"] = (f"{_D}._lyapunov:lyapunov", f"{_D}.lyapunov_spectrum")
_internal(
    f"{_D}.lyapunov",
    f"{_D}._lyapunov",
    "PARALLEL_BITS advance gram_schmidt initial_vectors log_abs_det_average reorthonormalise scaled_norm "
    "sorted_exponents zero_acc",
    f"{_D}.lyapunov_spectrum",
)
REMOVED[f"{_D}.lyapunov:tangent_step"] = f"{_D}.lyapunov_spectrum (the map's own step and jax.jvp)"
_moved(f"{_D}.tracks", f"{_D}._tracks", "tracks", f"{_D}.tracks")
_internal(f"{_D}.tracks", f"{_D}._tracks", "match set_distance", f"{_D}.tracks")
# attnphys.expfam
MOVED["attnphys.expfam:BaseMeasure"] = ("attnphys.expfam:AbstractBaseMeasure", "attnphys.expfam.AbstractBaseMeasure")
# attnphys.plots: figures returned instead of files written
_moved(
    f"{_P}.bifurcation",
    _P,
    "FILTERS Filter REGIME_COLORS bifurcation_figure choose_pair sections_figure",
)
_internal(
    f"{_P}.bifurcation",
    f"{_P}._bifurcation",
    "COUNT_LEVELS NOT_PERIODIC count_labels count_scale dequantise diagram_points draw_diagram draw_exponents "
    "quantise section_pair stored_pairs",
    f"{_P}.bifurcation_figure",
)
_internal(f"{_P}.clouds", f"{_P}._clouds", "PANELS", f"{_P}.clouds_figures")
_internal(f"{_P}.probes", f"{_P}._probes", "SHOWN", f"{_P}.probe_figures")
_moved(f"{_P}.reproduce", _P, "planes_figure series_figure")
_internal(
    f"{_P}.trajectory",
    f"{_P}._trajectory",
    "context_length draw_autocorrelation draw_spectrum memory_text sampling_interval",
    f"{_P}.trajectory_figures",
)
_SAVE = f"{_P}.save_figure({_P}.%s(ds), path)"
REMOVED.update(
    {
        f"{_P}.bifurcation:plot_bifurcation": _SAVE % "bifurcation_figure" + f" and {_P}.sections_figure",
        f"{_P}.clouds:plot_clouds": f"{_P}.clouds_figures(ds) and {_P}.save_figure",
        f"{_P}.clouds:plot_through_model": _SAVE % "through_model_figure",
        f"{_P}.converge:plot_converge": _SAVE % "converge_figure",
        f"{_P}.particles:plot_flow": _SAVE % "flow_figure",
        f"{_P}.particles:plot_phase_diagram": _SAVE % "particles_phase_figure",
        f"{_P}.phase:plot_phase_diagram": _SAVE % "phase_diagram_figure",
        f"{_P}.probes:plot_probe": f"{_P}.probe_figures(ds) and {_P}.save_figure",
        f"{_P}.reproduce:save_both": f"{_P}.save_figure (once per format)",
        f"{_P}.trajectory:plot_trajectory": f"{_P}.trajectory_figures(ds) and {_P}.save_figure",
    }
)
# attnphys.probes
_internal(
    "attnphys.probes.adapters", "attnphys.probes.models", "load_model model_path require_torch", "attnphys.probes.probe"
)
_internal(
    "attnphys.probes.run", "attnphys.probes.jobs", "write_outputs", "the probe command (attnphys probe --out DIR)"
)


def _message(old: str, replacement: str) -> str:
    return f"{old} is deprecated since {SINCE} and will be removed in {UNTIL}: use {replacement}"


def _resolve(target: str) -> Any:
    module, _, attribute = target.partition(":")
    call = attribute.endswith("()")
    value = getattr(importlib.import_module(module), attribute.removesuffix("()"))
    return value() if call else value


def _removed(old: str, replacement: str) -> Callable[..., Any]:
    def removed(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{old} was removed in {SINCE}: use {replacement}")

    removed.__name__ = removed.__qualname__ = old.rpartition(".")[2]
    removed.__doc__ = f"Removed in {SINCE}: use {replacement}."
    return removed


def attribute(module: str, name: str) -> Any:
    """The object that ``module.name`` of 0.2.0 stands for now, with a :class:`DeprecationWarning` (raises
    ``AttributeError`` for a name the table does not know)."""
    key = f"{module}:{name}"
    old = f"{module}.{name}"
    if key in MOVED:
        target, replacement = MOVED[key]
        warnings.warn(_message(old, replacement), DeprecationWarning, stacklevel=3)
        return _resolve(target)
    if key in REMOVED:
        warnings.warn(_message(old, REMOVED[key]), DeprecationWarning, stacklevel=3)
        return _removed(old, REMOVED[key])
    raise AttributeError(f"module {module!r} has no attribute {name!r}")


def module_getattr(module: str) -> Callable[[str], Any]:
    """A module's ``__getattr__`` that answers the names it had in 0.2.0."""

    def __getattr__(name: str) -> Any:
        return attribute(module, name)

    return __getattr__


def extend(module: str, getattr_: Callable[[str], Any]) -> Callable[[str], Any]:
    """A lazily loaded package's ``__getattr__`` that also answers the names it had in 0.2.0."""

    def __getattr__(name: str) -> Any:
        if f"{module}:{name}" in MOVED or f"{module}:{name}" in REMOVED:
            return attribute(module, name)
        return getattr_(name)

    return __getattr__


class _CallableModule(types.ModuleType):
    """A module of 0.2.0 whose name is now a function of its package: importing the module replaces the
    package's attribute with it, so calling it calls the function."""

    __wrapped__: Callable[..., Any]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__wrapped__(*args, **kwargs)


def shim(module: str) -> Callable[[str], Any]:
    """Called by a module of 0.2.0 that is gone: warns on import and returns the module's ``__getattr__``."""
    warnings.warn(_message(f"the module {module}", MODULES[module]), DeprecationWarning, stacklevel=3)
    name = module.rpartition(".")[2]
    if f"{module}:{name}" in MOVED:  # the package's function of the same name
        function = _resolve(MOVED[f"{module}:{name}"][0])
        shim_module = sys.modules[module]
        shim_module.__class__ = _CallableModule
        shim_module.__wrapped__ = function  # type: ignore[attr-defined]
        shim_module.__signature__ = inspect.signature(function)  # type: ignore[attr-defined]
    return module_getattr(module)


_P_ = ParamSpec("_P_")
_R = TypeVar("_R")


def accepts_old_call(
    is_old: Callable[..., bool], old: str, target: str, replacement: str
) -> Callable[[Callable[_P_, _R]], Callable[_P_, _R]]:
    """A function whose name meant another function in 0.2.0: a call in the old form (``is_old(*args,
    **kwargs)``) warns and goes to ``target`` (``module:attribute``)."""

    def decorate(function: Callable[_P_, _R]) -> Callable[_P_, _R]:
        @functools.wraps(function)
        def wrapper(*args: _P_.args, **kwargs: _P_.kwargs) -> _R:
            if is_old(*args, **kwargs):
                warnings.warn(_message(f"{old} in its 0.2.0 form", replacement), DeprecationWarning, stacklevel=2)
                return _resolve(target)(*args, **kwargs)
            return function(*args, **kwargs)

        return wrapper

    return decorate

"""The designed-weights mean-field model: a variant of the DMFT map whose weights are given by a
declarative design instead of random correlations (theory: docs/theory/designed.md).

A design (:class:`DesignSpec`, YAML/TOML/JSON; named presets: :func:`list_designs`) fixes per feature an
order over the M mean-field patterns, their projection onto M_se base patterns and their position codes.
:class:`DesignedConfig` adds β_o, γ, ε and the context length; :class:`DesignedModel` carries the model's
derived state with the interface of :class:`~attnphys.dmft.model.DMFTModel` (scalars, starts, the
trajectory runner, the map of the dynamics toolkit, parameter paths); :func:`cycle_report` says whether a
design produces its intended token cycle, from how many starts, how stably and over which parameter ranges.
"""

from attnphys.dmft.designed._design import (
    FEATURES,
    DesignSpec,
    PerFeature,
    design_from_mapping,
    design_summaries,
    list_designs,
    load_design,
    read_design,
)
from attnphys.dmft.designed._map import (
    OBSERVABLE_TABLE,
    DesignArrays,
    DesignedMap,
    advance,
    base_overlap,
    design_arrays,
    fill,
    overlaps,
    positional_overlap,
    run,
    run_batch,
    semantic_overlap,
    step,
)
from attnphys.dmft.designed._model import (
    BATCHED,
    SWEEPABLE,
    DesignedConfig,
    DesignedModel,
    designed_config,
    token_window,
    trajectories,
)
from attnphys.dmft.designed._report import cycle_figure, cycle_report, emitted_patterns, follows_cycle

__all__ = [
    "FEATURES",
    "DesignSpec",
    "PerFeature",
    "design_from_mapping",
    "design_summaries",
    "list_designs",
    "load_design",
    "read_design",
    "OBSERVABLE_TABLE",
    "DesignArrays",
    "DesignedMap",
    "advance",
    "base_overlap",
    "design_arrays",
    "fill",
    "overlaps",
    "positional_overlap",
    "run",
    "run_batch",
    "semantic_overlap",
    "step",
    "BATCHED",
    "SWEEPABLE",
    "DesignedConfig",
    "DesignedModel",
    "designed_config",
    "token_window",
    "trajectories",
    "cycle_figure",
    "cycle_report",
    "emitted_patterns",
    "follows_cycle",
]

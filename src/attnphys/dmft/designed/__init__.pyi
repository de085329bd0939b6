"""Type stub of the lazily loaded package: the one list of its public names."""

from ._config import DesignedConfig, designed_config
from ._design import DesignSpec, design_summaries, list_designs, load_design, read_design
from ._map import DesignedMap
from ._model import DesignedModel
from ._moved import cycle_figure  # deprecated: attnphys.plots.cycle_figure
from ._report import cycle_report, emitted_patterns, follows_cycle

__all__ = [
    "DesignSpec",
    "DesignedConfig",
    "DesignedMap",
    "DesignedModel",
    "cycle_figure",
    "cycle_report",
    "design_summaries",
    "designed_config",
    "emitted_patterns",
    "follows_cycle",
    "list_designs",
    "load_design",
    "read_design",
]

"""Figures of every result of the library (matplotlib object API: no pyplot, no backend switch).

Every function takes a result dataset and returns a :class:`matplotlib.figure.Figure`. One signature: the
dataset and what to draw (positional or keyword), then keyword-only where to draw: ``fig=`` (a Figure or a
SubFigure of a larger one) for figures of several panels, ``ax=`` (an Axes) for single-panel figures
(:func:`cycle_figure`, :func:`particles_phase_figure`); the Figure drawn into is returned either way.
Functions named ``…_figures`` return several figures by name. Writing a file is the caller's choice:
:func:`save_figure` writes one atomically::

    from attnphys.plots import bifurcation_figure, save_figure
    save_figure(bifurcation_figure(ds), "bif.png")

Titles name the configuration by its nearest preset and every field that differs (the correlation seed
included) and carry the warnings recorded in the result; axes are labelled from the coordinates' CF
``long_name``.
"""

from attnphys.plots._attractors import attractors_figure, basins_figure, track_colors
from attnphys.plots._bifurcation import (
    FILTERS,
    REGIME_COLORS,
    Filter,
    bifurcation_figure,
    choose_pair,
    sections_figure,
)
from attnphys.plots._boundary import boundary_figure
from attnphys.plots._clouds import (
    clouds_figures,
    clouds_snapshots_figure,
    clouds_statistics_figure,
    through_model_figure,
)
from attnphys.plots._common import check_component, config_title, save_figure
from attnphys.plots._compare import compare_diagrams_figure, portraits_figure
from attnphys.plots._converge import converge_figure
from attnphys.plots._designed import cycle_figure
from attnphys.plots._edge import edge_figure
from attnphys.plots._figure import Figure, new_figure
from attnphys.plots._fluctuations import fluctuations_figure
from attnphys.plots._particles import flow_figure, particles_phase_figure
from attnphys.plots._phase import phase_diagram_figure
from attnphys.plots._probes import heads_figure, mlp_norms_figure, probe_figures, stages_figure, temperatures_figure
from attnphys.plots._reproduce import planes_figure, series_figure
from attnphys.plots._switching import switching_figure, switching_path_figure
from attnphys.plots._trajectory import (
    spectrum_figure,
    timeseries_figure,
    trajectory_figures,
    trajectory_planes_figure,
)

__all__ = [
    "FILTERS",
    "Figure",
    "Filter",
    "REGIME_COLORS",
    "attractors_figure",
    "basins_figure",
    "bifurcation_figure",
    "boundary_figure",
    "check_component",
    "choose_pair",
    "clouds_figures",
    "edge_figure",
    "clouds_snapshots_figure",
    "clouds_statistics_figure",
    "compare_diagrams_figure",
    "config_title",
    "converge_figure",
    "cycle_figure",
    "flow_figure",
    "fluctuations_figure",
    "heads_figure",
    "mlp_norms_figure",
    "new_figure",
    "particles_phase_figure",
    "phase_diagram_figure",
    "planes_figure",
    "portraits_figure",
    "probe_figures",
    "save_figure",
    "sections_figure",
    "series_figure",
    "spectrum_figure",
    "stages_figure",
    "switching_figure",
    "switching_path_figure",
    "temperatures_figure",
    "through_model_figure",
    "timeseries_figure",
    "track_colors",
    "trajectory_figures",
    "trajectory_planes_figure",
]

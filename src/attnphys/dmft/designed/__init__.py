"""The designed-weights mean-field model: a variant of the DMFT map whose weights are given by a
declarative design instead of random correlations (theory: docs/theory/designed.md).

A design (:class:`DesignSpec`, YAML/TOML/JSON; named presets: :func:`list_designs`) fixes per feature an
order over the M mean-field patterns, their projection onto M_se base patterns and their position codes.
:class:`DesignedConfig` (:func:`designed_config`) adds β_o, γ, ε and the context length; every analysis of
:mod:`attnphys.dmft` takes it in place of a :class:`~attnphys.dmft.DMFTConfig` (trajectories, Lyapunov
spectra, diagrams over β_o, γ or ε, censuses, basins, continuation), through :class:`DesignedModel`, which
has the interface of :class:`~attnphys.dmft.DMFTModel`. :func:`cycle_report` says whether a design produces
its intended token cycle, from how many starts, how stably and over which parameter ranges.
"""

# The names are loaded on first use (the stub ``__init__.pyi`` lists them): the command line reads designs
# and their configuration without loading the numerical engine.
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)

"""The DMFT analyses as functions: each composes a model, a sweep task and a grid once and returns a labelled
``xarray.Dataset`` (theory: docs/theory/dmft.md; docs/theory/sweeps.md §3). The commands, the reproductions,
the demo and the benchmarks call these functions; :mod:`attnphys.dmft` re-exports them."""

"""The ``attnphys dmft …`` commands, one file per command or pair of commands, each a job that parses its
options, calls one analysis of :mod:`attnphys.dmft` and writes (theory: docs/theory/sweeps.md §5). They
register through the ``attnphys.commands`` entry points."""

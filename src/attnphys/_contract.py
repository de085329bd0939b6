"""The names of the result contract: what every result, sweep store and output folder of attnphys carries
(theory: docs/theory/sweeps.md §5). A light module: the command line reads these names without loading the
writers of :mod:`attnphys.io`."""

COMPLETE = "attnphys_complete"
"""Dataset attribute set (to 1) on every completely written result."""

COMMAND = "attnphys_command"
"""Dataset attribute (and marker-file key) naming the command that wrote a result."""

JOB = "attnphys_job"
"""Dataset attribute (and marker-file key) holding the JSON of the job that wrote a result (for ``rerun``)."""

GIVEN = "attnphys_given"
"""Dataset attribute (and marker-file key) listing the options the user gave (the others were defaults)."""

VERSION = "attnphys_version"
"""Dataset attribute (and marker-file key) holding the package version that wrote a result."""

MARKER = ".attnphys-output.json"
"""Marker file inside an output folder (probe reports, reproductions): its command and completion."""

CONTENTS = "contents"
"""Marker-file key listing the entries the result wrote into its folder (``--overwrite`` replaces a folder
only while it holds nothing else)."""

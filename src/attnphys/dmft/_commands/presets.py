"""``attnphys dmft presets``: the named configurations (theory: docs/theory/dmft.md §8)."""

from __future__ import annotations

import json
from typing import ClassVar

from attnphys.dmft.config import PRESETS
from attnphys.jobs import AbstractJob, Report, register_job


@register_job
class PresetsJob(AbstractJob):
    """List the named configurations."""

    command: ClassVar[str] = "dmft presets"
    outputs_spec: ClassVar[dict[str, str]] = {}

    def execute(self, progress: bool = True) -> Report:
        return Report("DMFT presets", {name: json.dumps(fields) for name, fields in PRESETS.items()})

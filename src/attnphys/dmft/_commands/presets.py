"""``attnphys dmft presets`` and ``attnphys dmft designs``: the named configurations and designs (theory:
docs/theory/dmft.md §8; docs/theory/designed.md §2)."""

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


@register_job
class DesignsJob(AbstractJob):
    """List the shipped designs of the designed-weights model (use one with --design NAME; theory:
    docs/theory/designed.md §2)."""

    command: ClassVar[str] = "dmft designs"
    outputs_spec: ClassVar[dict[str, str]] = {}

    def execute(self, progress: bool = True) -> Report:
        from attnphys.dmft.designed import design_summaries

        rows = {}
        for d in design_summaries():
            cycle = " → ".join(map(str, d["cycle"])) if d["cycle"] else "none given"
            rows[d["name"]] = f"M_se = {d['m_se']}, M = {d['M']}, P = {d['P']}; cycle {cycle}. {d['description'] or ''}"
        return Report("designs", rows)

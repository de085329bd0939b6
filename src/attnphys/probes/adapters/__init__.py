"""Architecture adapters, one class per family over :class:`AbstractAdapter`
(theory: docs/theory/probes.md §2); loading by name is :mod:`attnphys.probes.models`. Adding a family: one file here and one line in :data:`ADAPTERS`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnphys import _deprecated
from attnphys.probes.adapters._base import POST_LN_STAGES, PRE_LN_STAGES, AbstractAdapter, HeadWeights
from attnphys.probes.adapters.bert import BertAdapter
from attnphys.probes.adapters.gpt2 import GPT2Adapter
from attnphys.probes.adapters.llama import LlamaAdapter

ADAPTERS: dict[str, AbstractAdapter] = {a.family: a for a in (BertAdapter(), GPT2Adapter(), LlamaAdapter())}
"""One adapter per family: ``bert``, ``gpt2``, ``llama``."""

FAMILY_OF_MODEL_TYPE = {t: a.family for a in ADAPTERS.values() for t in a.model_types}


def adapter_for(model) -> AbstractAdapter:
    """The adapter of a loaded model (by ``config.model_type``); a clear error for other families."""
    mt = model.config.model_type
    fam = FAMILY_OF_MODEL_TYPE.get(mt)
    if fam is None:
        known = "; ".join(f"{a.family} ({', '.join(a.model_types)})" for a in ADAPTERS.values())
        raise ValueError(f"model type {mt!r} is not supported; supported families: {known}")
    return ADAPTERS[fam]


__all__ = [
    "ADAPTERS",
    "FAMILY_OF_MODEL_TYPE",
    "AbstractAdapter",
    "BertAdapter",
    "GPT2Adapter",
    "LlamaAdapter",
    "HeadWeights",
    "POST_LN_STAGES",
    "PRE_LN_STAGES",
    "adapter_for",
]

if not TYPE_CHECKING:  # the names of 0.2.0 that moved, with a deprecation warning
    __getattr__ = _deprecated.module_getattr(__name__)

"""Architecture adapters, one class per family over :class:`AbstractAdapter`
(theory: docs/theory/probes.md §2); loading by name is :mod:`attnphys.probes.models`. Adding a family: one file here and one line in :data:`ADAPTERS`.
A model type no named adapter claims is read by :class:`~attnphys.probes.adapters.generic.GenericAdapter`
(family ``generic``; theory: docs/theory/adapters.md §2)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnphys import _deprecated
from attnphys.probes.adapters._base import POST_LN_STAGES, PRE_LN_STAGES, AbstractAdapter, HeadWeights
from attnphys.probes.adapters.bert import BertAdapter
from attnphys.probes.adapters.generic import GENERIC, GenericAdapter, GenericAdapterWarning, generic_adapter
from attnphys.probes.adapters.gpt2 import GPT2Adapter
from attnphys.probes.adapters.llama import LlamaAdapter

ADAPTERS: dict[str, AbstractAdapter] = {a.family: a for a in (BertAdapter(), GPT2Adapter(), LlamaAdapter())}
"""One adapter per family: ``bert``, ``gpt2``, ``llama``."""

FAMILY_OF_MODEL_TYPE = {t: a.family for a in ADAPTERS.values() for t in a.model_types}


def adapter_for(model) -> AbstractAdapter:
    """The adapter of a loaded model: the named adapter of its ``config.model_type``, else the generic
    adapter (family ``generic``, with a :class:`GenericAdapterWarning`), which reads any model whose layers
    follow the adapters' contract (theory: docs/theory/adapters.md §1, §2).

    Raises:
        InputError (a ValueError): a model type no named adapter claims and the generic adapter cannot read,
            naming what it could not find (docs/theory/adapters.md §3).
    """
    from attnphys.errors import InputError

    mt = model.config.model_type
    fam = FAMILY_OF_MODEL_TYPE.get(mt)
    if fam is not None:
        return ADAPTERS[fam]
    try:
        return generic_adapter(model)
    except InputError as e:
        known = "; ".join(f"{a.family} ({', '.join(a.model_types)})" for a in ADAPTERS.values())
        raise InputError(f"model type {mt!r} is not supported by a named adapter ({known}), and {e.detail}") from None


__all__ = [
    "ADAPTERS",
    "FAMILY_OF_MODEL_TYPE",
    "AbstractAdapter",
    "BertAdapter",
    "GENERIC",
    "GenericAdapter",
    "GenericAdapterWarning",
    "generic_adapter",
    "GPT2Adapter",
    "LlamaAdapter",
    "HeadWeights",
    "POST_LN_STAGES",
    "PRE_LN_STAGES",
    "adapter_for",
]

if not TYPE_CHECKING:  # the names of 0.2.0 that moved, with a deprecation warning
    __getattr__ = _deprecated.module_getattr(__name__)

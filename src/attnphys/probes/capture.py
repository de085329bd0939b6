"""Capturing every stage of every layer of a real transformer on a text batch
(theory: docs/theory/probes.md §1, §3.1). torch is imported only when capturing."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from attnphys.errors import InputError
from attnphys.probes.adapters import AbstractAdapter, adapter_for
from attnphys.probes.adapters._base import set_attn_implementation


def builtin_corpus() -> list[str]:
    """The project's corpus: a few hundred varied English sentences (``attnphys/data/corpus.txt``)."""
    text = resources.files("attnphys").joinpath("data/corpus.txt").read_text(encoding="utf-8")
    return [s.strip() for s in text.splitlines() if s.strip()]


MIN_SENTENCES = 2
"""Fewest sentences a probe accepts: the MLP fit is validated on held-out sentences."""


MAX_TEXT_BYTES = 16 << 20
"""Largest text file a probe reads (16 MiB, some 100,000 sentences; ``/dev/zero`` never ends)."""


def read_text(path: str | Path, option: str = "--text") -> list[str]:
    """One sentence per non-empty line of a UTF-8 text file.

    Raises:
        InputError: naming ``option`` and the file: missing, not a regular file (a folder, a device, a
            named pipe), larger than :data:`MAX_TEXT_BYTES`, not UTF-8 text (binary), or fewer than
            :data:`MIN_SENTENCES` sentences.
    """
    from attnphys._files import read_input

    path, raw = read_input(path, option, "a text file with one sentence per line", MAX_TEXT_BYTES)
    try:
        if b"\x00" in raw:
            raise UnicodeDecodeError("utf-8", raw, raw.index(b"\x00"), raw.index(b"\x00") + 1, "NUL byte")
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"{path} is not a UTF-8 text file (byte {e.start}: {e.reason}); give one sentence per line", option
        ) from None
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}", option) from None
    lines = [s.strip() for s in text.splitlines() if s.strip()]
    if len(lines) < MIN_SENTENCES:
        raise InputError(
            f"{path} holds {len(lines)} sentence{'s' if len(lines) != 1 else ''}; the probes need at least "
            f"{MIN_SENTENCES} (one per line: the MLP fit is validated on held-out sentences)",
            option,
        )
    return lines


def _first(x):
    return x[0] if isinstance(x, (tuple, list)) else x


@dataclass
class Capture:
    """Hidden states of the real tokens of every sentence, stacked over sentences, in the model's own
    precision (float32 for the models of the probes).

    stages: {(layer, stage): (T, D)}. sentence, position: (T,) int (position: index of the token in its
    sentence, 0 first; the rotary positions). token_ids: (T,) int, the tokenizer's ids. special: (T,) bool
    (tokenizer special tokens: [CLS]/[SEP]/BOS/EOS). sink: (T,) bool, the massive-norm positions
    (:func:`attnphys.probes.sinks.find_sinks`; theory: docs/theory/probes.md §3.7). attentions: per layer,
    a list of (H, n, n) attention weights per sentence (the model's own: causal mask, sliding window and
    rotary positions included). final: (T, D) model output. windows: per layer the sliding window of the
    attention or None. truncated: how many sentences were cut at ``max_length`` tokens. attn_implementation:
    the attention implementation the model was loaded with (``config._attn_implementation``; ``""`` when the
    model does not say); attn_captured: the one the capture ran (``eager`` where the loaded one returns no
    weights; theory: docs/theory/probes.md §1.1).
    """

    adapter: AbstractAdapter
    stages: dict
    sentence: np.ndarray
    position: np.ndarray
    special: np.ndarray
    attentions: list = field(default_factory=list)
    final: np.ndarray | None = None
    n_layers: int = 0
    token_ids: np.ndarray | None = None
    sink: np.ndarray | None = None
    windows: list = field(default_factory=list)
    truncated: int = 0
    max_length: int = 0
    attn_implementation: str = ""
    attn_captured: str = ""

    def get(self, layer: int, stage: str, drop_special: bool = False) -> np.ndarray:
        X = self.stages[(layer, stage)]
        return X[~self.special] if drop_special else X

    @property
    def sinks(self) -> np.ndarray:
        """(T,) bool: the massive-norm positions (all False when none were looked for)."""
        return np.zeros(self.sentence.size, bool) if self.sink is None else self.sink

    @property
    def lengths(self) -> np.ndarray:
        """(S,) tokens per sentence, in order."""
        return np.bincount(self.sentence - self.sentence.min()) if self.sentence.size else np.zeros(0, int)

    def sentences(self):
        """(start, stop) of every sentence's tokens in the stacked arrays."""
        ends = np.cumsum(self.lengths)
        return list(zip(np.concatenate([[0], ends[:-1]]).tolist(), ends.tolist()))


MAX_LENGTH = 64
"""Tokens per sentence kept by default (longer sentences are cut, with a :class:`TruncationWarning`)."""


WEIGHTLESS_NOTE = (
    "its attention kernel does not return the attention weights; the capture runs the model with transformers' "
    "eager attention (the same function of the same weights) and restores the loaded one afterwards"
)


def attn_implementation(model) -> str:
    """The attention implementation a loaded transformers model runs (``eager``, ``sdpa``,
    ``flash_attention_2`` …: ``config._attn_implementation``), ``""`` for a model that does not say
    (theory: docs/theory/probes.md §1.1)."""
    impl = getattr(getattr(model, "config", None), "_attn_implementation", None)
    return impl if isinstance(impl, str) else ""


def max_positions(model) -> int | None:
    """The most positions the model can embed (its adapter's :meth:`~AbstractAdapter.max_positions`), None
    when the model does not say; the largest ``max_length`` a capture accepts (theory:
    docs/theory/probes.md §1.1)."""
    try:
        return adapter_for(model).max_positions(model)
    except ValueError:
        return None


def capture(
    model,
    tokenizer,
    sentences: list[str],
    batch_size: int = 64,
    max_length: int = MAX_LENGTH,
    keep_attentions: bool = True,
    log=None,
) -> Capture:
    """Run ``model`` on ``sentences`` with forward hooks at every stage of every layer
    (theory: docs/theory/probes.md §1, §1.1). Sentences are padded on the right, so that a sentence's tokens
    sit at positions 0 … n−1 whatever the batch (rotary and causal models). A model with a head
    (``LlamaForCausalLM``, ``GPT2LMHeadModel`` …) is read through its base model. Sentences longer than
    ``max_length`` tokens are cut there, with a :class:`~attnphys.probes._warnings.TruncationWarning` naming
    how many (and a line through ``log`` when given); the sink positions are found at the end
    (:func:`attnphys.probes.sinks.find_sinks`).

    The attention weights P = softmax(q·k/√d_h + masks) are the model's own: a model loaded with a kernel
    that does not return them (transformers' default ``sdpa``, ``flash_attention_2``) is run with the
    ``eager`` attention for the capture, with an
    :class:`~attnphys.probes._warnings.AttentionImplementationWarning`, and switched back afterwards
    (``Capture.attn_implementation``, ``Capture.attn_captured`` say which ran).

    Raises:
        InputError: ``max_length`` below 2 or beyond the model's positions (:func:`max_positions`); a model
            that returns no attention weights even with the eager attention (field ``model``).
    """
    import warnings

    import torch

    from attnphys.errors import find_stack_level
    from attnphys.probes._warnings import AttentionImplementationWarning, TruncationWarning
    from attnphys.probes.adapters._base import base_model
    from attnphys.probes.sinks import find_sinks

    if int(max_length) < 2:
        raise InputError(f"max_length must be at least 2 tokens, not {max_length}", "max_length")
    limit = max_positions(model)
    if limit is not None and int(max_length) > limit:
        raise InputError(
            f"max_length = {max_length} tokens is beyond the {limit} positions this model embeds "
            f"(its config's maximum positions); give at most {limit}",
            "max_length",
        )
    loaded = attn_implementation(model)
    switch = bool(keep_attentions) and loaded not in ("", "eager")
    if switch:
        msg = f"the model was loaded with attn_implementation={loaded!r}: {WEIGHTLESS_NOTE}"
        warnings.warn(msg, AttentionImplementationWarning, stacklevel=find_stack_level())
        if log is not None:
            log(f"warning: {msg}")
        set_attn_implementation(model, "eager")
    side = getattr(tokenizer, "padding_side", None)
    if side not in (None, "right"):
        tokenizer.padding_side = "right"
    try:
        with torch.no_grad():
            cap = _capture(
                torch, model, base_model(model), tokenizer, sentences, batch_size, max_length, keep_attentions
            )
    finally:
        if side not in (None, "right"):
            tokenizer.padding_side = side
        if switch:
            set_attn_implementation(model, loaded)
    cap.attn_implementation = loaded
    cap.attn_captured = attn_implementation(model) if not switch else "eager"
    if cap.truncated:
        msg = (
            f"{cap.truncated} of {len(sentences)} sentences are longer than max_length = {max_length} tokens and "
            "were cut there; raise max_length to keep them whole"
        )
        warnings.warn(msg, TruncationWarning, stacklevel=find_stack_level())
        if log is not None:
            log(f"warning: {msg}")
    cap.sink = find_sinks(cap)["sink"]
    return cap


def _n_tokens(tokenizer, batch) -> np.ndarray | None:
    """Tokens per sentence without truncation, or None when the tokenizer cannot say."""
    try:
        enc = tokenizer(batch, padding=True, truncation=False, return_tensors="pt")
    except TypeError:
        return None
    return enc["attention_mask"].sum(1).numpy()


def _check_weights(attentions, n_layers: int, model) -> None:
    """Refuse a forward pass that returned no attention weights (never an empty or zero capture)."""
    got = 0 if attentions is None else sum(a is not None for a in attentions)
    if got != n_layers:
        raise InputError(
            f"the model returned attention weights for {got} of its {n_layers} layers with "
            f"output_attentions=True (attention implementation {attn_implementation(model) or 'unknown'!r}); "
            "load it with attn_implementation='eager'",
            "model",
        )


def _capture(torch, model, body, tokenizer, sentences, batch_size, max_length, keep_attentions) -> Capture:
    ad = adapter_for(model)
    layers = ad.layers(model)
    store: dict = {}
    handles = []

    def make(key, where):
        if where == "in":

            def pre(mod, args, kwargs):
                store[key] = (args[0] if args else kwargs["hidden_states"]).detach()

            return pre

        def post(mod, args, out):
            store[key] = _first(out).detach()

        return post

    for i, layer in enumerate(layers):
        for stage, (mod, where) in ad.hooks(layer).items():
            fn = make((i, stage), where)
            handles.append(
                mod.register_forward_pre_hook(fn, with_kwargs=True) if where == "in" else mod.register_forward_hook(fn)
            )
    chunks: dict = {k: [] for k in ((i, s) for i in range(len(layers)) for s in ad.stages)}
    sent, pos, special, final, ids, atts = [], [], [], [], [], [[] for _ in layers]
    truncated = 0
    try:
        for lo in range(0, len(sentences), batch_size):
            batch = sentences[lo : lo + batch_size]
            enc = tokenizer(
                batch,
                return_tensors="pt",
                padding=True,
                truncation=True,
                max_length=max_length,
                return_special_tokens_mask=True,
            )
            stm = enc.pop("special_tokens_mask")
            mask = enc["attention_mask"].bool()
            if int(mask.sum(1).max()) >= max_length:  # possibly cut: count the sentences that were longer
                full = _n_tokens(tokenizer, batch)
                truncated += int((full > max_length).sum()) if full is not None else 0
            out = body(**enc, output_attentions=keep_attentions)
            if keep_attentions:
                _check_weights(out.attentions, len(layers), model)
            for key in chunks:  # the real tokens of every sentence of the batch, in order, at once
                chunks[key].append(store[key][mask].float().numpy())
            final.append(out.last_hidden_state[mask].float().numpy())
            special.append(stm[mask].bool().numpy())
            ids.append(enc["input_ids"][mask].numpy())
            m_np = mask.numpy()
            weights = [a.float().numpy() for a in out.attentions] if keep_attentions else []
            for b in range(len(batch)):
                idx = np.flatnonzero(m_np[b])
                sent.append(np.full(idx.size, lo + b))
                pos.append(np.arange(idx.size))
                for i, a in enumerate(weights):
                    atts[i].append(np.ascontiguousarray(a[b][:, idx][:, :, idx]))
    finally:
        for h in handles:
            h.remove()
    return Capture(
        adapter=ad,
        stages={k: np.concatenate(v) for k, v in chunks.items()},
        sentence=np.concatenate(sent),
        position=np.concatenate(pos),
        special=np.concatenate(special),
        attentions=atts if keep_attentions else [],
        final=np.concatenate(final),
        n_layers=len(layers),
        token_ids=np.concatenate(ids).astype(np.int64),
        windows=ad.windows(model),
        truncated=truncated,
        max_length=int(max_length),
    )

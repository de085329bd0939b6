"""The warnings of the probes (theory: docs/theory/probes.md §1.1, §3.4): each one a subclass of
:class:`ProbeWarning`, so that a caller can silence or raise exactly one kind
(``warnings.simplefilter("error", TruncationWarning)``). Raised with
``stacklevel=attnphys.errors.find_stack_level()``: the warning points at the caller's line."""

from __future__ import annotations


class ProbeWarning(UserWarning):
    """Base of the warnings of :mod:`attnphys.probes`: a result that is computed, but on less than was asked."""


class TruncationWarning(ProbeWarning):
    """Sentences longer than ``max_length`` tokens were cut there: their tail is in no statistic
    (theory: docs/theory/probes.md §1.1). The count is also the dataset's ``n_truncated``."""


class AttentionImplementationWarning(ProbeWarning):
    """The model was loaded with an attention kernel that does not return its weights (``sdpa``,
    ``flash_attention_2``, …); the capture ran it with transformers' ``eager`` attention instead, the same
    function of the same weights (theory: docs/theory/probes.md §1.1)."""


class UnderdeterminedFitWarning(ProbeWarning):
    """A least-squares fit has fewer training samples than parameters per output: its solution is the
    ridge-regularised one, and its held-out score says little about the map (theory:
    docs/theory/probes.md §3.4)."""


__all__ = ["ProbeWarning", "TruncationWarning", "AttentionImplementationWarning", "UnderdeterminedFitWarning"]

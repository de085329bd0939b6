"""Control models of a trained transformer: the same architecture without what training put in the
weights (theory: docs/theory/probes.md §4.2). torch is imported only when building one.

* ``random`` — every weight drawn again as the family initialises it: matrices and embeddings
  i.i.d. N(0, σ²) with σ the config's ``initializer_range``, normalization gains 1, biases 0;
* ``shuffled`` — the entries of every weight tensor permuted at random within the tensor: each tensor
  keeps its values (scale, distribution, outliers), their arrangement is lost.

Buffers (rotary frequencies, position ids) are kept: they are architecture, not training.
"""

from __future__ import annotations

import copy

from attnphys.errors import InputError

CONTROLS = ("random", "shuffled")
"""The control models a probe can run beside the trained one."""


def control_model(model, kind: str, seed: int = 0):
    """A copy of ``model`` with the weights of the control ``kind`` (:data:`CONTROLS`), seeded; the
    original is not touched.

    Raises:
        InputError: ``kind`` is not in :data:`CONTROLS` (field ``control``).
    """
    import torch

    if kind not in CONTROLS:
        raise InputError(f"unknown control {kind!r}; choose from {', '.join(CONTROLS)}", "control")
    twin = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(int(seed))
    std = float(getattr(model.config, "initializer_range", 0.02))
    with torch.no_grad():
        for name, p in twin.named_parameters():
            if kind == "shuffled":
                flat = p.detach().reshape(-1)
                p.copy_(flat[torch.randperm(flat.numel(), generator=gen)].reshape(p.shape))
            elif name.endswith("bias"):
                p.zero_()
            elif p.ndim == 1:  # normalization gains
                p.fill_(1.0)
            else:
                p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * std)
    return twin.eval()


__all__ = ["CONTROLS", "control_model"]

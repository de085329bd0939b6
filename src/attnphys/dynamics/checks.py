"""Plain-Python checks around the jitted cores: non-finite results become errors naming the step and the
parameters, and single precision is warned about (theory: docs/theory/dynamics.md §2.3)."""

from __future__ import annotations

import warnings
from typing import Any

import jax
import jax.core
import jax.numpy as jnp
import numpy as np

from attnphys.errors import NonFiniteError, PrecisionWarning, find_stack_level


def is_traced(x: Any) -> bool:
    """True if any leaf of ``x`` is a JAX tracer: inside ``jit``/``vmap`` non-finite values are only
    reported, not raised (theory: docs/theory/dynamics.md §2.3)."""
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(x))


def params_dict(params: Any, index: int | None = None) -> dict:
    """A readable {name: value} of a parameter pytree (lane ``index`` of a batched one), for the error
    messages of non-finite results (theory: docs/theory/dynamics.md §2.3)."""
    if params is None:
        return {}
    if index is not None:
        params = jax.tree_util.tree_map(lambda a: np.asarray(a)[index] if np.ndim(a) else a, params)
    if hasattr(params, "_asdict"):
        items = params._asdict().items()
    elif isinstance(params, dict):
        items = params.items()
    else:
        leaves = jax.tree_util.tree_leaves(params)
        items = [("params" if len(leaves) == 1 else f"params[{i}]", v) for i, v in enumerate(leaves)]
    out = {}
    for k, v in items:
        if is_traced(v):
            out[k] = "<traced>"
            continue
        a = np.asarray(v)
        out[k] = a.item() if a.size == 1 else np.array2string(a.ravel()[:8], precision=6, separator=",")
    return out


def raise_if_nonfinite(step, params: Any = None, what: str = "state", batched: bool = False) -> None:
    """Raise :class:`attnphys.errors.NonFiniteError` when ``step`` (the first non-finite step, −1: none;
    a scalar, or one per lane when ``batched``) marks a non-finite value; the error names the earliest
    step and the parameters of its lane (theory: docs/theory/dynamics.md §2.3)."""
    step = np.atleast_1d(np.asarray(step))
    bad = np.flatnonzero(step >= 0)
    if bad.size == 0:
        return
    i = int(bad[np.argmin(step[bad])])
    raise NonFiniteError(
        step=int(step[i]), params=params_dict(params, i if batched else None), count=int(bad.size), what=what
    )


def warn_if_single_precision(x: Any) -> None:
    """Warn (:class:`attnphys.errors.PrecisionWarning`) when float64 is off: the dynamics toolkit's
    tolerances (periods to 1e-8, Newton to machine precision) assume it (theory: docs/theory/dynamics.md §2.2)."""
    dtype = jnp.result_type(*jax.tree_util.tree_leaves(x)) if jax.tree_util.tree_leaves(x) else None
    x64 = jax.config.jax_enable_x64  # pyright: ignore[reportAttributeAccessIssue]
    if not x64 or (dtype is not None and jnp.issubdtype(dtype, jnp.floating) and jnp.finfo(dtype).bits < 64):
        warnings.warn(
            "the dynamics toolkit runs in single precision: call attnphys.configure() first (float64)",
            PrecisionWarning,
            stacklevel=find_stack_level(),
        )


def state_dim(m: Any, params: Any, x0: Any = None) -> int:
    """The state dimension D of a map: the last axis of ``x0`` when given, else the shape of one sampled
    state (:func:`jax.eval_shape`: traced, never run); 1 when neither tells (theory: docs/theory/dynamics.md
    §2.5). Used by the memory rules of the entry checks, before anything is compiled."""
    if x0 is not None and np.ndim(x0) >= 1:
        return int(np.shape(x0)[-1])
    try:
        shape = jax.eval_shape(lambda k: m.sample_states(k, 1, params)[0], jax.random.PRNGKey(0)).shape
        return max(1, int(np.prod(shape[1:])))
    except Exception:
        return 1


def memory_of(need: float, what: str, hint: str, args: dict, *names: str) -> tuple[float, str, str, str]:
    """``(bytes, what, hint, argument)`` for :func:`attnphys._arguments.checked`'s memory rule: the argument
    blamed is the largest of ``names`` (the size the user made too large) (theory: docs/theory/dynamics.md
    §2.5)."""
    vals: dict[str, int] = {n: int(v) for n in names if isinstance(v := args.get(n), (int, np.integer))}
    field = max(vals, key=vals.__getitem__) if vals else names[0]
    return float(need), what, hint, field

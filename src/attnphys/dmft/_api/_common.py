"""What the DMFT analyses share: reading a ``sweep`` mapping into grid axes, by the configuration's one list
of sweepable fields (theory: docs/theory/sweeps.md §1)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import ValidationError

from attnphys.dmft._variant import AbstractConfig
from attnphys.dmft.config import check_sweepable
from attnphys.errors import InputError

Sweep = Mapping[str, Sequence[float] | np.ndarray]
"""A sweep: configuration field → its values (an outer-product grid, dims in the given order). Fields: any of
:func:`~attnphys.dmft.config.sweepable_fields` (``seed``: the correlations' seed)."""

Executor = Literal["inprocess", "processes", "dask"]

Config = AbstractConfig
"""A model's configuration, of any registered variant (:func:`~attnphys.dmft.variant_names`): the paper's
network (:class:`~attnphys.dmft.DMFTConfig`), a designed one (:class:`~attnphys.dmft.designed.DesignedConfig`)
or an outside package's; every analysis takes any of them and runs the model its class names."""


def sweep_axes(sweep: Sweep | None, *, allowed: Sequence[str] | None = None, count: int | None = None, what: str = ""):
    """The grid axes of ``sweep`` (validated names and values, in the given order).

    Args:
        allowed: the fields this analysis may sweep (default: every sweepable configuration field).
        count: the number of swept fields the analysis needs (e.g. one for a bifurcation diagram).
        what: the analysis, for messages.

    Raises:
        InputError: naming the field: not sweepable, no values, values not numbers, or the wrong count.
    """
    from attnphys.errors import short_repr
    from attnphys.sweeps import Axis

    if sweep is not None and not isinstance(sweep, Mapping):
        raise InputError(
            f"must be a mapping of field to values, such as {{'beta_o': [1.0, 1.5]}}, got {short_repr(sweep)}",
            "sweep",
        )
    sweep = dict(sweep or {})
    for name in sweep:
        if not isinstance(name, str):
            raise InputError(f"its keys must be field names (text), got {short_repr(name)}", "sweep")
    if count is not None and len(sweep) != count:
        raise InputError(
            f"{what or 'this analysis'} sweeps exactly {count} field{'s' if count != 1 else ''}, got "
            f"{len(sweep)} ({', '.join(sweep) or 'none'})",
            "sweep",
        )
    axes = []
    for name, values in sweep.items():
        if allowed is not None:  # else the configuration's own rules check the name with the values
            try:
                check_sweepable(name, allowed)
            except ValueError as e:
                raise InputError(str(e), name) from None
        try:
            v = np.atleast_1d(np.asarray(values, dtype=np.float64))
        except (TypeError, ValueError):
            raise InputError(f"the values of {name} must be numbers, got {values!r}", name) from None
        if v.ndim != 1 or v.size == 0:
            raise InputError(f"a sweep over {name} needs a non-empty list of values", name)
        try:
            axes.append(Axis(name=name, values=tuple(float(x) for x in v)))
        except ValidationError as e:
            raise InputError(e.errors()[0]["msg"].removeprefix("Value error, "), name) from None
    return tuple(axes)


def sweep_where(options: Any, **kw: Any) -> dict[str, Any]:
    """Where an analysis' sweep runs and is stored (the ``store``, ``overwrite``, ``executor``, ``workers``,
    ``scheduler`` of its options model, those it has), with ``kw`` (e.g. ``chunk``, ``seed``), as keywords of
    :func:`~attnphys.sweeps.run_task` (theory: docs/theory/sweeps.md §4)."""
    names = ("store", "overwrite", "chunk", "executor", "workers", "scheduler")
    return {**{n: getattr(options, n) for n in names if n in type(options).model_fields}, **kw}

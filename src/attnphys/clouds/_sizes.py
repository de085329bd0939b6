"""Bytes of the arrays of the clouds' analyses as functions of their sizes, and the rule that names the size to
blame when they cannot fit (theory: docs/theory/particles.md §6). The command line reads them too, so nothing
here imports the numerical libraries."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from attnphys.errors import check_fits, memory_budget


def fits_blaming(
    need: Callable[[Mapping[str, int]], float],
    values: Mapping[str, int],
    defaults: Mapping[str, int],
    what: Mapping[str, str],
    *,
    field: Callable[[str], str] = lambda k: f"`{k}`",
    least: Mapping[str, int] | None = None,
) -> None:
    """Refuse sizes whose arrays cannot fit (:func:`attnphys.errors.check_fits`), naming the size to blame: of
    the sizes in ``values`` (each with its default in ``defaults``), the one that multiplies the bytes
    ``need(values)`` the most over what they would be with that size at its default (a trillion heads of a
    small cloud are too many heads, not too many tokens), with the largest value of it that fits when the
    others stay as given.

    Args:
        need: bytes of every array, as a function of the sizes (non-decreasing in each).
        what: per size, the words of the message (``"1000000000000 heads of 64×64 attention matrices"``).
        field: how a size is named in the message (an option of the command line, or a Python argument).
        least: per size, its smallest allowed value (1 otherwise).

    Raises:
        ResourceError: naming ``field(size)``, with the value of it that fits.
    """
    total = float(need(values))
    budget, _ = memory_budget()
    if budget is None or total <= budget:
        return
    least = least or {}

    def with_value(k: str, v: int) -> float:
        return float(need({**values, k: v}))

    gain = {k: total / max(with_value(k, min(int(values[k]), int(defaults[k]))), 1.0) for k in values}
    order = sorted(values, key=lambda k: -gain[k])  # stable: ties keep the order of ``values``
    k = order[0]
    lo, hi = int(least.get(k, 1)), int(values[k])
    if with_value(k, lo) > budget:
        others = [field(o) for o in order[1:2]]
        hint = (
            f"lower {' and '.join([field(k), *others])}: even {field(k)} {lo:,} does not fit with the others as given"
        )
    else:
        while hi - lo > 1:  # the largest value in [lo, value) that fits, the others as given
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if with_value(k, mid) <= budget else (lo, mid)
        hint = f"lower {field(k)}: at most {lo:,} fit with the other values as given"
    check_fits(total, f"{what[k]}, with the other arrays,", hint, field(k).strip("`"))


def flow_bytes(v: Mapping[str, int], keep_cloud: bool = True) -> float:
    """A particle flow (:func:`attnphys.clouds.particle_flow`, ``clouds flow``): ``heads`` attention matrices of
    ``tokens``² entries (a few copies in the solver's stages), the state and its stages (``tokens`` × ``dim``)
    and the saved times (``saves`` × ``tokens`` × ``dim``, twice, with ``keep_cloud``)."""
    n, d, s, h = v["tokens"], v["dim"], v["saves"], v["heads"]
    return 96.0 * h * n * n + 128.0 * n * d + 16.0 * s * n * d * (1 if keep_cloud else 0) + 64.0 * s


def phase_bytes(v: Mapping[str, int]) -> float:
    """The (β, t) clustering diagram (:func:`attnphys.clouds.clustering_diagram`): ``samples`` flows of
    ``tokens`` in ``dim`` dimensions at once, each saved ``saves`` times."""
    S, n, d, s = v["samples"], v["tokens"], v["dim"], v["saves"]
    return 96.0 * S * n * n + 128.0 * S * n * d + 16.0 * s * S * n * d


def layers_bytes(v: Mapping[str, int], untied: bool, stats_every: int, resample_every: int) -> float:
    """A cloud through layers (:func:`attnphys.clouds.iterate_layers`, ``clouds run``): ``heads`` attention
    matrices of ``tokens``² entries, the cloud and its D × D covariance, the weights of every draw
    (every layer's when ``untied``) and the statistics of every recorded layer, and the ``snapshots``."""
    n, d, L, h, k = v["tokens"], v["dim"], v["layers"], v["heads"], v["snapshots"]
    draws = -(-L // resample_every) if untied else 1
    rows = L // stats_every + 2
    return (
        24.0 * max(h, 1) * n * n
        + 32.0 * n * d
        + 24.0 * d * d
        + 8.0 * (2 * (L * untied + draws) * h * d * d + 64 * rows)
        + 8.0 * k * n * d
    )


__all__ = ["fits_blaming", "flow_bytes", "layers_bytes", "phase_bytes"]

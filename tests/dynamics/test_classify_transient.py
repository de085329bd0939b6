"""An orbit recorded before it settled (no transient) is classified by its settled tail: the unsettled head
is discounted before the period and the 0-1 statistic are read (theory: docs/theory/dynamics.md §4.1)."""

import numpy as np
import pytest

from attnphys.dynamics.classify import REGIME_REASONS, REGIMES, classify, settled_period

N = 1000


def _logistic(n: int, r: float = 4.0, x0: float = 0.1234) -> np.ndarray:
    x = np.empty(n)
    x[0] = x0
    for t in range(1, n):
        x[t] = r * x[t - 1] * (1 - x[t - 1])
    return x


def _cycle(n: int, values=(0.2, -0.5, 0.9)) -> np.ndarray:
    return np.resize(np.asarray(values, float), n)


def _head_then_cycle(head: int) -> np.ndarray:
    """A chaotic head of ``head`` steps, then a period-3 cycle decaying onto it (contraction 0.5 per step)."""
    tail = _cycle(N - head)
    tail += 0.3 * 0.5 ** np.arange(N - head)
    return np.concatenate([_logistic(head), tail])


ORBITS = {
    # case: (series, label, period, the unsettled head (the settled tail starts within 30 steps after it))
    "period 3 from the start": (_cycle(N), "periodic", 3, 0),
    "period 3 after an unsettled head": (_head_then_cycle(85), "periodic", 3, 85),
    "period 3 after a head of nearly half the window": (_head_then_cycle(450), "periodic", 3, 450),
    "a head longer than half the window": (_head_then_cycle(600), "chaotic", 0, None),
    "quasi-periodic": (np.cos(2 * np.pi * 0.5 * (np.sqrt(5) - 1) * np.arange(N)), "quasi_periodic", 0, None),
    "chaotic": (_logistic(N), "chaotic", 0, None),
    "fixed point after a head": (
        np.concatenate([_logistic(100), 0.25 + 0.5 ** np.arange(N - 100)]),
        "fixed_point",
        1,
        100,
    ),
}


def _repeats(y: np.ndarray, p: int) -> bool:
    return bool(np.max(np.abs(y[p:] - y[:-p])) <= 1e-8 * max(1.0, np.max(np.abs(y))))


@pytest.mark.parametrize("case", list(ORBITS))
def test_the_label_is_the_settled_tails(case):
    y, label, period, start = ORBITS[case]
    r = classify(y[:, None])
    assert REGIMES[int(r["regime"])] == label
    assert int(r["period"]) == period
    if period:
        assert REGIME_REASONS[int(r["regime_reason"])] == "exact_period"
        assert int(r["agree"]) == 1  # the 0-1 test read on the tail says regular
    p, s = (int(v) for v in settled_period(y[:, None]))
    assert p == period
    if start is None:
        assert s == 0
    elif start == 0:
        assert s == 0 and _repeats(y, p)
    else:  # the longest settled tail: it repeats, and one step earlier it does not
        assert start <= s <= start + 30 and _repeats(y[s:], p) and not _repeats(y[s - 1 :], p)


def test_a_batch_is_classified_row_by_row():
    rows = np.stack([ORBITS[c][0] for c in ORBITS])[:, :, None]
    r = classify(rows)
    assert [REGIMES[c] for c in r["regime"]] == [ORBITS[c][1] for c in ORBITS]
    one = classify(rows[1])
    assert float(one["K"]) == pytest.approx(float(r["K"][1]), abs=1e-12)

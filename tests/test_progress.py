"""Progress bars that move within a piece of work: inner layers report fractions, the enclosing bar moves."""

import threading
from contextlib import contextmanager

import numpy as np
import pytest

from attnphys.progress import host_reporter, nested_progress, piece, report_fraction, report_from_host, subrange


def test_inner_reports_move_the_bar_within_a_piece():
    moves = []
    with nested_progress(moves.append) as tracker:
        with piece(10):
            report_fraction(3, 10)
            report_fraction(2, 10)  # never backwards
            with subrange(0.5, 1.0):
                report_fraction(1, 2)  # half of the second half: 0.75 of the piece
        tracker.complete(10)
    assert moves[0] == 3 and sum(moves) == 10 and all(m > 0 for m in moves)
    assert np.isclose(sum(moves[:2]), 7.5) and np.isclose(sum(moves[:3]), 10)  # leaving the subrange: at its end
    report_fraction(1, 2)  # no bar: nothing happens


def test_reports_from_another_thread_reach_the_bar():
    moves = []
    with nested_progress(moves.append) as tracker, piece(4), host_reporter() as shown:
        assert shown
        t = threading.Thread(target=report_from_host, args=(0.5,))
        t.start()
        t.join()
        tracker.complete(4)
    assert moves == [2.0, 2.0]


@pytest.mark.slow
def test_a_census_reports_its_rounds():
    from attnphys.dynamics._census import CensusOptions, census_batch
    from attnphys.dynamics.maps import LOGISTIC

    moves = []
    with nested_progress(moves.append) as tracker, piece(1.0):
        census_batch(LOGISTIC, np.array([3.9]), n_ics=8, options=CensusOptions(budget=4096, lyap_steps=500,
                                                                                n_classify=200, merge_steps=500,
                                                                                merge_points=50))
        inner = sum(moves)
        tracker.complete(1.0)
    assert len(moves) >= 3 and 0.5 < inner <= 1.0  # the settle rounds, then the grouping


@pytest.mark.slow
def test_a_sweep_bar_moves_inside_its_one_chunk(monkeypatch):
    """Three β of a clustering diagram in one chunk: the bar moves by thirds before the chunk ends."""
    import attnphys.sweeps.engine as engine
    from attnphys.clouds.phase import ClusteringTask
    from attnphys.sweeps import Axis, Grid, Sweep, run_sweep

    moves = []

    @contextmanager
    def bar(total, unit, enabled=True, done=0):
        yield moves.append

    monkeypatch.setattr(engine, "progress_bar", bar)
    task = ClusteringTask(dim=3, tokens=6, t_max=1.0, saves=3, samples=1)
    run_sweep(Sweep(grid=Grid(axes=(Axis(name="beta", values=(0.5, 1.0, 2.0)),), chunk=3), task=task))
    assert np.allclose(moves, [1.0, 1.0, 1.0]) and len(moves) == 3


@pytest.mark.slow
def test_a_flow_reports_through_its_solver_and_gives_the_same_bits():
    import jax

    from attnphys.clouds.attention import SoftmaxAttention
    from attnphys.clouds.flow import solve_flow, uniform_sphere

    X0 = uniform_sphere(jax.random.PRNGKey(0), 12, 3)
    ts = np.linspace(0.0, 5.0, 6)
    plain = solve_flow(SoftmaxAttention(beta=2.0), X0, ts)
    moves = []
    with nested_progress(moves.append) as tracker, piece(100):
        shown = solve_flow(SoftmaxAttention(beta=2.0), X0, ts)
        tracker.complete(100)
    assert len(moves) > 5 and np.isclose(sum(moves), 100)
    np.testing.assert_array_equal(plain.xs, shown.xs)


def test_verify_shows_a_bar(capsys):
    from attnphys.verify import CLAIMS, run_claims

    rows = run_claims(0, CLAIMS[:1], progress=True)
    captured = capsys.readouterr()
    assert rows[0]["passed"] and "claims" in captured.out + captured.err


def test_progress_appears_in_a_log_as_lines(capsys, monkeypatch):
    """Where the output is not a terminal (a log file, a batch job) no live bar can be drawn: a line at every
    tenth of the work, none repeated, and the rate measured after the first report (compilation excluded)."""
    import attnphys.progress as p

    clock = iter([0.0] + [100.0 + t for t in range(200)])  # the first report after a 100 s compilation
    monkeypatch.setattr("time.monotonic", lambda: next(clock))
    with p.progress_bar(100, "points") as advance:
        for _ in range(100):
            advance(1)
    lines = capsys.readouterr().err.splitlines()
    # the first report (more than LOG_EVERY_S after the start), then 10, 20, ..., 100 points; the end is
    # not written twice
    assert len(lines) == 11, lines
    assert lines[0] == "points: 1/100 (1 %), elapsed 0:01:40", lines[0]
    assert lines[1].startswith("points: 10/100 (10 %), 1 points/s, elapsed 0:01:49, eta 0:01:30"), lines[1]
    assert lines[-1].startswith("points: 100/100 (100 %)")


def test_progress_lines_are_sparse_in_a_long_run(capsys, monkeypatch):
    """A long run in a log: at most a line every LOG_EVERY_S seconds between the tenths."""
    import attnphys.progress as p

    clock = iter(float(t) for t in range(10_000))
    monkeypatch.setattr("time.monotonic", lambda: next(clock))
    with p.progress_bar(1000, "steps") as advance:
        for _ in range(1000):
            advance(1)
    lines = capsys.readouterr().err.splitlines()
    assert 10 <= len(lines) <= 10 + 1000 // p.LOG_EVERY_S + 1

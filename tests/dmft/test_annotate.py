"""Warnings recorded in results: a start made for another network, identical overlaps; coordinate labels."""

import warnings

import numpy as np
import pytest

from attnphys.dmft import preset, trajectories
from attnphys.dmft.annotate import ResultWarning, caveats, checkpoint_caveat, identical_overlaps


def test_identical_and_opposite_overlaps_from_the_weights():
    paper = preset("paper")
    assert identical_overlaps(paper) == []
    assert identical_overlaps(paper.with_field("seed", 4)) == [(0, 2, 1)]
    assert identical_overlaps(paper.with_field("seed", 3)) == [(0, 2, -1)]


def test_the_checkpoint_belongs_to_the_paper_network():
    paper = preset("paper")
    assert checkpoint_caveat(paper, "checkpoint") is None
    assert checkpoint_caveat(paper, "token") is None
    assert "seed 4" in checkpoint_caveat(paper.with_field("seed", 4), "checkpoint")
    assert "seed 2, 3" in checkpoint_caveat(paper, "checkpoint", seeds=[1, 2, 3])
    assert caveats(paper, "checkpoint") == []


@pytest.mark.slow
def test_results_carry_and_issue_the_warnings():
    """Seed 4 from the checkpoint: both warnings, issued and recorded; mo_se[0] ≡ mo_se[2] indeed."""
    cfg = preset("paper").with_field("seed", 4)
    with pytest.warns(ResultWarning) as rec:
        ds = trajectories(cfg, start="checkpoint", steps=300, transient=100, sweep={"beta_o": [1.3, 1.445]})
    messages = [str(r.message) for r in rec]
    assert any("checkpoint" in m for m in messages) and any("mo_se[0] ≡ mo_se[2]" in m for m in messages)
    lines = ds.attrs["warnings"].split("\n")
    assert len(lines) == 2 and set(lines) <= set(messages)
    np.testing.assert_array_equal(ds.mo_se.values[..., 0], ds.mo_se.values[..., 2])
    assert ds.beta_o.attrs["long_name"] == "output inverse temperature β_o"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResultWarning)
        clean = trajectories(preset("paper"), start="checkpoint", steps=300, transient=100, sweep={"beta_o": [1.3]})
    assert "warnings" not in clean.attrs

"""A probe stopped part-way keeps its finished steps and resumes after them, to the same result; steps
kept for other inputs are never used."""

import numpy as np
import pytest
import xarray as xr

from attnphys.probes import metrics
from attnphys.probes.run import probe

from .test_claims import TEXT, CharTokenizer, random_model

pytest.importorskip("transformers")


def _assert_same(a: xr.Dataset, b: xr.Dataset) -> None:
    assert set(a.variables) == set(b.variables)
    for name in a.variables:
        x, y = a[name].values, b[name].values
        if x.dtype.kind == "f":
            np.testing.assert_array_equal(x, y, err_msg=name)
        else:
            assert (x == y).all(), name
    skip = {"wall_time_s", "created"}
    assert {k: v for k, v in a.attrs.items() if k not in skip} == {k: v for k, v in b.attrs.items() if k not in skip}


@pytest.mark.slow
def test_a_stopped_probe_resumes_after_its_last_finished_step(tmp_path, monkeypatch):
    model = random_model("llama")
    kw = dict(tokenizer=CharTokenizer(), max_tokens=64, control="shuffled")
    whole = probe(model, TEXT, **kw)

    keep = tmp_path / "steps"
    real_swap, real_qk = metrics.swap_normalization, metrics.qk_vs_inverse_covariance
    calls = {"swap": 0, "qk": 0}

    def stopped(*a, **k):
        raise KeyboardInterrupt  # Ctrl-C during the fifth step of the trained model

    monkeypatch.setattr(metrics, "swap_normalization", stopped)
    with pytest.raises(KeyboardInterrupt):
        probe(model, TEXT, keep=keep, **kw)
    assert len(list(keep.glob("*.npz"))) == 4  # clouds, W_qᵀW_k, MLP, gradients

    def counted(name, real):
        def f(*a, **k):
            calls[name] += 1
            return real(*a, **k)

        return f

    monkeypatch.setattr(metrics, "swap_normalization", counted("swap", real_swap))
    monkeypatch.setattr(metrics, "qk_vs_inverse_covariance", counted("qk", real_qk))
    resumed = probe(model, TEXT, keep=keep, **kw)
    _assert_same(whole, resumed)
    assert calls["swap"] == 2  # trained and control
    n_control_qk = calls["qk"]
    assert n_control_qk in (1, 2)  # only the control's: the trained model's W_qᵀW_k step was kept
    assert not keep.exists()  # removed once the probe finished


@pytest.mark.slow
def test_steps_kept_for_other_inputs_are_not_used(tmp_path, monkeypatch):
    keep = tmp_path / "steps"
    a, b = random_model("bert", seed=0), random_model("bert", seed=1)
    kw = dict(tokenizer=CharTokenizer(), max_tokens=64)
    monkeypatch.setattr(metrics, "swap_normalization", lambda *x, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        probe(a, TEXT, keep=keep, **kw)
    monkeypatch.undo()
    # other weights, same name and settings: the kept steps are removed, not used
    _assert_same(probe(b, TEXT, **kw), probe(b, TEXT, keep=keep, **kw))
    # a folder holding other files is refused, and left as it was
    from attnphys.errors import OutputError

    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="not a probe's steps"):
        probe(a, TEXT, keep=other, **kw)
    assert (other / "notes.txt").read_text() == "mine"

"""Sinks, repeated states and the rules of a verdict: massive-norm positions found where they are put,
identical prefixes of a causal model de-duplicated, a fold without a value never dropped, no "supported"
below the minimum degrees of freedom, and a claim added as one new file appearing in the results."""

import dataclasses
import math
import sys
import textwrap

import numpy as np
import pytest
from scipy import stats

from attnphys.probes import capture
from attnphys.probes.claims import CLAIMS, Claim, Evidence, Outcome, evaluate_claims
from attnphys.probes.significance import MIN_DF, t_test
from attnphys.probes.sinks import duplicates, find_sinks
from tests.probes.test_probes import CharTokenizer, tiny

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def llama_capture():
    return capture(tiny("llama"), CharTokenizer(), ["abcd efgh", "abcd wxyz", "a quite different one"], batch_size=2)


def test_massive_norm_positions_are_the_sinks(llama_capture):
    cap = dataclasses.replace(llama_capture, stages=dict(llama_capture.stages))
    assert not find_sinks(cap)["sink"].any()  # a random model has none
    first = cap.position == 0
    for layer in (1,):  # from layer 1 on, position 0 carries a norm 500 times the others'
        for stage in cap.adapter.stages:
            X = cap.stages[(layer, stage)].copy()
            X[first] *= 500.0
            cap.stages[(layer, stage)] = X
    found = find_sinks(cap)
    assert np.array_equal(found["sink"], first)
    assert found["massive"][0].sum() == 0 and np.array_equal(found["massive"][1], first)
    assert found["norm_ratio"][1] > 100 and np.isnan(found["norm_ratio"][0])
    assert found["trace_share"][1] > 0.9  # they carry the covariance trace, as in a real decoder
    assert 0 <= found["attention_share"][1] <= 1 and found["attention_uniform"][1] > 0


def test_identical_prefixes_of_a_causal_model_are_one_state(llama_capture):
    """ "abcd efgh" and "abcd wxyz" share [CLS]abcd␠ (6 tokens), "a quite …" shares [CLS]a: in a causal
    model those of the later sentences are the first's states again at every stage of every layer (the
    third sentence in another batch, so equal to rounding); a bidirectional model sees the whole sentence,
    so none of different sentences repeats."""
    cap = llama_capture
    want = ((cap.sentence == 1) & (cap.position < 6)) | ((cap.sentence == 2) & (cap.position < 2))  # [CLS]a
    for layer in range(cap.n_layers):
        assert np.array_equal(duplicates(cap, layer), want)
        for i in np.flatnonzero(want):  # the same state, found from the token ids
            j = np.flatnonzero((cap.sentence == 0) & (cap.position == cap.position[i]))[0]
            np.testing.assert_allclose(cap.get(layer, "mlp_add")[i], cap.get(layer, "mlp_add")[j], atol=1e-5)
    bert = capture(tiny("bert"), CharTokenizer(), ["abcd efgh", "abcd wxyz", "abcd efgh"])
    assert np.array_equal(duplicates(bert), bert.sentence == 2)  # only the repeated sentence


def test_t_test_never_drops_a_fold_and_corrects_overlap():
    assert all(math.isnan(x) for x in t_test([0.5, 0.6, np.nan, 0.7], 0.0))
    v = np.array([0.91, 0.93, 0.95, 0.92, 0.94])
    t, p = t_test(v, 0.9)
    want = stats.ttest_1samp(v, 0.9, alternative="greater")
    assert t == pytest.approx(want.statistic) and p == pytest.approx(want.pvalue)
    # Nadeau-Bengio: variance s²(1/k + ρ/(1 − ρ)) for k overlapping splits holding out ρ
    tc, pc = t_test(v, 0.9, test_fraction=0.3)
    assert tc == pytest.approx((v.mean() - 0.9) / (v.std(ddof=1) * math.sqrt(1 / 5 + 0.3 / 0.7)))
    assert pc > p
    t2, p2 = t_test(-v + 1.8, 0.9, two_sided=True)  # mirrored below 0.9: same |t|, two tails
    assert t2 == pytest.approx(-t) and p2 == pytest.approx(2 * p)


def _evidence(cap):
    return Evidence(cap, {}, {}, {}, {}, "all")


def test_no_verdict_below_the_minimum_degrees_of_freedom(llama_capture):
    """A test with a tiny p-value on one degree of freedom is not tested (with the reason), never supported;
    the same p-value on enough degrees of freedom is."""
    fake = {
        "few": Claim("few", "s", "n", "t", False, lambda ev, layer: Outcome(1.0, 50.0, 1e-9, 1.0)),
        "enough": Claim("enough", "s", "n", "t", False, lambda ev, layer: Outcome(1.0, 50.0, 1e-9, MIN_DF)),
        "undefined": Claim("undefined", "s", "n", "t", False, lambda ev, layer: Outcome(math.nan, reason="why not")),
    }
    out = evaluate_claims(_evidence(llama_capture), fake)
    assert out["supported"].tolist() == [[False, False], [True, True], [False, False]]
    assert np.isnan(out["p"][0]).all() and "fewer than the 3 a verdict needs" in out["reason"][0, 0]
    assert out["reason"][1].tolist() == ["", ""] and out["reason"][2].tolist() == ["why not", "why not"]


@pytest.mark.slow
def test_a_claim_added_as_one_new_file_reaches_the_dataset_and_the_report(tmp_path, monkeypatch):
    """A fixture package with one file defining and registering a claim (measure, null, test, report lines):
    the probe tests it, the dataset has it, and the report gives it a section of its own."""
    pkg = tmp_path / "extra_claims"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "wide_attention_input.py").write_text(
        textwrap.dedent(
            """
            import numpy as np
            from attnphys.probes.claims import Claim, Outcome, register_claim
            from attnphys.probes.significance import t_test


            def measure(ev, layer):
                X = ev.cap.get(layer, ev.cap.adapter.attn_input_stage)[ev.mask]
                sent = ev.cap.sentence[ev.mask]
                per_sentence = [np.linalg.norm(X[sent == s], axis=1).mean() for s in np.unique(sent)]
                t, p = t_test(per_sentence, 0.0)
                return Outcome(float(np.mean(per_sentence)), t, p, len(per_sentence) - 1)


            register_claim(
                "wide_attention_input",
                Claim("the attention input has a positive norm", "mean token norm per sentence", "norm ≤ 0",
                      "one-sided t-test over sentences", False, measure,
                      report=lambda ds: ["- a line written by the claim itself."]),
            )
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        __import__("extra_claims.wide_attention_input")
        assert "wide_attention_input" in CLAIMS
        from attnphys.probes import probe
        from attnphys.probes.report import report
        from attnphys.probes.run import summary

        text5 = ["abcd efgh", "abcd wxyz", "a quite different one", "and a fourth", "with a fifth"]
        ds = probe(tiny("llama"), text5, tokenizer=CharTokenizer(), max_tokens=32)
        assert "wide_attention_input" in ds.claim.values
        assert np.isfinite(ds.claim_p.sel(claim="wide_attention_input").values).all()
        text = report(ds, summary(ds), [])
        assert "## Claim: the attention input has a positive norm" in text
        assert "- a line written by the claim itself." in text
        assert "the attention input has a positive norm" in text.split("## Verdicts")[1].split("##")[0]
    finally:
        CLAIMS.pop("wide_attention_input", None)
        sys.modules.pop("extra_claims.wide_attention_input", None)
        sys.modules.pop("extra_claims", None)

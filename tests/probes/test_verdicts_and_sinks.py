"""The verdicts beside their controls, the sinks by attention share, the affine fits with too few tokens and
the reasons of NaN numbers: each on arrays built here with a known answer (and a negative control), plus
the same on MiniLM (slow)."""

import json

import numpy as np
import pytest
import xarray as xr

from attnphys.errors import InputError
from attnphys.probes import report as rp
from attnphys.probes.adapters import ADAPTERS
from attnphys.probes.capture import Capture
from attnphys.probes.claims import CLAIMS, Evidence, _mlp_affine
from attnphys.probes.metrics import _swap_reason, mlp_linearity
from attnphys.probes.run import _discount_controlled, control_kinds, control_prefixes
from attnphys.probes.sinks import SINK_ATTENTION_MIN_SHARE, SINK_ATTENTION_RATIO, attention_received, find_sinks

TRAINING = "head_own_gradient"  # a claim about training
ARCHITECTURE = "mlp_affine"  # a claim about the architecture
L = 4


def _claims(supported: dict, prefix: str = "", seed: int = 0) -> dict:
    """Claim variables of one model: supported = {claim: layers}; p small where supported."""
    names = list(CLAIMS)
    rng = np.random.default_rng(seed)
    sup = np.zeros((len(names), L), np.int8)
    for c, layers in supported.items():
        sup[names.index(c), layers] = 1
    p = np.where(sup > 0, 1e-4, 0.5)
    out = {
        f"{prefix}claim_supported": sup,
        f"{prefix}claim_p": p,
        f"{prefix}claim_p_holm": np.minimum(1, p * L),
        f"{prefix}claim_z": np.where(sup > 0, 4.0, 0.1) + 0.01 * rng.standard_normal(sup.shape),
        f"{prefix}claim_statistic": np.where(sup > 0, 0.3, 0.0),
        f"{prefix}claim_df": np.full(sup.shape, 9.0),
        f"{prefix}claim_reason": np.full(sup.shape, "", dtype=object).astype(str),
    }
    out.update({k.replace("claim_", "claim_", 1) + "_with_sinks": v for k, v in list(out.items())})
    return {k: (("claim", "layer"), v) for k, v in out.items()}


def _verdicts(controls: dict | None) -> xr.Dataset:
    """A probe dataset's claim variables: the trained model supports the training claim in layers 1, 2, 3
    and the architectural one in layers 0, 1; ``controls``: {kind: {claim: layers}}."""
    variables = _claims({TRAINING: [1, 2, 3], ARCHITECTURE: [0, 1]})
    controls = controls or {}
    for kind, sup in controls.items():
        pre = "control_" if len(controls) == 1 else f"control_{kind}_"
        variables.update(_claims(sup, pre, seed=1))
    variables["claim_training"] = (("claim",), np.array([c.training for c in CLAIMS.values()], np.int8))
    variables["claim_min_df"] = (("claim",), np.full(len(CLAIMS), 3.0))
    ds = xr.Dataset(variables, coords={"claim": list(CLAIMS), "layer": np.arange(L)})
    ds.attrs.update(controls=json.dumps(list(controls)), control=",".join(controls) or "none", n_sinks=0)
    _discount_controlled(ds, control_prefixes(ds))
    return ds


def test_a_layer_that_a_control_passes_is_not_counted_for_a_training_claim():
    ds = _verdicts({"random": {}, "shuffled": {TRAINING: [3], ARCHITECTURE: [0]}})
    assert np.flatnonzero(ds.claim_supported.sel(claim=TRAINING).values).tolist() == [1, 2]
    assert ds.claim_control_passes.sel(claim=TRAINING).values.tolist() == [0, 0, 0, 1]
    assert "not counted: the shuffled control passes" in str(ds.claim_reason.sel(claim=TRAINING, layer=3).item())
    # an architectural claim passes in a control as it should: still counted
    assert np.flatnonzero(ds.claim_supported.sel(claim=ARCHITECTURE).values).tolist() == [0, 1]
    line = rp._claim_line(ds, TRAINING)
    assert "supported in 2 of 4 layers (1, 2;" in line
    assert "a control passes it in layer 3 too" in line and "not counted" in line
    assert "a randomly initialised model does not pass" not in line
    table = "\n".join(rp._verdict_table(ds))
    assert "| random control | shuffled control |" in table
    appendix: list[str] = []
    section = "\n".join(rp._control_section(ds, appendix))
    assert "## Trained beside the random control" in section and "## Trained beside the shuffled control" in section
    assert "also in the control: layers 3 (not counted for the trained model)" in section
    assert "only in layers 1, 2; not counted in layers 3 (another control passes it there)" in section
    # the per-layer numbers beside the control's are in the appendix, not in the section
    numbers = "\n".join(appendix)
    assert "control z (or t) per layer" not in section and "degrees of freedom: 9, 9, 9, 9" not in section
    assert "control z (or t) per layer" in numbers and "degrees of freedom: 9, 9, 9, 9" in numbers


def test_the_training_wording_needs_a_control_that_was_run_and_failed():
    failed = rp._claim_line(_verdicts({"random": {}}), TRAINING)
    assert "the random control pass it in no layer" in failed
    none = _verdicts(None)
    assert (none.claim_control_passes.values == -1).all()
    line = rp._claim_line(none, TRAINING)
    assert "no control model was run" in line and "does not pass" not in line
    assert np.flatnonzero(none.claim_supported.sel(claim=TRAINING).values).tolist() == [1, 2, 3]  # unchanged


def test_several_controls_are_named_in_one_argument():
    assert control_kinds(None) == ()
    assert control_kinds("shuffled") == ("shuffled",)
    assert control_kinds("random,shuffled") == control_kinds(["random", "shuffled", "random"]) == ("random", "shuffled")
    with pytest.raises(InputError, match="control: unknown control 'weird'"):
        control_kinds(["random", "weird"])


def _capture(X, P_list, adapter="bert", special=None):
    n = [P.shape[1] for P in P_list]
    sentence = np.concatenate([np.full(k, s) for s, k in enumerate(n)])
    position = np.concatenate([np.arange(k) for k in n])
    st = {(0, s): X for s in ADAPTERS[adapter].stages}
    sp = np.zeros(sentence.size, bool) if special is None else special
    return Capture(ADAPTERS[adapter], st, sentence, position, sp, attentions=[list(P_list)], n_layers=1)


def _rows(n, causal=False):
    seen = np.tril(np.ones((n, n))) if causal else np.ones((n, n))
    return seen / seen.sum(1, keepdims=True)


def test_a_token_taking_half_the_attention_at_ordinary_norm_is_an_attention_sink():
    """Every query of both heads gives token 0 half its weight (5 times the uniform 1/10): an attention sink,
    not a massive-norm one; its share of the residual-stream trace is Σ_sink ‖x − x̄‖² / Σ ‖x − x̄‖²."""
    n = 10
    P = np.full((2, n, n), 0.5 / (n - 1))
    P[:, :, 0] = 0.5
    X = np.random.default_rng(0).standard_normal((2 * n, 8))
    cap = _capture(X, [P, np.stack([_rows(n)] * 2)])
    a, u = attention_received(cap)
    np.testing.assert_allclose(a[0, :n], [0.5] + [0.5 / (n - 1)] * (n - 1))
    np.testing.assert_allclose(u, 1 / n)
    s = find_sinks(cap)
    assert not s["sink"].any()  # ordinary norms
    assert s["attention_sink"].tolist() == [True] + [False] * (2 * n - 1)  # the uniform sentence has none
    np.testing.assert_allclose(s["attention_ratio"][0, 0], 5.0)
    # mean over the 40 (query, head) rows of both sentences: 20 rows give 0.5, the other sentence's none
    np.testing.assert_allclose(s["attention_sink_share"], 0.25)
    np.testing.assert_allclose(s["attention_sink_uniform"], 0.5 / n)
    d = np.sum((X - X.mean(0)) ** 2, 1)
    np.testing.assert_allclose(s["attention_sink_trace_share_residual"], d[0] / d.sum())
    assert SINK_ATTENTION_RATIO == 3.0 and SINK_ATTENTION_MIN_SHARE == 0.1


def test_uniform_and_causal_attention_have_no_attention_sinks():
    """Negative controls: uniform attention, causal uniform attention (the first token sees the most
    queries), and a causal last token that the last query gives half its weight (six times its uniform share
    1/n², but 1/24 of the attention, under 10 %)."""
    n = 12
    causal = np.stack([_rows(n, True)] * 2)
    last = causal.copy()
    last[:, -1] = 0.5 / (n - 1)
    last[:, -1, -1] = 0.5
    X = np.random.default_rng(1).standard_normal((3 * n, 8))
    s = find_sinks(_capture(X, [np.stack([_rows(n)] * 2), causal, last], adapter="gpt2"))
    assert not s["attention_sink"].any()
    np.testing.assert_allclose(s["attention_ratio"][0, 3 * n - 1], 6.0)  # the excess alone is not enough


def _sink_ds(n_special=2, attention_sink=True):
    T = 6
    ds = xr.Dataset(
        {
            "token_sink": (("token",), np.zeros(T, np.int8)),
            "token_attention_sink": (("token",), np.array([1, 0, 0, 1, 0, 0], np.int8) * attention_sink),
            "token_special": (("token",), np.array([1, 0, 0, 1, 0, 0], np.int8)),
            "token_position": (("token",), np.array([0, 1, 2, 0, 1, 2])),
            "attention_sink_share": (("layer",), np.array([0.45, 0.6])),
            "attention_sink_uniform": (("layer",), np.array([0.33, 0.33])),
            "attention_sink_trace_share": (("layer",), np.array([0.1, 0.2])),
            "attention_sink_trace_share_residual": (("layer",), np.array([0.1, 0.2])),
        }
    )
    ds.attrs.update(n_sinks=0, n_sentences=2, n_special=n_special)
    return ds


def test_the_report_names_both_sink_criteria():
    text = "\n".join(rp._sink_section(_sink_ds()))
    assert "no massive-norm positions" in text
    assert "By attention share" in text and "2 tokens (2 of them special tokens), at positions 0 (2 of 2" in text
    assert "residual stream, per layer: 0.1, 0.2" in text and "0.45, 0.6" in text
    assert "no attention-sink positions" in "\n".join(rp._sink_section(_sink_ds(attention_sink=False)))


def test_without_special_tokens_is_not_claimed_when_the_tokenizer_adds_none():
    line = rp._special_line(_sink_ds(n_special=0), np.array([True, False]), 2)
    assert "adds no special tokens" in line and "grows in" not in line
    assert "grows in 1 of 2 layers" in rp._special_line(_sink_ds(), np.array([True, False]), 2)


def _affine_capture(n_sentences, per_sentence, D=16, seed=0):
    rng = np.random.default_rng(seed)
    T = n_sentences * per_sentence
    X = rng.standard_normal((T, D))
    A, b = rng.standard_normal((D, D)), rng.standard_normal(D)
    sentence = np.repeat(np.arange(n_sentences), per_sentence)
    st = {(0, s): X for s in ADAPTERS["gpt2"].stages}
    st[(0, "mlp_out")] = X @ A + b  # exactly affine
    return Capture(
        ADAPTERS["gpt2"], st, sentence, np.tile(np.arange(per_sentence), n_sentences), np.zeros(T, bool), n_layers=1
    )


def test_an_affine_fit_with_fewer_tokens_than_parameters_is_flagged():
    """An exactly affine MLP: with 140 training tokens for 17 parameters per output the held-out R² is 1 and
    nothing is flagged; with 12 (4 sentences of 4 tokens, one held out) the fit is flagged, its R² falls,
    and the claim is not tested there, with the reason."""
    ok = mlp_linearity(_affine_capture(20, 10))
    assert not ok["underdetermined"].any() and ok["fit_reason"][0] == ""
    assert ok["r2_affine"][0] > 0.9999 and ok["train_tokens"][0] == 140 and ok["parameters"] == 17
    cap = _affine_capture(4, 4)
    bad = mlp_linearity(cap)
    assert bad["underdetermined"].all() and bad["train_tokens"][0] == 12
    assert "12 training tokens for 17 parameters per output" in bad["fit_reason"][0]
    assert bad["r2_affine"][0] < 0.99
    o = _mlp_affine(Evidence(cap, {}, {}, bad, {}), 0)
    assert np.isnan(o.p) and "underdetermined" in o.reason


def test_a_nan_swap_carries_its_reason():
    out = {
        "not_run": {"sphere": "sphere: not causal"},
        "token_cosine": np.array([np.nan, np.nan, 0.9]),
        "relative_change": np.array([np.nan, np.nan, 0.1]),
        "sentence_cosine": np.array([np.nan, np.nan, 0.95]),
    }
    assert _swap_reason("sphere", out, np.full(3, np.nan), 0).startswith("not run: sphere")
    why = _swap_reason("none", out, np.array([0.0, 0.5, np.inf, np.nan]), 1)
    assert "not finite from hidden state 2 on" in why
    assert _swap_reason("rmsnorm", out, np.zeros(4), 2) == ""


@pytest.mark.slow
def test_minilm_special_tokens_are_attention_sinks_at_ordinary_norms():
    """MiniLM: no massive-norm position, but [CLS] takes a large share of the attention in every layer, far
    above its uniform share; the special tokens together take a third to two thirds of it."""
    from attnphys.probes import builtin_corpus, capture, load_model
    from attnphys.probes.sinks import _attention_on

    model, tok = load_model("minilm")
    cap = capture(model, tok, builtin_corpus()[:64])
    s = find_sinks(cap)
    assert not s["sink"].any()
    at = s["attention_sink"]
    assert at[cap.position == 0].all() and (at & ~cap.special).sum() <= 0.05 * at.sum()
    assert (s["attention_sink_share"] > 2 * s["attention_sink_uniform"]).all()
    special, uniform = _attention_on(cap, cap.special)
    assert (special > 0.3).all() and (special < 0.7).all() and (uniform < 0.2).all()


@pytest.mark.long  # minutes: `make test-all`
@pytest.mark.slow
def test_minilm_with_both_controls_counts_no_layer_a_control_passes(tmp_path):
    from attnphys.probes import builtin_corpus, probe, summary, write_outputs

    ds = probe("minilm", builtin_corpus()[:96], max_tokens=256, control="random,shuffled")
    assert control_prefixes(ds) == {"random": "control_random_", "shuffled": "control_shuffled_"}
    training = ds.claim_training.values.astype(bool)
    passes = ds.claim_control_passes.values
    assert not (ds.claim_supported.values.astype(bool) & (passes > 0) & training[:, None]).any()
    s = summary(ds)
    for c in CLAIMS:
        assert set(s["claims"][c]["controls"]) == {"random", "shuffled"}
    write_outputs(ds, tmp_path)
    text = (tmp_path / "report.md").read_text()
    assert "## Trained beside the random control" in text and "## Trained beside the shuffled control" in text
    assert "a randomly initialised model does not pass it" not in text


@pytest.mark.long  # minutes: `make test-all`
@pytest.mark.slow
def test_smollm2_fits_on_64_sentences_are_flagged_underdetermined():
    """SmolLM2 (D = 576) on 64 sentences: about 530 training tokens per split for 577 parameters per output;
    every layer's fit is flagged, and with the whole corpus none is."""
    from attnphys.probes import builtin_corpus, capture, load_model

    model, tok = load_model("smollm2")
    small = mlp_linearity(capture(model, tok, builtin_corpus()[:64], keep_attentions=False))
    assert small["parameters"] == 577 and small["underdetermined"].all()
    assert "training tokens for 577 parameters per output" in small["fit_reason"][0]
    full = mlp_linearity(capture(model, tok, builtin_corpus(), keep_attentions=False))
    assert not full["underdetermined"].any() and full["train_tokens"][0] >= 577

"""Extensions that cannot go silently wrong: a norm's causality read from its class and every NaN swap with
its real reason; one broken or colliding plugin skipped with a warning, never taking the commands down; a
sweep store written before a new defaulted field still resumes, bit for bit; a batched field of a variant
continued like the paper's; a probe claim in one new file, listed in one line of its registry, tested and
reported; one escaping rule for every generated table."""

import importlib.metadata as metadata
import importlib.util
import json
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from attnphys.errors import ExtensionError, ExtensionWarning

ROOT = Path(__file__).resolve().parents[1]
REAL_ENTRY_POINTS = metadata.entry_points


def fake_entry_points(monkeypatch, extra: dict[str, list[tuple[str, str]]]):
    """``importlib.metadata.entry_points`` with the entry points ``extra`` (group → [(name, value)]) added."""

    def entry_points(**kw):
        eps = list(REAL_ENTRY_POINTS(**kw))
        for name, value in extra.get(kw.get("group"), []):
            eps.append(metadata.EntryPoint(name, value, kw.get("group")))
        return metadata.EntryPoints(eps)

    monkeypatch.setattr(metadata, "entry_points", entry_points)


# -- 1. norms: causality from the class, and every NaN swap with its reason -----------------------------------


def _gpt2(layers: int, std: float = 0.02, mlp_gain: float = 1.0):
    """A tiny random GPT-2; ``mlp_gain`` multiplies the first MLP weights of every block (the norms then keep
    the trained-like model finite while the model without them grows as the gain squared)."""
    transformers = pytest.importorskip("transformers")
    import torch

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(
        vocab_size=100, n_embd=32, n_layer=layers, n_head=4, n_positions=128, initializer_range=std
    )
    model = transformers.GPT2Model(cfg).eval()
    with torch.no_grad():
        for block in model.h:
            block.mlp.c_fc.weight.mul_(mlp_gain)
    return model


def _without_norms(model, enc):
    """The hidden states of ``model`` and of the model with every norm replaced by its affine alone (the
    ``none`` swap), computed without the probes."""
    import torch

    with torch.no_grad():
        ref = model(**enc, output_hidden_states=True)
        mods = [model.ln_f] + [b.ln_1 for b in model.h] + [b.ln_2 for b in model.h]
        saved = [m.forward for m in mods]
        try:
            for m in mods:
                m.forward = lambda x, m=m: x * m.weight + m.bias
            new = model(**enc, output_hidden_states=True)
        finally:
            for m, f in zip(mods, saved):
                m.forward = f
    return ref, new


def test_a_model_without_norms_is_measured_not_called_divergent_while_its_states_are_finite():
    """Without its norms the model's states reach |x| ~ 1e23: finite, but their squared norms overflow
    float32. The swap's cosines and changes are the float64 ones of the states (computed here without the
    probes), finite and with no reason; in float32 the change was inf and the reason said the states
    were not finite."""
    from attnphys.probes import adapter_for, metrics
    from tests.probes.test_probes import SENTENCES, CharTokenizer

    tok = CharTokenizer()
    model = _gpt2(2, mlp_gain=1e14)
    enc = tok(SENTENCES[:2])
    mask = enc["attention_mask"].bool()
    ref, new = _without_norms(model, enc)
    a, b = (x[mask].double().numpy() for x in (ref.last_hidden_state, new.last_hidden_state))
    assert all(np.isfinite(h[mask].numpy()).all() for h in (*ref.hidden_states, *new.hidden_states))
    assert np.abs(b).max() > 1e20  # finite, with squared norms beyond float32's range
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    res = metrics.swap_normalization(model, tok, SENTENCES[:2], adapter_for(model), kinds=("none",))
    np.testing.assert_allclose(res["token_cosine"][0], np.mean(np.sum(a * b, 1) / (na * nb)), rtol=1e-6)
    np.testing.assert_allclose(res["relative_change"][0], np.mean(np.linalg.norm(b - a, axis=1) / na), rtol=1e-6)
    assert res["reason"][0] == ""


@pytest.mark.slow
def test_a_model_without_norms_that_diverges_says_from_which_hidden_state():
    """Eleven wide-initialised layers without norms: the states stop being finite, the numbers are NaN and
    the reason names the first hidden state that is not finite (found here without the probes)."""
    from attnphys.probes import adapter_for, metrics
    from tests.probes.test_probes import SENTENCES, CharTokenizer

    tok = CharTokenizer()
    model = _gpt2(11, std=1.0)
    enc = tok(SENTENCES[:4])
    mask = enc["attention_mask"].bool()
    ref, new = _without_norms(model, enc)
    assert all(np.isfinite(h[mask].numpy()).all() for h in ref.hidden_states)
    first = next(j for j, h in enumerate(new.hidden_states) if not np.isfinite(h[mask].numpy()).all())
    res = metrics.swap_normalization(model, tok, SENTENCES[:4], adapter_for(model), kinds=("none",))
    assert np.isnan(res["token_cosine"][0])
    assert f"not finite from hidden state {first} on" in res["reason"][0] and "'none'" in res["reason"][0]


def test_the_default_swaps_are_the_registered_norms_that_can_run_on_the_model(monkeypatch):
    """Read from each norm's class: a cloud-wise norm registered in this process is a default swap of an
    encoder and not of a decoder; asked for on a decoder it is not run, the reason naming it and its class."""
    from typing import ClassVar

    import attnphys.clouds.norms as norms
    from attnphys.clouds.norms import AbstractNorm, norm_names
    from attnphys.probes import metrics

    class Centering(AbstractNorm):
        name: ClassVar[str] = "h5_center"
        tokenwise: ClassVar[bool] = False

        def __call__(self, X):
            return X - X.mean(0)

    norms.register_norm(Centering)  # forgotten after the test (tests/conftest.py)
    assert metrics.default_swaps(False) == tuple(norm_names()) and "h5_center" in norm_names()
    causal = metrics.default_swaps(True)
    assert "h5_center" not in causal and "rn" not in causal and {"rmsnorm", "sphere", "none"} <= set(causal)
    assert not metrics.causal_safe("h5_center") and metrics.causal_safe("sphere")
    why = metrics.not_causal_reason("h5_center")
    assert "'h5_center'" in why and "Centering" in why and "tokenwise = False" in why
    fake_entry_points(monkeypatch, {"attnphys.norms": [("h5_broken", "h5_no_such_module:Norm")]})
    with pytest.warns(ExtensionWarning, match="'h5_broken'.*ModuleNotFoundError"):
        assert metrics.default_swaps(True) == causal  # a broken outside norm: left out, said, nothing breaks


def test_a_decoders_default_swaps_leave_the_cloud_wise_norms_out_and_say_why():
    from attnphys.probes import adapter_for, metrics
    from tests.probes.test_probes import SENTENCES, CharTokenizer, tiny

    model = tiny("gpt2")
    res = metrics.swap_normalization(model, CharTokenizer(), SENTENCES[:3], adapter_for(model))
    assert res["kinds"] == list(metrics.default_swaps(True)) and np.isfinite(res["token_cosine"]).all()
    assert set(res["not_run"]) == {"rn", "diagonal_rn"} and all("not run" in w for w in res["not_run"].values())
    asked = metrics.swap_normalization(model, CharTokenizer(), SENTENCES[:3], adapter_for(model), kinds=("rn",))
    assert np.isnan(asked["token_cosine"][0]) and asked["reason"][0].startswith("'rn'")  # refused, by name
    with pytest.raises(ValueError, match="unknown normalization 'nope'"):
        metrics.swap_normalization(model, CharTokenizer(), SENTENCES[:3], adapter_for(model), kinds=("nope",))


# -- 2. one broken or colliding plugin never takes the commands down ----------------------------------------


@pytest.fixture
def broken_variant(tmp_path, monkeypatch):
    """An outside variant whose module fails on import, found through a (fake) entry point."""
    pkg = tmp_path / "h5broken"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('raise ImportError("this plugin is broken")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    fake_entry_points(monkeypatch, {"attnphys.model_variants": [("h5broken", "h5broken:Config")]})

    yield
    sys.modules.pop("h5broken", None)


def test_a_broken_variant_plugin_is_skipped_when_the_commands_are_built(broken_variant):
    """The dmft commands' options are built at import from every variant: a broken one is skipped with a
    warning naming it and its error, and the options are the same as without it."""
    with warnings.catch_warnings():  # the commands' own import, if this is the first
        warnings.simplefilter("ignore", ExtensionWarning)
        from attnphys.dmft._commands import _options

    spec = importlib.util.spec_from_file_location("h5_fresh_options", Path(_options.__file__))
    fresh = importlib.util.module_from_spec(spec)
    with pytest.warns(ExtensionWarning, match=r"h5broken.*this plugin is broken"):
        spec.loader.exec_module(fresh)  # what importing the commands does, with the broken plugin installed
    assert fresh.BATCHED_ANY == _options.BATCHED_ANY


def test_a_broken_variant_plugin_breaks_no_unrelated_command_and_is_named_when_asked_for(broken_variant, tmp_path):
    from typer.testing import CliRunner

    from attnphys.cli import app
    from attnphys.dmft import variant_class, variant_names

    runner = CliRunner()
    assert "h5broken" in variant_names()  # listed without importing it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtensionWarning)
        r = runner.invoke(app, ["dmft", "presets"])
    assert r.exit_code == 0, r.output
    with pytest.raises(ExtensionError, match=r"'h5broken'.*h5broken:Config.*ImportError: this plugin is broken"):
        variant_class("h5broken")
    out = tmp_path / "x.zarr"
    r = runner.invoke(app, ["dmft", "trajectory", "--variant", "h5broken", "--steps", "5", "--out", str(out)])
    assert r.exit_code != 0 and "this plugin is broken" in r.output and "Traceback" not in r.output


def test_two_outside_plugins_giving_one_name_to_two_objects_are_both_skipped(monkeypatch):
    from attnphys.clouds.norms import NORMS

    group = "attnphys.norms"
    fake_entry_points(
        monkeypatch,
        {group: [("h5twin", "attnphys.clouds.norms.rn:RN"), ("h5twin", "attnphys.clouds.norms.sphere:Sphere")]},
    )
    with pytest.warns(ExtensionWarning, match=r"'h5twin'.*2 objects.*rn:RN.*sphere:Sphere"):
        assert "h5twin" not in NORMS.names()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtensionWarning)
        assert NORMS.get("h5twin") is None
    fake_entry_points(monkeypatch, {group: [("h5same", "attnphys.clouds.norms.rn:RN")] * 2})
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExtensionWarning)  # one package seen twice is one member, no warning
        assert "h5same" in NORMS.names()


def test_loading_every_member_skips_the_broken_ones(monkeypatch, tmp_path):
    from attnphys._plugins import BUILTINS
    from attnphys.clouds.norms import NORMS

    group = "attnphys.norms"
    fake_entry_points(
        monkeypatch,
        {group: [("h5missing", "h5_no_such_module:Norm"), ("h5sphere", "attnphys.clouds.norms.sphere:Sphere")]},
    )
    with pytest.warns(ExtensionWarning, match=r"'h5missing'.*ModuleNotFoundError"):
        got = NORMS.loaded()
    assert list(got) == [*BUILTINS[group], "h5sphere"] and got["h5sphere"].__name__ == "Sphere"


# -- 3. a new defaulted field leaves the stores written before it resumable ---------------------------------


def _store_variants():
    """The same variant before and after a defaulted batched field (``gain_out``, 1 by default: the old
    map) was added to it."""
    from typing import Any, ClassVar, Literal

    from pydantic import Field

    from attnphys.dmft import DMFTConfig, DMFTModel
    from attnphys.dmft.config import BATCHED

    class Before(DMFTConfig):
        variant: Literal["h5store"] = "h5store"

    class GainModel(DMFTModel):
        def scalars(self, points=None, n=None):
            points = dict(points or {})
            gain = points.pop("gain_out", None)
            if gain is not None:
                n = max(np.size(gain), n or 1)
            sc = super().scalars(points, n)
            g = np.asarray(self.config.gain_out if gain is None else gain, np.float64)
            return sc._replace(gain_o=sc.gain_o * np.broadcast_to(g, np.shape(sc.gain_o)))

    class After(DMFTConfig):
        variant: Literal["h5store"] = "h5store"
        model: ClassVar[Any] = GainModel
        gain_out: float = Field(default=1.0, gt=0, description="factor of the output gain")

        @classmethod
        def batched_fields(cls):
            return BATCHED + ("gain_out",)

    return Before, After


def test_a_store_written_before_a_new_defaulted_field_resumes_bit_for_bit(tmp_path, monkeypatch):
    import attnphys.dmft._variant as variant
    import attnphys.sweeps.engine as engine
    from attnphys.dmft.tasks import TrajectoryTask
    from attnphys.sweeps import Axis, Grid, StoreMismatchError, Sweep, done_mask, run_sweep

    Before, After = _store_variants()
    variant.register_variant(Before)
    grid = Grid(axes=(Axis(name="beta_o", values=(0.6, 1.2, 1.8, 2.4)),), chunk=1)

    def sweep(cfg):
        return Sweep(grid=grid, task=TrajectoryTask(config=cfg, steps=30, start="token"))

    whole = run_sweep(sweep(Before()), tmp_path / "whole.zarr", progress=False)
    path = tmp_path / "s.zarr"
    real = engine.run_chunk

    def interrupted(definition, store, i):
        if i == 2:
            raise KeyboardInterrupt
        return real(definition, store, i)

    monkeypatch.setattr(engine, "run_chunk", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(sweep(Before()), path, progress=False)
    monkeypatch.setattr(engine, "run_chunk", real)
    assert done_mask(path).tolist() == [True, True, False, False]
    assert (
        "gain_out"
        not in json.loads(json.loads((path / "zarr.json").read_text())["attributes"]["sweep"])["task"]["config"]
    )

    del variant.VARIANTS["h5store"]  # the new version of the variant: a defaulted field more
    variant.register_variant(After)
    with pytest.raises(StoreMismatchError, match=r"task\.config\.gain_out: store has 1\.0, this run 2\.0"):
        run_sweep(sweep(After(gain_out=2.0)), path, progress=False)  # another value: another sweep
    resumed = run_sweep(sweep(After()), path, progress=False)
    assert done_mask(path).all()
    for name in whole.data_vars:
        np.testing.assert_array_equal(resumed[name].values, whole[name].values, err_msg=name)


def test_a_variants_own_batched_field_is_continued_like_the_papers(monkeypatch):
    """``params_of`` reads the batched fields from the configuration class and the scalars from the model:
    a field a variant adds is continued too, and its scalars at s are the model's own; the paper's gain and
    ε come out bit for bit, γ to rounding."""
    import jax.numpy as jnp

    import attnphys.dmft._variant as variant
    from attnphys.dmft import preset
    from attnphys.dmft.model import model_of

    _, After = _store_variants()
    variant.register_variant(After)
    model = model_of(After())
    for s in (0.5, 1.7):
        _, sc = model.params_of("gain_out")(jnp.asarray(s))
        ref = model.scalars({"gain_out": [s]})
        for got, want in zip(sc, ref):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want)[0], rtol=1e-15)
    paper = model_of(preset("paper"))
    for field in ("beta_o", "epsilon", "beta_att"):
        for s in (0.3, 1.234567, 2.9):
            _, sc = paper.params_of(field)(jnp.asarray(s))
            ref = [np.asarray(x)[0] for x in paper.scalars({field: [s]})]
            if field == "beta_att":
                np.testing.assert_allclose(np.asarray(sc), np.asarray(ref), rtol=4e-16)
            else:
                np.testing.assert_array_equal(np.asarray(sc), np.asarray(ref))
    with pytest.raises(ValueError, match="no continuation along 'M'.*beta_o, beta_att, epsilon"):
        paper.params_of("M")


# -- 4. a probe claim in one new file and one registry line -------------------------------------------------


CLAIM_FILE = textwrap.dedent('''
    """A claim in one file: the layer's index is not negative (every layer supports it)."""

    import math

    from attnphys.probes.claims import Claim, Outcome, register_claim


    def _layer_index(ev, layer):
        return Outcome(float(layer), 10.0, 1e-9, math.inf)


    register_claim(
        "h5_layer_index",
        Claim("the layer's index is | not negative", "the index", "a negative index", "none needed", False,
              _layer_index),
    )
''')


@pytest.mark.slow
def test_the_claims_registry_is_complete_by_itself():
    """Importing the registry alone gives every claim of the library (those defined in other modules
    included): nothing else needs importing first."""
    code = "from attnphys.probes.claims import CLAIMS; print(','.join(CLAIMS))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert {"collapse_shape", "beta_grows_with_length", "mlp_affine"} <= set(out.strip().split(","))


@pytest.fixture
def new_claim_file(tmp_path, monkeypatch):
    """A claim in one new file, listed in one line of the registry (:data:`CLAIM_MODULES`), loaded the way
    importing the registry loads it; the registry as it was afterwards."""
    import attnphys.probes.claims as claims

    (tmp_path / "h5claims").mkdir()
    (tmp_path / "h5claims" / "__init__.py").write_text("")
    (tmp_path / "h5claims" / "layer_index.py").write_text(CLAIM_FILE)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = claims.CLAIMS  # what the file registers is forgotten after the test (tests/conftest.py)
    monkeypatch.setattr(claims, "CLAIM_MODULES", (*claims.CLAIM_MODULES, "h5claims.layer_index"))  # the one line
    monkeypatch.delitem(sys.modules, "h5claims.layer_index", raising=False)
    claims._load_claim_modules()  # what importing the registry does
    yield registry
    sys.modules.pop("h5claims.layer_index", None)


def test_a_claim_in_one_new_file_listed_once_is_in_the_registry_its_tests_and_the_table(new_claim_file, hook):
    from types import SimpleNamespace

    from attnphys.probes.claims import Evidence, evaluate_claims

    assert list(new_claim_file)[-1] == "h5_layer_index"
    ev = Evidence(SimpleNamespace(n_layers=3), {}, {}, {}, {})
    res = evaluate_claims(ev, {"h5_layer_index": new_claim_file["h5_layer_index"]})
    np.testing.assert_array_equal(res["statistic"][0], [0.0, 1.0, 2.0])
    assert res["supported"].all()
    page = (ROOT / "docs" / "theory" / "probes.md").read_text(encoding="utf-8")
    assert "{probe_claims}" in page and "| attention + residual expands |" not in page  # no hand-written row
    table = hook.fill(page)
    assert r"| the layer's index is \| not negative | the index | a negative index | none needed | no |" in table
    for c in new_claim_file.values():
        assert f"| {hook.cell(c.title)} | {hook.cell(c.statistic)} |" in table


@pytest.mark.slow
def test_a_claim_in_one_new_file_listed_once_runs_in_a_probe_and_its_report(new_claim_file):
    from attnphys.probes import probe
    from attnphys.probes.report import report
    from attnphys.probes.run import summary
    from tests.probes.test_probes import SENTENCES, CharTokenizer, tiny

    ds = probe(tiny("bert"), SENTENCES[:4], tokenizer=CharTokenizer(), log=lambda *a: None)
    assert list(ds.claim.values) == list(new_claim_file)
    np.testing.assert_array_equal(ds.claim_statistic.sel(claim="h5_layer_index").values, np.arange(ds.sizes["layer"]))
    assert ds.claim_supported.sel(claim="h5_layer_index").values.all()
    assert "## Claim: the layer's index is | not negative" in report(ds, summary(ds), [])


# -- 5. one escaping rule for every generated table -----------------------------------------------------------


def _cells(row: str) -> int:
    """The cells of a Markdown table row as the tables extension splits it (``|`` not escaped, outside code)."""
    import re

    body = re.sub(r"`[^`]*`", "", row.strip()[1:-1]).replace(r"\|", "")
    return body.count("|") + 1


def test_a_pipe_in_a_maps_equation_or_any_table_cell_stays_in_its_cell(monkeypatch, hook):
    from attnphys.dynamics.maps import EXAMPLES, Logistic
    from attnphys.reproduce import FIGURES
    from attnphys.reproduce.particles import ScalingFigure

    class Absolute(Logistic):
        title = "absolute | tent"
        equation = r"$x' = \mu |x|$"
        facts = r"$\lambda = \ln \mu$ where $\|x\| < 1$; code `a|b`"

    class Extra(ScalingFigure):
        name = "h5-extra"
        shows = "a figure | with a pipe"
        full_run = "one\nrun"

    monkeypatch.setitem(EXAMPLES, "h5abs", Absolute())
    monkeypatch.setitem(FIGURES, "h5-extra", Extra())
    maps = hook.example_maps().splitlines()
    row = next(line for line in maps if line.startswith("| absolute"))
    assert (
        row == r"| absolute \| tent | $x' = \mu \vert{}x\vert{}$ | $\lambda = \ln \mu$ where $\|x\| < 1$; code `a|b` |"
    )
    figures = hook.figures().splitlines()
    assert r"| `h5-extra` | a figure \| with a pipe | one run |" in figures
    for table in (maps, figures, hook.claims().splitlines(), hook.probe_claims().splitlines()):
        assert len({_cells(line) for line in table}) == 1, table  # every row has the header's cells
    assert hook.cell(r"$|a|$ and `|`, b | c") == r"$\vert{}a\vert{}$ and `|`, b \| c"

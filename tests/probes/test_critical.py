"""Heads against their critical temperature: the top-gap estimator of β_c on score laws with closed forms
(Gaussian, Laplace, exponential), the REM's entropy curve, negative controls, a tiny random model end to end
with a control, the claim's test, bad input, and the real models (slow)."""

import os

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from attnphys.errors import InputError
from attnphys.probes.critical import (
    critical_claim,
    critical_rows,
    critical_section,
    critical_temperatures,
    plot_critical,
)


def pooled_beta_c(ds) -> float:
    """Σ k / Σ E over the rows: the pooled estimate (the mean of E / k is unbiased for 1/h)."""
    return float(ds.k.sum() / ds.excess.sum())


def gaussian_beta_c(n: int, sigma: float) -> float:
    """h(u_n) of N(0, σ²): φ(u)/(σ Φ̄(u)) at u = Φ̄⁻¹(1/n) (docs/theory/critical_temperatures.md §2.3)."""
    u = stats.norm.isf(1 / n)
    return float(stats.norm.pdf(u) / stats.norm.sf(u) / sigma)


@pytest.mark.parametrize("n", [100, 1_000])
def test_gaussian_critical_beta_is_recovered_within_five_percent(n):
    sigma = 2.0
    X = np.random.default_rng(0).standard_normal((4_000_000 // n, n)) * sigma
    est = pooled_beta_c(critical_rows(X))
    assert abs(est / gaussian_beta_c(n, sigma) - 1) < 0.05
    # the asymptotic form √(2 ln n)/σ is h(u_n) to leading order only: 10–14 % above it at these n
    assert 1.08 < np.sqrt(2 * np.log(n)) / sigma / gaussian_beta_c(n, sigma) < 1.16


def test_laplace_critical_beta_is_its_rate_and_the_gaussian_formula_misses():
    lam, n = 1.5, 200  # 10⁴ rows of two gaps: the pooled estimate's relative error is 1/√(2·10⁴) = 0.7 %
    X = np.random.default_rng(1).laplace(0.0, 1 / lam, (10_000, n))
    est = pooled_beta_c(critical_rows(X))
    assert abs(est / lam - 1) < 0.05
    # negative control: the Gaussian law with the same spread (σ = √2/λ) puts β_c far off
    sigma = float(X.std())
    assert abs(gaussian_beta_c(n, sigma) / lam - 1) > 0.05
    assert abs(np.sqrt(2 * np.log(n)) / sigma / lam - 1) > 0.05
    # and the Gaussian's estimate is not the Laplace rate
    G = np.random.default_rng(2).standard_normal((10_000, n)) * sigma
    assert abs(pooled_beta_c(critical_rows(G)) / lam - 1) > 0.05


def test_exponential_tail_gaps_are_exact_ratio_unbiased_and_interval_covers():
    """For Exp(λ) scores the weighted top gaps i·(x_(i) − x_(i+1)) are i.i.d. Exp(λ) (Rényi), so E[E/k] = 1/λ
    exactly and 2λE ~ χ²_{2k}: the 95 % interval covers λ in 95 % of the rows (Monte Carlo vs exact)."""
    lam, n, rows = 0.7, 40, 20_000
    X = np.random.default_rng(3).exponential(1 / lam, (rows, n))
    ds = critical_rows(X, beta=1.0)
    assert (ds.k == 2).all() and (ds.n_keys == n).all()
    ratio = ds.ratio.values  # β E / k with β = 1: unbiased for β/λ
    se = ratio.std() / np.sqrt(rows)
    assert abs(ratio.mean() - 1 / lam) < 4 * se
    cover = float(((ds.beta_c_lo <= lam) & (lam <= ds.beta_c_hi)).mean())
    assert abs(cover - 0.95) < 4 * np.sqrt(0.95 * 0.05 / rows)
    # negative control: the interval of a wrong rate does not cover
    wrong = float(((ds.beta_c_lo <= 2 * lam) & (2 * lam <= ds.beta_c_hi)).mean())
    assert wrong < 0.8


def test_gaussian_entropy_follows_the_rem_curve_below_beta_c_and_freezes_above():
    """n = 10⁵: S/ln n = 1 − (β/β_c)² with β_c = √(2 ln n)/σ within 0.02 for β ≤ 0.6 β_c (below β_c/√2, where
    the partition sum is self-averaging; docs/theory/critical_temperatures.md §3.4); above β_c the row is
    frozen (S of order one, a small share of ln n)."""
    n, sigma = 100_000, 1.5
    X = np.random.default_rng(4).standard_normal((20, n)) * sigma
    bc = np.sqrt(2 * np.log(n)) / sigma
    for r in (0.3, 0.6):
        S = float(critical_rows(X, beta=r * bc).entropy.mean())
        assert abs(S - (1 - r**2)) < 0.02, (r, S)
        # negative control: the Laplace law's curve (S/ln n → 1 below β_c) misses
        assert abs(S - 1.0) > 0.05
    frozen = critical_rows(X, beta=2.0 * bc)  # a few nats at most, against ln n = 11.5
    assert float(frozen.entropy.mean()) < 0.2


def test_laplace_row_is_liquid_below_its_rate_and_frozen_above():
    lam, n = 1.0, 10_000
    X = np.random.default_rng(5).laplace(0.0, 1 / lam, (50, n))
    assert float(critical_rows(X, beta=0.5 * lam).entropy.mean()) > 0.9
    assert float(critical_rows(X, beta=3.0 * lam).entropy.mean()) * np.log(n) < 2.0


def test_rows_of_different_lengths_share_one_array():
    """A causal row i sees i + 1 keys: −inf (or NaN) marks the rest; each row is estimated on its own keys."""
    rng = np.random.default_rng(6)
    n = 6
    S = rng.standard_normal((n, n))
    S[np.triu_indices(n, 1)] = -np.inf
    ds = critical_rows(S)
    assert ds.n_keys.values.tolist() == list(range(1, n + 1))
    assert ds.k.values.tolist() == [0, 1, 2, 2, 2, 2]
    assert np.isnan(ds.ratio.values[0]) and str(ds.reason.values[0]) == "one key: no gap"
    for i in range(1, n):
        row = np.sort(S[i, : i + 1])[::-1]
        k = min(2, i)
        assert np.isclose(ds.excess.values[i], np.sum(row[:k] - row[k]))
        p = np.exp(row - row.max())
        p /= p.sum()
        assert np.isclose(ds.entropy.values[i], -(p * np.log(p)).sum() / np.log(i + 1))
    T = S.copy()
    T[np.isinf(T)] = np.nan
    xr.testing.assert_allclose(critical_rows(T)[["ratio", "entropy"]], ds[["ratio", "entropy"]])
    assert critical_rows(S[None], dims=("sentence", "query")).ratio.dims == ("sentence", "query")


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: critical_rows("abc"), "scores"),
        (lambda: critical_rows(np.array([[1.0, np.inf]])), "scores"),
        (lambda: critical_rows(np.zeros(0)), "scores"),
        (lambda: critical_rows(np.zeros((2, 3)), k=0), "k"),
        (lambda: critical_rows(np.zeros((2, 3)), k=1.5), "k"),
        (lambda: critical_rows(np.zeros((2, 3)), beta=-1.0), "beta"),
        (lambda: critical_rows(np.zeros((2, 3)), confidence=1.0), "confidence"),
        (lambda: critical_rows(np.zeros((2, 3)), dims=("a", "b")), "dims"),
        (lambda: critical_claim(xr.Dataset()), "ds"),
        (lambda: critical_section(xr.Dataset()), "ds"),
        (lambda: critical_temperatures(object(), ["one sentence"], tokenizer=object()), "sentences"),
        (lambda: critical_temperatures(object(), [1, 2], tokenizer=object()), "sentences"),
        (lambda: critical_temperatures(object(), ["a", "b"], tokenizer=object(), control="bogus"), "control"),
        (lambda: critical_temperatures(object(), ["a", "b"], tokenizer=object(), n_boot=0), "n_boot"),
    ],
)
def test_bad_input_names_the_field(call, field):
    with pytest.raises(InputError) as e:
        call()
    assert e.value.field == field and str(e.value).startswith(f"{field}: ")


def _placed(ratios: dict) -> xr.Dataset:
    """A critical_temperatures-shaped dataset with the given (layer, head) ratios per model."""
    models = list(ratios)
    r = np.stack([np.asarray(v, float) for v in ratios.values()])[:, None]
    return xr.Dataset(
        {"ratio": (("model", "keys", "layer", "head"), r)},
        coords={"model": models, "keys": ["all"], "layer": np.arange(r.shape[2]), "head": np.arange(r.shape[3])},
    )


def test_claim_is_supported_when_trained_heads_are_nearer_and_not_otherwise():
    rng = np.random.default_rng(7)
    near = np.exp(rng.normal(0, 0.2, (6, 12)))  # |ln ρ| ≈ 0.16
    far = np.exp(rng.normal(-1.5, 0.3, (6, 12)))  # ρ ≈ 0.22: hot
    res = critical_claim(_placed({"trained": near, "random": far}))
    assert int(res.supported.sel(control="random", keys="all")) == 1
    assert float(res.df.sel(control="random", keys="all")) > 60  # heads are the units: 72 + 72 of them
    assert float(res.heads_trained.sel(control="random", keys="all")) == 72
    # negative control: the same heads as their own control, and the roles swapped, are not supported
    same = critical_claim(_placed({"trained": near, "random": near}))
    assert int(same.supported.sel(control="random", keys="all")) == 0
    swapped = critical_claim(_placed({"trained": far, "random": near}))
    assert int(swapped.supported.sel(control="random", keys="all")) == 0
    assert float(swapped.p.sel(control="random", keys="all")) > 0.99
    assert "not nearer" in str(swapped.reason.sel(control="random", keys="all").values)


def test_claim_needs_a_control():
    with pytest.raises(InputError, match="at least one control"):
        critical_claim(_placed({"trained": np.ones((2, 2))}))


transformers = pytest.importorskip("transformers")


def _check(ds, n_layers: int, n_heads: int, models: list[str]):
    assert ds.ratio.dims == ("model", "keys", "layer", "head")
    assert ds.ratio.shape == (len(models), 2, n_layers, n_heads)
    assert ds.model.values.tolist() == models
    assert np.isfinite(ds.ratio.sel(keys="all").values).all()
    lo, hi, r = ds.ratio_lo.values, ds.ratio_hi.values, ds.ratio.values
    ok = np.isfinite(r)
    assert (lo[ok] <= hi[ok]).all()
    # a percentile interval need not hold its point estimate, but nearly always does
    assert np.mean((lo[ok] <= r[ok] * (1 + 1e-9)) & (r[ok] <= hi[ok] * (1 + 1e-9))) >= 0.9
    np.testing.assert_allclose(ds.beta_c.values[ok] * r[ok], 1.0)
    ent = ds.entropy.values[ok]
    assert ((ent >= 0) & (ent <= 1 + 1e-9)).all()
    assert ds.attrs["beta"] == 1.0 and "attnphys_version" in ds.attrs
    assert ds.claim_df.dims == ("control", "keys") and np.isfinite(ds.claim_p.sel(keys="all").values).all()


def test_tiny_random_llama_is_placed_end_to_end_with_a_control():
    from tests.probes.test_probes import SENTENCES, CharTokenizer, tiny

    model = tiny("llama")
    ds = critical_temperatures(model, SENTENCES, tokenizer=CharTokenizer(), control="random", n_boot=50, seed=3)
    _check(ds, 2, 4, ["trained", "random"])
    # causal: the query at position i has i + 1 keys, so every sentence of n tokens gives n − 1 rows
    lengths = [len(s[:62]) + 2 for s in SENTENCES]
    assert (ds.rows.sel(keys="all").values == sum(n - 1 for n in lengths)).all()
    assert ds.attrs["causal"] == 1
    text = critical_section(ds, "all")
    assert "| layer | trained | random |" in text and "df =" in text
    ax = plot_critical(ds, keys="all")
    assert ax.get_ylabel() == "β / β_c"


def test_tiny_random_bert_sees_every_key(monkeypatch):
    from attnphys.probes import critical
    from tests.probes.test_probes import SENTENCES, CharTokenizer, tiny

    model = tiny("bert")
    ds = critical_temperatures(model, SENTENCES[:4], tokenizer=CharTokenizer(), control=None, n_boot=20)
    lengths = [len(s[:62]) + 2 for s in SENTENCES[:4]]
    assert (ds.rows.sel(keys="all").values == sum(lengths)).all()
    assert "claim_p" not in ds and ds.model.values.tolist() == ["trained"]
    # placing the sentences in blocks changes nothing
    monkeypatch.setattr(critical, "SENTENCE_BLOCK", 3)
    again = critical_temperatures(model, SENTENCES[:4], tokenizer=CharTokenizer(), control=None, n_boot=20)
    xr.testing.assert_allclose(
        again[["ratio", "ratio_lo", "ratio_hi", "entropy"]], ds[["ratio", "ratio_lo", "ratio_hi", "entropy"]]
    )


@pytest.mark.slow
def test_minilm_heads_are_placed():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    ds = critical_temperatures("minilm", max_sentences=16, n_boot=200)
    _check(ds, 6, 12, ["trained", "random", "shuffled"])
    assert np.isfinite(ds.ratio.sel(keys="no_sinks").values).all()
    assert ds.claim_supported.shape == (2, 2)


@pytest.mark.slow
@pytest.mark.long
def test_smollm2_heads_are_placed():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    ds = critical_temperatures("smollm2", max_sentences=8, n_boot=200)
    _check(ds, 30, 9, ["trained", "random", "shuffled"])
    assert ds.attrs["causal"] == 1


def test_sink_columns_are_removed_from_every_row(monkeypatch):
    """With the first position flagged a sink, a causal row i keeps i keys: rows 0 and 1 drop out (none or
    one key left), so a sentence of n tokens gives n − 2 rows without the sinks and n − 1 with them."""
    from attnphys.probes import sinks
    from tests.probes.test_probes import SENTENCES, CharTokenizer, tiny

    real = sinks.find_sinks

    def first_is_sink(cap, *a, **kw):
        out = real(cap, *a, **kw)
        out["sink"] = out["attention_sink"] = np.asarray(cap.position) == 0
        return out

    monkeypatch.setattr(sinks, "find_sinks", first_is_sink)
    ds = critical_temperatures(tiny("llama"), SENTENCES[:4], tokenizer=CharTokenizer(), control=None, n_boot=10)
    lengths = [len(s[:62]) + 2 for s in SENTENCES[:4]]
    assert (ds.rows.sel(keys="all").values == sum(n - 1 for n in lengths)).all()
    assert (ds.rows.sel(keys="no_sinks").values == sum(n - 2 for n in lengths)).all()
    assert not np.allclose(ds.ratio.sel(keys="all").values, ds.ratio.sel(keys="no_sinks").values)

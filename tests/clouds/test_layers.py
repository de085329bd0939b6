"""Every normalization class, attention without residual, ensembles, untied layers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.clouds import (
    ENSEMBLES,
    NORMS,
    attention_no_residual,
    initial_cloud,
    layer_weights,
    run_cloud,
    untied_layers,
)


@pytest.mark.parametrize("name", sorted(NORMS))
def test_every_norm_class_keeps_the_contract_it_declares(name):
    """The interface's class attributes (``tokenwise``, ``standardizes``, ``idempotent``) are what the
    checks read: a new normalization is held to what it declares, not to what the built-ins happen to do."""
    cls = NORMS[name]
    assert all(isinstance(getattr(cls, a), bool) for a in ("tokenwise", "standardizes", "idempotent")), name
    X = jnp.asarray(np.random.default_rng(0).normal(size=(300, 5)) * [1, 2, 0.5, 3, 1] + 0.4)
    Y = cls()(X)
    assert cls.name == name and Y.shape == X.shape and Y.dtype == X.dtype and bool(jnp.all(jnp.isfinite(Y)))
    if cls.idempotent:
        np.testing.assert_allclose(cls()(Y), Y, rtol=1e-4, atol=1e-5)
    if cls.tokenwise:  # acts on each token alone: the same result on any sub-cloud
        np.testing.assert_allclose(cls()(X[:7]), Y[:7], atol=1e-12)
    else:  # a cloud-wise norm: a sub-cloud is normalized with its own statistics
        assert not np.allclose(cls()(X[:7]), Y[:7], atol=1e-6)
    if cls.standardizes:  # zero mean, unit per-feature variance over the cloud
        np.testing.assert_allclose(Y.mean(0), 0, atol=1e-10)
        np.testing.assert_allclose(Y.var(0), 1, rtol=1e-8)
    else:  # says so: the cloud's statistics are not those of a standardized one
        assert not (np.allclose(Y.mean(0), 0, atol=1e-6) and np.allclose(Y.var(0), 1, rtol=1e-6))


def test_the_clouds_command_offers_every_registered_norm(monkeypatch):
    """The command's help lists the registry's names (read without importing JAX) and its validation
    accepts every registered normalization, one added at run time too."""
    from attnphys.clouds import Identity
    from attnphys.clouds.jobs import CloudsRunJob

    from typer.testing import CliRunner

    from attnphys.cli import app

    shown = " ".join(CliRunner().invoke(app, ["clouds", "run", "--help"], terminal_width=400).output.split())
    assert all(n in shown for n in NORMS)

    class Twice(Identity):
        name = "twice"

    NORMS.register(Twice)  # forgotten after the test (tests/conftest.py)
    assert CloudsRunJob(norm="twice").norm == "twice"
    with pytest.raises(ValueError, match="twice"):  # the refusal lists the registry, the new name included
        CloudsRunJob(norm="thrice")


def test_attention_without_residual_collapses_to_the_weighted_mean():
    X = initial_cloud("gaussian", 64, 4, seed=1, dtype=jnp.float64)
    np.testing.assert_allclose(attention_no_residual(X, beta=0.0), jnp.broadcast_to(X.mean(0), X.shape), atol=1e-12)
    P = jax.nn.softmax(0.5 * X @ X.T, axis=-1)
    np.testing.assert_allclose(attention_no_residual(X, beta=0.5), P @ X, atol=1e-12)  # each token a weighted mean
    diam = []
    Y = X
    for _ in range(30):
        diam.append(float(jnp.max(jnp.linalg.norm(Y[:, None] - Y[None], axis=-1))))
        Y = attention_no_residual(Y, beta=0.5)
    assert np.all(np.diff(diam) <= 1e-12) and diam[-1] < 1e-6 * diam[0]


@pytest.mark.parametrize("name", sorted(ENSEMBLES))
def test_ensembles_have_entry_variance_one_over_d(name):
    ens = ENSEMBLES[name]()
    W = ens.sample(jax.random.PRNGKey(0), (20,), 64)
    assert W.shape == (20, 64, 64) and ens.name == name
    off = np.asarray(W)[:, ~np.eye(64, dtype=bool)]
    assert np.var(off) * 64 == pytest.approx(1.0, rel=0.05)
    if name == "goe":
        np.testing.assert_allclose(W, jnp.swapaxes(W, 1, 2))
        assert np.max(np.abs(np.linalg.eigvalsh(np.asarray(W)))) == pytest.approx(2.0, abs=0.3)


@pytest.mark.slow
def test_weights_resampled_every_n_layers_and_untied_iteration():
    W = layer_weights(ENSEMBLES["gaussian"](), jax.random.PRNGKey(1), 7, 2, 3, resample_every=3)
    assert W.shape == (7, 2, 3, 3)
    assert bool(jnp.all(W[0] == W[2])) and not bool(jnp.all(W[2] == W[3])) and bool(jnp.all(W[3] == W[5]))
    tied = layer_weights(ENSEMBLES["gaussian"](), jax.random.PRNGKey(1), 4, 1, 3, resample_every=0)
    assert bool(jnp.all(tied == tied[0]))
    X0 = initial_cloud("sphere", 20, 3, dtype=jnp.float64)
    Ws = layer_weights(ENSEMBLES["goe"](), jax.random.PRNGKey(2), 6, 1, 3, resample_every=1)
    layer = untied_layers("sphere", 2.0, Ws)
    ds = run_cloud(X0, layer, layers=6, stats_every=3)
    X = X0
    for l in range(6):
        X = layer(X, l)
    np.testing.assert_allclose(run_cloud(X0, layer, 6, 6, snapshots=(6,)).snapshot.values[0], X, atol=1e-12)
    assert ds.sizes["layer"] == 3

"""The contracts the attention and ensemble interfaces declare (class attributes), checked on every registered
implementation (theory: docs/theory/particles.md §2, docs/theory/clouds.md §6.3)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphys.clouds.attention import ATTENTIONS
from attnphys.clouds.ensembles import ENSEMBLES


def _cloud(n=9, d=4, seed=0):
    return jnp.asarray(np.random.default_rng(seed).normal(size=(n, d)), jnp.float64)


@pytest.mark.parametrize("name", sorted(ATTENTIONS))
def test_every_attention_keeps_its_declared_contract(name):
    cls = ATTENTIONS[name]
    X = _cloud()
    Q = jnp.asarray(np.random.default_rng(1).normal(size=(2, 4, 4)) / 2)
    op = cls(beta=0.7, Q=Q)
    P = op.weights(X)
    assert P.shape == (2, 9, 9) and bool(jnp.all(P >= 0))
    out = op(X)
    assert out.shape == X.shape and out.dtype == X.dtype
    rows, cols = np.asarray(P.sum(-1)), np.asarray(P.sum(-2))
    assert np.allclose(rows, 1, atol=1e-10) == cls.rows_sum_to_one  # declared, and not by chance
    assert np.allclose(cols, 1, atol=1e-6) == cls.columns_sum_to_one
    if cls.takes_causal_mask:
        Pc = cls(beta=0.7, Q=Q, causal=True).weights(X)
        assert float(jnp.abs(jnp.triu(Pc, 1)).max()) == 0.0  # no weight on a later token
        if cls.rows_sum_to_one:
            np.testing.assert_allclose(Pc.sum(-1), 1, atol=1e-10)
    else:
        with pytest.raises(ValueError):
            cls(beta=0.7, causal=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ENSEMBLES))
def test_every_ensemble_keeps_its_declared_contract(name):
    cls = ENSEMBLES[name]
    D, batch = 48, (3, 4)
    W = cls().sample(jax.random.PRNGKey(0), batch, D, jnp.float64)
    assert W.shape == (*batch, D, D) and W.dtype == jnp.float64
    assert cls().sample(jax.random.PRNGKey(0), (1,), 8, jnp.float32).dtype == jnp.float32
    off = np.asarray(W)[..., ~np.eye(D, dtype=bool)]
    n = off.size
    # mean 0 and D·variance as declared: both within five standard errors of the sample (n = 27,072 entries;
    # the entries of one matrix are not all independent for goe and pm_kq, so the bound on the variance is 10 %)
    assert abs(off.mean()) < 5 * np.sqrt(cls.entry_variance / D / n)
    assert abs(D * off.var() / cls.entry_variance - 1) < 0.1
    assert bool(jnp.allclose(W, jnp.swapaxes(W, -1, -2))) == cls.symmetric

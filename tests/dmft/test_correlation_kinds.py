"""Properties every correlation kind must have (parametrised over all kinds: a new kind gets them)."""

import tempfile

import numpy as np
import pytest

from attnphys.dmft import AbstractCorrelations, DMFTConfig
from attnphys.dmft.correlations import moments_from_weights, sign_matrix
from attnphys.dmft.meanfield import couplings, scalars, semantic_overlap
from tests.dmft.reference import brute_semantic

KINDS = sorted(AbstractCorrelations.__subclasses__(), key=lambda c: c.__name__)
M, N_SE, P = 3, 40, 2


@pytest.fixture(params=KINDS, ids=[k.__name__ for k in KINDS])
def kind(request, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # an example's files go to the test's directory
    return request.param.example()


def test_shapes_and_ranges(kind):
    corr = kind.build(M, N_SE, P)
    assert corr.C.shape == (4, 2 ** (M - 1), M) and corr.W_pe.shape == (4, M, P)
    assert np.all(np.abs(corr.C) <= 1.0 + 1e-12)  # moments of ±1 variables
    np.testing.assert_allclose(corr.K, np.einsum("sB,xBa->xsa", sign_matrix(M), corr.C))


def test_deterministic(kind):
    a, b = kind.build(M, N_SE, P), kind.build(M, N_SE, P)
    np.testing.assert_array_equal(a.C, b.C)
    np.testing.assert_array_equal(a.W_pe, b.W_pe)


def test_explicit_weights_give_the_moments_and_the_mean_field(kind):
    """Where a kind has explicit weights: its moments are theirs, and the odd-subset identity equals the
    brute-force site average of the mean-field overlaps."""
    W = kind.explicit_weights(M, N_SE, P)
    if W is None:
        pytest.skip(f"{type(kind).__name__} has moments only")
    corr = kind.build(M, N_SE, P)
    np.testing.assert_allclose(moments_from_weights(W, N_SE), corr.C, atol=1e-15)
    cfg = DMFTConfig(M=M, n_se=N_SE, P=P, L=4, correlations=kind.model_dump())
    A = np.random.default_rng(0).uniform(-1, 1, M)
    got = semantic_overlap(couplings(corr), scalars(cfg, beta_o=1.3, epsilon=0.05), A)
    np.testing.assert_allclose(got, brute_semantic(W, N_SE, 1.3, 0.05, A), atol=1e-14)


def test_round_trips_through_a_configuration(kind):
    cfg = DMFTConfig(M=M, n_se=N_SE, P=P, L=4, correlations=kind.model_dump())
    assert DMFTConfig.model_validate_json(cfg.model_dump_json()) == cfg
    np.testing.assert_array_equal(cfg.build_correlations().C, kind.build(M, N_SE, P).C)

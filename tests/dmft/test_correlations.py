import json

import numpy as np
import pytest

from attnphys.dmft import preset
from attnphys.dmft.correlations import (
    Correlations,
    gaussian_correlations,
    odd_subsets,
    paper_segment_weights,
    random_weights,
    sign_matrix,
    sign_vectors,
)
from attnphys.dmft.meanfield import couplings, scalars, semantic_overlap
from tests.dmft.reference import brute_semantic


@pytest.fixture(scope="module")
def published(data_dir):
    return json.loads((data_dir / "dmft-paper-seed1-weights.json").read_text())


def test_seed1_weights_match_published_exactly(published):
    W = paper_segment_weights(seed=1, M=3, n_se=99, P=2, n_segments=3)["W"]
    for x, name in enumerate("ovqk"):
        key = "W" + name
        if key in published:
            np.testing.assert_array_equal(W[x], np.array(published[key]))


def test_seed1_moments_match_published_exactly(published):
    corr = preset("paper").build_correlations()
    for x, name in enumerate("ovqk"):
        assert np.array_equal(corr.pair[x], np.array(published["pair"][name]))
        assert np.array_equal(corr.C[x, 3], np.array(published["quad"][name]))


def test_seed1_segment_table_of_spec():
    # spec dmft.md §4.2: segment signs and positional columns
    W = paper_segment_weights(1, 3, 99, 2, 3)["W"]
    segs = {"o": "-++ -+- +++", "v": "-+- --+ -++", "q": "+-- --- +-+", "k": "--- --+ -+-"}
    pes = {"o": "-- +- ++", "v": "-- +- -+", "q": "+- ++ --", "k": "-- -- -+"}
    sign = {"+": 1, "-": -1}
    for x, name in enumerate("ovqk"):
        for a, (row, pe) in enumerate(zip(segs[name].split(), pes[name].split())):
            assert [W[x, a, 33 * k] for k in range(3)] == [sign[c] for c in row]
            assert list(W[x, a, 99:]) == [sign[c] for c in pe]


def test_non_divisible_segments_leave_trailing_bit_random():
    out = paper_segment_weights(1, 3, 100, 2, 3)
    W, R = out["W"], out["R"]
    np.testing.assert_array_equal(W[:, :, 99], R[:, :, 99])
    assert np.all(W[:, :, 0] == W[:, :, 32])


@pytest.mark.parametrize("M", range(1, 9))
def test_subset_and_sign_enumeration(M):
    subs = odd_subsets(M)
    assert len(subs) == 2 ** (M - 1) == len(set(subs))
    assert all(len(B) % 2 == 1 for B in subs)
    assert subs[:M] == tuple((b,) for b in range(M))
    s = sign_vectors(M)
    assert s.shape == (2 ** (M - 1), M) and np.all(s[:, 0] == 1)
    assert len({tuple(r) for r in s}) == 2 ** (M - 1)
    S = sign_matrix(M)
    # characters of odd subsets on the half-cube are orthogonal
    np.testing.assert_array_equal(S.T @ S, 2 ** (M - 1) * np.eye(2 ** (M - 1)))


def test_reference_sign_order_m3():
    np.testing.assert_array_equal(sign_vectors(3), [[1, 1, 1], [1, 1, -1], [1, -1, 1], [1, -1, -1]])
    np.testing.assert_array_equal(sign_vectors(2), [[1, 1], [1, -1]])


def _odd_subset_vs_brute(M, n_se, P, seed, beta_o=1.7, eps=0.03):
    rng = np.random.default_rng(seed)
    W = random_weights(seed, M, n_se, P)
    corr = Correlations.from_weights(W, n_se)
    cfg = preset("paper").replace(M=M, P=P, L=1, n_se=n_se, epsilon=eps if P else 0.0)
    cp = couplings(corr)
    sc = scalars(cfg, beta_o=beta_o)
    for _ in range(5):
        A = rng.normal(size=M)
        got = np.asarray(semantic_overlap(cp, sc, A))
        want = brute_semantic(W, n_se, beta_o, eps if P else 0.0, A)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-14)


@pytest.mark.parametrize("M", [1, 2, 3])
def test_odd_subset_identity_small_m(M):
    _odd_subset_vs_brute(M, n_se=257, P=2, seed=M)


@pytest.mark.parametrize("seed", range(6))
def test_odd_subset_identity_random_m_up_to_8(seed):
    M = int(np.random.default_rng(100 + seed).integers(1, 9))
    _odd_subset_vs_brute(M, n_se=500 + 37 * seed, P=seed % 3, seed=seed)


def test_odd_subset_identity_m8_explicit():
    _odd_subset_vs_brute(8, n_se=2000, P=3, seed=42)


def test_from_weights_rejects_non_binary():
    W = np.zeros((4, 2, 10))
    with pytest.raises(ValueError, match="±1"):
        Correlations.from_weights(W, 8)


def test_gaussian_correlations_structure():
    c = gaussian_correlations(seed=3, M=4, P=2, scale=0.4)
    assert np.all(np.abs(c.C) <= 1)
    np.testing.assert_array_equal(np.diag(c.pair[0]), np.ones(4))
    subs = odd_subsets(4)
    i = subs.index((0, 1, 3))
    np.testing.assert_allclose(c.C[:, i, :], c.pair[:, 0] * c.pair[:, 1] * c.pair[:, 3])
    with pytest.raises(ValueError, match="scale"):
        gaussian_correlations(0, 3, 2, float("nan"))

"""An independent, loop-based numpy implementation of the mean-field map, written from spec dmft.md §3.4
with explicit sums over sites (distinct weight columns) instead of the odd-subset identity."""

import numpy as np


def brute_semantic(W, n_se, beta_o, eps, A):
    """m^α_se,a(A) = (1-ε)/N_se Σ_i W^α_{a,i} tanh(β_o W^o_{·,i}·A): (4, M)."""
    Wse = np.asarray(W, dtype=np.float64)[:, :, :n_se]
    h = np.tanh(beta_o * (Wse[0].T @ A))  # (N_se,)
    return (1 - eps) * np.einsum("xai,i->xa", Wse, h) / n_se


def reference_run(W, n_se, P, L, beta_o, gamma, eps, A0, pe0, n0, steps, paper=True):
    """Run the map from window (A0, pe0, n0); return records dict of (steps, M) arrays."""
    W = np.asarray(W, dtype=np.float64)
    Wpe = W[:, :, n_se:]
    eps_pe = 1 - (1 - eps)
    A = [np.asarray(a, dtype=np.float64) for a in A0[:n0]]
    pe = [np.asarray(p, dtype=np.float64) for p in pe0]
    recs = {k: [] for k in ("att", "mo", "mo_se", "mv", "mq", "mk")}
    for _ in range(steps):
        m = []
        for d in range(len(A)):
            se = brute_semantic(W, n_se, beta_o, eps, A[d])
            pos = eps_pe / P * np.einsum("xap,p->xa", Wpe, pe[d]) if P else 0 * se
            m.append((se, se + pos))
        se0, m0 = m[0]
        scores = np.array([gamma * np.dot(m0[2], md[3]) for _, md in m])
        w = np.exp(scores - scores.max())
        w /= w.sum()
        att = sum(wd * md[1] for wd, (_, md) in zip(w, m))
        recs["att"].append(att)
        recs["mo"].append(m0[0])
        recs["mo_se"].append(se0[0] if paper else se0[0] / (1 - eps))
        recs["mv"].append(m0[1])
        recs["mq"].append(m0[2])
        recs["mk"].append(m0[3])
        A = [att] + A[: L - 1]
        pe = [pe[-1]] + pe[:-1]
    return {k: np.array(v) for k, v in recs.items()}

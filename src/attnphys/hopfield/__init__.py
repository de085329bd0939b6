"""Modern Hopfield networks (Ramsauer et al. 2020) and their relation to ∇ log Z
(theory: docs/theory/hopfield.md §1).

Energy E(ξ) = −β⁻¹ log Σ_j e^{β y_jᵀξ} + ½ ξᵀξ + const; update ξ ← Yᵀ softmax(β Y ξ), the CCCP step of
E, which never increases it (§2). The update is the mean map β⁻¹∇_η log Z_β of the discrete base
measure :class:`attnphys.expfam.Discrete` on the stored patterns at η = ξ (§3): the patterns are fixed,
whereas in attention + residual the support is the moving token cloud itself, and the ½ ξᵀξ term plays
the role of the residual connection.
"""

from attnphys.hopfield._network import Retrieval, energy, retrieve, update

__all__ = ["energy", "update", "retrieve", "Retrieval"]

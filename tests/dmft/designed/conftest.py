import json
from pathlib import Path

import numpy as np
import pytest

REFERENCE = Path(__file__).resolve().parents[2] / "data" / "designed"
"""Outputs of the authors' reference code for three designs at two parameter sets (3000 steps each)."""

INDEX = json.loads((REFERENCE / "index.json").read_text())
RUNS = sorted(INDEX)


def reference_run(name: str) -> tuple[dict, dict[str, np.ndarray]]:
    """(parameters, arrays) of one reference run."""
    with np.load(REFERENCE / f"{name}.npz") as z:
        return INDEX[name], {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def designed_config_of():
    from attnphys.dmft.designed import designed_config

    def make(meta: dict):
        return designed_config(
            meta["design"],
            beta_o=meta["beta_o"],
            gamma=meta["gamma_att"],
            epsilon=meta["epsilon_pe"],
            L=meta["context"],
        )

    return make

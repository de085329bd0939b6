"""The warning of census's former keyword ``n_ics`` says when it goes as the changelog does (0.2.0's
deprecated names stay until the release the changelog of 0.4.0 names)."""

import re
from pathlib import Path

import jax.numpy as jnp
import pytest

from attnphys.dynamics._census import CensusOptions, census, census_batch
from attnphys.dynamics.maps import LOGISTIC
from attnphys.errors import InputError

CHANGELOG = Path(__file__).resolve().parents[2] / "CHANGELOG.md"


def _removal_release() -> str:
    """The release in which the changelog says the 0.2.0 deprecations are removed."""
    m = re.search(
        r"deprecated names of 0\.2\.0 stay importable one release longer, until (\d+\.\d+\.\d+)",
        CHANGELOG.read_text(encoding="utf-8"),
    )
    assert m, "the changelog no longer says until when the deprecated names stay"
    return m.group(1)


CALLS = {
    "census": lambda: census(LOGISTIC, jnp.asarray(3.2), "no-such-sampler", n_ics=8, options=CensusOptions()),
    "census_batch": lambda: census_batch(
        LOGISTIC, jnp.asarray([3.2]), "no-such-sampler", n_ics=8, options=CensusOptions()
    ),
}


@pytest.mark.parametrize("call", list(CALLS))
def test_the_n_ics_warning_names_the_release_the_changelog_gives(call):
    until = _removal_release()
    with pytest.warns(DeprecationWarning) as caught, pytest.raises(InputError, match="unknown sampler"):
        CALLS[call]()  # an unknown sampler stops the call after the keywords are read
    message = " ".join(str(w.message) for w in caught if "n_ics" in str(w.message))
    assert f"will be removed in {until}" in message and "next release" not in message
    assert "deprecated since 0.3.0" in message and "renamed ics" in message

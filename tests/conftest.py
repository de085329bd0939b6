import pathlib

import pytest

from attnphys.runtime import configure

# float64 everywhere, and two XLA host devices so that the sharded batch path is exercised
configure(x64=True, host_devices=2)

DATA = pathlib.Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def data_dir() -> pathlib.Path:
    return DATA

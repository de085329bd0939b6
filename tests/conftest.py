import os
import pathlib

import pytest

from attnphys.runtime import COMPILATION_CACHE_ENV, configure

# the command line under test keeps no compiled programs in the user's home
os.environ[COMPILATION_CACHE_ENV] = "off"

# float64 everywhere, and two XLA host devices so that the sharded batch path is exercised
configure(x64=True, host_devices=2)

DATA = pathlib.Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def data_dir() -> pathlib.Path:
    return DATA

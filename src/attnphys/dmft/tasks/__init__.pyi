"""Type stub of the lazily loaded package: the one list of its public names."""

from ._base import PAPER_SECTION_PAIRS, DMFTTask
from ._evidence import evidence, exponent_schema, orbit_spec
from .attractors import AttractorTask, WindowSampler
from .converge import ConvergeTask
from .finite import FiniteTask
from .lyapunov import LyapunovTask
from .orbits import OrbitTask
from .trajectory import TrajectoryTask

__all__ = [
    "PAPER_SECTION_PAIRS",
    "AttractorTask",
    "ConvergeTask",
    "DMFTTask",
    "FiniteTask",
    "LyapunovTask",
    "OrbitTask",
    "TrajectoryTask",
    "WindowSampler",
    "evidence",
    "exponent_schema",
    "orbit_spec",
]

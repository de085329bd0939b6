"""Package version, read from the installed distribution."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("attnphys")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.1.0+source"

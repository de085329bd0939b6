"""Package version: the one place it is written (``pyproject.toml`` reads it from here at build time;
``CITATION.cff`` and the changelog repeat it, checked by ``tests/test_public_surface.py``)."""

__version__ = "0.4.7"

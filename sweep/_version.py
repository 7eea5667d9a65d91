"""The package version, where every layer may read it (pyproject.toml reads it too)."""

__version__ = "0.1.0"

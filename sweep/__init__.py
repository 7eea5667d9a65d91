"""sweep: phase-diagram sweeper for self-attention particle dynamics on the sphere."""

__version__ = "0.1.0"

"""memlens's version, below every other module (the package root imports the public API)."""

__version__ = "0.1.0"

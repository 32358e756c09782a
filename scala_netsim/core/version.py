"""The package's version, recorded in every checkpoint's identity (the bottom layer holds it so
that no module has to import the package's top, where the Python API lives)."""

__version__ = "0.1.0"

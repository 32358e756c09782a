"""Split federated learning trained for real under a SimPy-simulated cellular clock."""

__version__ = "0.1.0"

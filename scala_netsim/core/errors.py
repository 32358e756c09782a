"""The one base of every error raised for bad input or a run that is refused
(`scala_netsim.Error`): a caller of the Python API catches them all with it; the command
line prints their message and exits 2. What derives from it: the scenario's problems
(ScenarioError), a refused run (RefusedError), data not found, a partition that cannot be
made, a checkpoint or a run record that cannot be used, a report that cannot be written, and
the attack's and the keeping tool's refusals. A broken invariant of the engine is a bug, not
bad input, and does not derive from it."""

from __future__ import annotations


class Error(Exception):
    """Bad input, or a run that cannot be done as asked; the message says what is allowed."""


class DamagedRunError(Error, ValueError):
    """A run folder whose files cannot be trusted: summary.json unreadable, or a record file
    missing or not the one its run wrote (its SHA-256 differs from summary.json's)."""


class RefusedError(Error, ValueError):
    """The run cannot start as asked (a folder of another scenario, a missing GPU, a result
    root that cannot be written, an algorithm that cannot be timed without training, a Ray
    cluster that cannot be reached); the message says what is allowed. The CLI prints it and
    exits 2."""

"""Split federated learning trained for real under a SimPy-simulated cellular clock.

The package is built in layers, each a folder; a module imports only its own layer and the
layers below it (tests/house/test_layers.py reads every import, those inside functions and under
TYPE_CHECKING included, and finds no cycle):

    entry      the root modules: cli, retime, attack, __main__, api (this package's Python API)
    tools/     sweep (planning and executors), attack (the model-inversion attack)  |
               flower/ (Flower's strategies and ClientApps on the clock; the [flower] extra)
    runner/    world, assembly, run loop, drivers, writer, checkpoints, execution, a run's
               checks; the re-timers (replay, timing, recorded), the run-time estimate
    config/    scenario (the schema; loads no torch), documents, registry (every algorithm:
               classes by path, traits as data), async_checks, link_budget  |  sim/network/ (the
               network of cells: air, radio map, schedulers, link, fading, backhaul, NR)
    algorithms/ (trainers, their sections, client selection)  |  sim/ (cell, links, drops,
               stages, protocols: the SimPy engine)
    books/     a run's records built (rounds, radio, summary, tables) and checked
               (invariants, versions, blocks), from plain rows and tables
    learn/     messages, models, flops, losses, partition, data, compression, privacy,
               training, contract (what a protocol calls on its trainer)  |  channel/ (radio
               and compute, pure math)  |  analysis/ (reads result folders; imports only core)
    core/      files (the run folder's files), columns (every record's columns), events,
               results, seeds, catalog, exits, version (no torch, simpy or pydantic)

Layers side by side (learn, channel and analysis; algorithms and sim; config and sim/network;
tools and flower)
do not import each other:
the algorithms and the simulator meet only in the trainer contract below them.
"""

from scala_netsim.core.version import __version__

#: the Python API, each name from the module that defines it, imported on first use so that
#: `import scala_netsim` (and validating a scenario) loads no torch
API = {
    "load_scenario": "scala_netsim.api", "run": "scala_netsim.api",
    "open_results": "scala_netsim.api", "Results": "scala_netsim.api",
    "Options": "scala_netsim.api",
    # every error for bad input or a refused run derives from Error
    "Error": "scala_netsim.core.errors", "DamagedRunError": "scala_netsim.core.errors",
    "ScenarioError": "scala_netsim.config.documents", "RefusedError": "scala_netsim.core.errors",
    "DataNotFoundError": "scala_netsim.learn.data",
    "PartitionError": "scala_netsim.learn.partition",
    "CheckpointError": "scala_netsim.runner.checkpoints",
    "RecordError": "scala_netsim.runner.replay",
}
__all__ = ["__version__", *API]


def __getattr__(name: str) -> object:
    if name in API:
        import importlib

        return getattr(importlib.import_module(API[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public API (what tab completion offers in a notebook)."""
    return sorted(__all__)

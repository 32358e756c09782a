"""Split federated learning trained for real under a SimPy-simulated cellular clock.

The package is built in layers; a module imports only its own layer and the layers below it
(tests/test_layers.py reads every import, those inside functions and under TYPE_CHECKING
included, and finds no cycle):

    entry      cli, retime, __main__, this package's Python API
    tools      sweep (planning and executors), attack (the model-inversion attack)
    runner     run (world, run loop, writer, checkpoints), replay, timing, radio_record,
               invariants, metrics, estimate
    config     config.scenario (the schema; loads no torch)
    registry   algorithms.registry (every algorithm: classes by path, traits as data)
    algorithms algorithms.* (trainers, their sections), selection  |  sim: engine (imports
               only the trainer contract of the layer below)
    contract   algorithms.contract (what a protocol calls on its trainer)
    learn      messages, models, flops, losses, partition, data, compression, privacy,
               training  |  channel/ (radio and compute, pure math)  |  analysis/ (reads
               result folders; imports only the core)
    core       core.* (records: the run folder's files; events, results, seeds, catalog,
               exits, version; no torch, simpy or pydantic)

Layers side by side (learn, channel and analysis; algorithms and sim) do not import each other.
"""

from scala_netsim.core.version import __version__

#: the Python API (scala_netsim.api), imported on first use so that `import scala_netsim`
#: (and validating a scenario) loads no torch
API = ("load_scenario", "run", "open_results", "Results", "Options", "ScenarioError",
       "RefusedError")
__all__ = ["__version__", *API]


def __getattr__(name: str) -> object:
    if name in API:
        from scala_netsim import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

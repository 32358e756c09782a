"""The configuration layer: the scenario schema and its validation (scala_netsim.config.scenario).

It imports the registry (for the algorithms' names, sections and traits), the catalogue of
architectures and codecs (scala_netsim.core.catalog) and the channel's model names, never an
implementation: validating a scenario loads no torch.

    from scala_netsim.config import load_scenario
    scenario = load_scenario("scenarios/cellular_10pct.yaml", ["training.rounds=20"])
"""

from scala_netsim.config.scenario import (
    Scenario,
    ScenarioError,
    apply_overrides,
    load_scenario,
    validate_scenario,
)

__all__ = ["Scenario", "ScenarioError", "apply_overrides", "load_scenario", "validate_scenario"]

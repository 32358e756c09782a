"""The configuration layer: the scenario schema and its validation (config.scenario), the
documents it reads (config.documents: YAML, overrides, ScenarioError), the registry of
algorithms the schema is derived from (config.registry) and what an asynchronous algorithm
may not be asked (config.async_checks).

It imports the registry's names and traits, the catalogue of architectures and codecs
(scala_netsim.core.catalog) and the channel's model names, never an implementation:
validating a scenario loads no torch.

    from scala_netsim.config.scenario import load_scenario
    scenario = load_scenario("scenarios/cellular_10pct.yaml", ["training.rounds=20"])
"""

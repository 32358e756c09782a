"""The configuration layer: the scenario schema and its validation (config.scenario), the
documents it reads (config.documents: YAML, overrides, ScenarioError), the registry of
algorithms the schema is derived from (config.registry), what an asynchronous algorithm or a
network may not be asked (config.async_checks) and the network's one rule that needs the
drop (config.link_budget, asked before a run writes anything). Every rule about the network's
keys and their combinations is stated here, none at run time.

It imports the registry's names and traits, the catalogue of architectures and codecs
(scala_netsim.core.catalog) and the channel's model names, never an implementation:
validating a scenario loads no torch.

    from scala_netsim.config.scenario import load_scenario
    scenario = load_scenario("scenarios/cellular_10pct.yaml", ["training.rounds=20"])
"""

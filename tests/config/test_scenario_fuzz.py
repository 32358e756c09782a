"""Random documents never make the scenario loader raise anything but a clear ScenarioError."""

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scala_netsim.config.documents import ScenarioError
from scala_netsim.config.scenario import Scenario, load_scenario, validate_scenario

SECTIONS = {"data": ["dataset", "data_dir", "num_clients", "partition", "train_samples"],
            "training": ["rounds", "local_iters", "batch_size", "lr", "participation"],
            "network": ["radius_m", "min_distance_m", "uplink_bandwidth_hz", "client_tx_power_w"],
            "compute": ["client_flops_per_s", "server_flops_per_s"],
            "model": ["arch", "split"]}
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=6)
sections = st.fixed_dictionaries({}, optional={
    section: st.dictionaries(st.sampled_from(keys + ["bogus"]), values, max_size=4)
    for section, keys in SECTIONS.items()})
documents = st.one_of(values, st.builds(
    lambda s, name, algs: {**s, "name": name, "algorithms": algs},
    sections, st.one_of(st.just("ok"), values), st.one_of(st.just(["scala"]), values)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_random_documents_give_a_scenario_or_a_clear_error(document):
    try:
        scenario = validate_scenario(document, source="fuzz.yaml")
    except ScenarioError as exc:
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)
        assert str(exc).startswith("fuzz.yaml: invalid scenario")
    else:
        assert isinstance(scenario, Scenario)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=60))
def test_random_text_files_give_a_scenario_or_a_clear_error(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("fuzz") / "s.yaml"
    path.write_text(text)
    try:
        load_scenario(path)
    except ScenarioError as exc:
        assert exc.problems and str(path) in str(exc)


def test_a_dumped_scenario_loads_back(tmp_path):
    scenario = validate_scenario({"name": "roundtrip"})
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(scenario.model_dump(mode="json")))
    assert load_scenario(path) == scenario

"""Named deployments (issue 63): docs/model/network.md's table is what the code sets, both
ways; a deployment fills what a document leaves out and a later layer (the command line)
replaces the file's keys; a run's scenario.yaml reads back the same scenario."""

import math
from pathlib import Path

import pytest
import yaml

import scala_netsim as sn
from scala_netsim.config.deployments import DEPLOYMENTS
from scala_netsim.config.scenario import load_scenario, validate_scenario

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "model" / "network.md"
SCENARIO = ROOT / "scenarios" / "cellular_10pct.yaml"


def documented() -> dict[tuple[str, str], tuple[str, str]]:
    """(deployment, dotted key) -> (value as written, source) from the docs' table."""
    section = DOCS.read_text().split("## Deployments (")[1].split("\n## ")[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] in DEPLOYMENTS:
            rows[(cells[0], cells[1].strip("`"))] = (cells[2], cells[3])
    return rows


def flattened(values: dict, prefix: str = "") -> dict[str, object]:
    out = {}
    for key, value in values.items():
        if isinstance(value, dict):
            out.update(flattened(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def test_the_docs_table_gives_every_key_each_deployment_sets_with_its_value_and_source():
    rows = documented()
    code = {(name, key): value for name, preset in DEPLOYMENTS.items()
            for key, value in flattened(preset).items()}
    assert set(rows) == set(code)
    for where, (written, source) in rows.items():
        assert source, where
        value = yaml.safe_load(written.split(" (")[0])    # "398.1 (56 dBm)": the first part
        expected = code[where]
        if isinstance(expected, float):
            assert math.isclose(float(value), expected, rel_tol=1e-3), where
        elif isinstance(expected, list):
            assert value == expected, where
        else:
            assert value == expected, where


def test_uma_n78_is_a_100_mhz_tdd_carrier_of_273_blocks_at_56_dbm():
    net = load_scenario(SCENARIO, ["network.deployment=uma_n78"]).network
    assert net.pathloss == "3gpp_38901_uma" and net.carrier_frequency_hz == 3.5e9
    assert net.duplex.kind == "tdd" and net.duplex.pattern == "DDDSU"
    import channel

    assert channel.nr.resource_blocks(net.uplink_bandwidth_hz, net.subcarrier_spacing_hz) == 273
    assert 10 * math.log10(net.bs_tx_power_w * 1e3) == pytest.approx(56.0)
    assert (net.layout.sites, net.layout.isd_m, net.layout.downtilt_deg) == (19, 500.0, 12.0)
    assert net.power_control is not None and net.bs_noise_figure_db == 5.0


def test_the_command_lines_keys_replace_the_deployments_and_its_the_files():
    """A deployment given with --set replaces the file's keys (cellular_10pct.yaml writes the
    paper's 2 GHz, 1 W, ...); the other overrides replace the deployment's, key by key in
    its nested sections; the Python API's overrides do the same."""
    net = load_scenario(SCENARIO, ["network.deployment=rma_fdd", "network.layout.sites=7",
                                   "network.bs_tx_power_w=20"]).network
    assert net.pathloss == "3gpp_38901_rma" and net.carrier_frequency_hz == 0.78e9
    assert (net.layout.sites, net.layout.isd_m) == (7, 1732.0)
    assert net.bs_tx_power_w == 20.0 and net.duplex.kind == "fdd"
    api = sn.load_scenario(SCENARIO, {"network.deployment": "umi_n78",
                                      "network.layout.sites": 7}).network
    assert api.pathloss == "3gpp_38901_umi" and (api.layout.sites, api.layout.isd_m) == (7, 200.0)


def test_in_one_document_its_own_keys_win_and_another_kind_takes_none_of_the_section():
    document = yaml.safe_load(SCENARIO.read_text())
    document["network"] = {"deployment": "uma_n78", "bs_noise_figure_db": 2.0,
                           "layout": {"sites": 7}, "duplex": "fdd"}
    net = validate_scenario(document, source="<test>").network
    assert net.bs_noise_figure_db == 2.0 and net.carrier_frequency_hz == 3.5e9
    assert (net.layout.kind, net.layout.sites, net.layout.isd_m) == ("hexagonal", 7, 500.0)
    assert net.duplex.kind == "fdd"       # (and no frame key of the deployment's: accepted)


def test_no_deployment_is_the_scenario_as_written():
    plain = load_scenario(SCENARIO)
    assert plain.network.deployment is None and plain.network.layout.kind == "single"
    assert plain.network == load_scenario(SCENARIO, ["network.deployment=null"]).network


@pytest.mark.parametrize("name", sorted(DEPLOYMENTS))
def test_a_runs_scenario_yaml_reads_back_the_same_deployment(name, tmp_path):
    """What a run writes (every key, resolved, beside the deployment's name) is read back as
    one document: its keys win, so nothing moves."""
    from scala_netsim.config.scenario import scenario_yaml
    from scala_netsim.core.results import read_written_yaml

    scenario = load_scenario(SCENARIO, [f"network.deployment={name}",
                                        "network.bs_noise_figure_db=0"])
    path = tmp_path / "scenario.yaml"
    path.write_text(scenario_yaml(scenario))
    again = validate_scenario(read_written_yaml(path))
    assert again.network == scenario.network and again.network.bs_noise_figure_db == 0.0
    assert again.network.deployment == name


def test_a_sweep_over_deployments_gives_each_point_its_deployment(tmp_path):
    """A point starts from the scenario written in full: its deployment replaces those keys,
    as on the command line (review of issue 63: both points had been the paper's cell)."""
    from scala_netsim.tools.sweep import expand_sweep

    scenario = load_scenario(SCENARIO, ["sweep={network.deployment: [uma_n78, rma_fdd]}",
                                        "algorithms=[scala]"])
    nets = {p.folder.parent.name: p.scenario.network for p in expand_sweep(scenario, tmp_path)}
    assert nets["deployment=uma_n78"].pathloss == "3gpp_38901_uma"
    assert nets["deployment=uma_n78"].duplex.kind == "tdd"
    assert nets["deployment=rma_fdd"].carrier_frequency_hz == 0.78e9


@pytest.mark.parametrize("given", ["[uma_n78]", "{a: 1}", "3"])
def test_a_deployment_that_is_no_name_is_refused_naming_the_allowed_ones(given):
    with pytest.raises(ValueError, match="is not a deployment \\(allowed: uma_n78"):
        load_scenario(SCENARIO, [f"network.deployment={given}"])


def test_a_users_null_power_control_stands_under_a_deployment():
    document = yaml.safe_load(SCENARIO.read_text())
    document["network"] = {"deployment": "uma_n78", "power_control": None}
    assert validate_scenario(document, source="<test>").network.power_control is None
    document["network"] = {"deployment": "uma_n78", "power_control": {"alpha": 1.0}}
    net = validate_scenario(document, source="<test>").network
    assert (net.power_control.alpha, net.power_control.p0_dbm) == (1.0, -80.0)


def test_a_refusal_of_a_key_the_deployment_set_says_the_value_is_the_deployments():
    from scala_netsim.config.documents import ScenarioError

    with pytest.raises(ScenarioError) as refused:
        load_scenario(SCENARIO, ["network.deployment=uma_n78", "network.layout.sectors=1"])
    problems = refused.value.problems
    assert problems[0].startswith("network.layout.downtilt_deg: a downtilt needs 3 sectors")
    assert problems[-1].startswith("(network.deployment: uma_n78 sets the network keys")
    with pytest.raises(ScenarioError) as unknown:
        load_scenario(SCENARIO, ["network.deployment=uma_n79"])
    assert len(unknown.value.problems) == 1            # (no note for a name that is none)


def test_a_beam_per_client_without_the_panels_rows_is_refused_naming_both_keys():
    from scala_netsim.config.documents import ScenarioError

    with pytest.raises(ScenarioError) as refused:
        load_scenario(SCENARIO, ["network.deployment=uma_n78", "network.layout.panel_rows=null"])
    assert refused.value.problems[0].startswith(
        "network.layout.panel_columns: 8 columns steer a beam from the panel's rows; give "
        "layout.panel_rows")
    net = load_scenario(SCENARIO, ["network.deployment=uma_n78",
                                   "network.layout.panel_columns=null"]).network
    assert (net.layout.panel_rows, net.layout.panel_columns) == (10, None)


def test_a_layout_written_in_full_before_the_beam_reads_back_without_it():
    """A run's scenario.yaml kept before layout.panel_columns came in writes its layout in
    full without it: read back it runs as it ran (the column alone), where a layout that
    gives a few keys still takes the deployment's beam, and today's runs write the key."""
    old = {"kind": "hexagonal", "sites": 19, "isd_m": 500.0, "sectors": 3, "wraparound": True,
           "downtilt_deg": 12.0, "panel_rows": 10}
    document = yaml.safe_load(SCENARIO.read_text())
    document["network"] = {"deployment": "uma_n78", "layout": old}
    assert validate_scenario(document, source="<test>").network.layout.panel_columns is None
    document["network"] = {"deployment": "uma_n78", "layout": {"sites": 7}}
    layout = validate_scenario(document, source="<test>").network.layout
    assert (layout.sites, layout.panel_rows, layout.panel_columns) == (7, 10, 8)
    assert validate_scenario(document, source="<test>").network.model_dump()["layout"][
        "panel_columns"] == 8

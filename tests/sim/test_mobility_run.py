"""Clients that move and are handed over while the model trains (issue 64), end to end on a
tiny network of 7 sites: with each thing the network runs (TDD, the NR link abstraction with
the panel's beams, both per-instant schedulers, block fading by the transfer or in blocks of
time, other users' traffic file by file or in its mean, deadlines, over-selection, an
asynchronous algorithm) every invariant holds, the rates derive again through the moves,
each handover is justified by A3 from the positions, and no bits move during an interruption
(run.problems: books.handovers); a run interrupted after a round resumes to the
uninterrupted run's records; static clients leave a run as it was."""

import copy

import pytest
import torch

from conftest import events_of

#: 7 sites of UMa at 3.5 GHz, 5 MHz each way, round robin, every outdoor client driving at
#: 120 km/h (about one handover a client every few seconds: enough in a few rounds)
MOVING = {"layout": {"kind": "hexagonal", "sites": 7, "isd_m": 500.0, "sectors": 3},
          "pathloss": "3gpp_38901_uma", "carrier_frequency_hz": 3.5e9,
          "scheduler": "round_robin", "uplink_bandwidth_hz": 5e6,
          "downlink_bandwidth_hz": 5e6,
          "mobility": {"kind": "random_waypoint", "vehicle_share": 1.0,
                       "vehicle_speed_kmh": 120.0}}
NR_BEAMS = {"duplex": {"kind": "tdd"}, "link_abstraction": "nr", "bs_tx_power_w": 40.0,
            "uplink_bandwidth_hz": 10e6, "downlink_bandwidth_hz": 10e6,
            "layout": {**MOVING["layout"], "downtilt_deg": 12.0, "panel_rows": 10,
                       "panel_columns": 8}}


def moving_run(make_run, algorithm: str, network: dict | None = None, **training):
    return make_run(algorithm, data={"num_clients": 20},
                    training={"participation": 0.5, "rounds": 3, **training},
                    network={**MOVING, **(network or {})})


#: other users at 30 % load in their mean (a moving client's downlink floor moves with it)
FLUID = {"traffic": {"kind": "ftp3", "offered_load": 0.3, "model": "fluid"}}


@pytest.mark.parametrize("algorithm,network,training", [
    ("scala", {**NR_BEAMS, **FLUID}, {}),
    pytest.param("scala", {"traffic": {"kind": "ftp3", "offered_load": 0.3,
                                       "record_files": True}}, {},
                 marks=pytest.mark.slow),
    pytest.param("fedavg", {"scheduler": "proportional_fair", "fading": {
        "kind": "rayleigh", "coherence": "time", "coherence_s": 0.05}}, {"deadline_s": 30.0},
                 marks=pytest.mark.slow),
    pytest.param("splitfed_v1", {"mobility": {"kind": "random_direction",
                                              "vehicle_share": 0.5},
                                 "fading": {"kind": "rayleigh", "coherence": "transfer"}},
                 {"over_selection": 0.3}, marks=pytest.mark.slow),
    pytest.param("fedbuff", {}, {}, marks=pytest.mark.slow),
])
def test_a_moving_network_keeps_every_invariant(make_run, algorithm, network, training):
    run = moving_run(make_run, algorithm, network, **training)
    for _ in range(3):
        run.step()
    assert run.problems() == []
    mobility = run.link.mobility
    assert len(mobility.handover_rows) > 0
    events = events_of(run)
    assert events["handovers"].sum() > 0        # some transfer spans a handover
    # every handover's source is the cell its client's last move before it was served by
    assert {h[2] for h in mobility.handover_rows} <= set(range(21))


def test_a_moving_run_resumes_to_the_uninterrupted_records(make_run, tmp_path):
    """A checkpoint after round 1, saved and read back as checkpoints are (torch.load with
    weights_only): the resumed run writes the uninterrupted run's events, air record, moves
    and handovers (the map's gains, serving cells and interruptions saved; every path a
    function of the seed)."""
    whole = moving_run(make_run, "scala")
    whole.step()
    torch.save(copy.deepcopy(whole.state_dict()), tmp_path / "state.pt")
    state = torch.load(tmp_path / "state.pt", weights_only=True)
    whole.step()
    resumed = moving_run(make_run, "scala")
    resumed.load_state_dict(state)
    resumed.step()
    assert events_of(resumed).equals(events_of(whole))
    assert resumed.link.air_rows == whole.link.air_rows
    assert resumed.link.mobility.move_rows == whole.link.mobility.move_rows
    assert resumed.link.mobility.handover_rows == whole.link.mobility.handover_rows
    assert resumed.problems() == []


def test_static_clients_build_no_mobility_and_no_handovers_column(make_run):
    run = make_run("scala", data={"num_clients": 20}, training={"participation": 0.5},
                   network={**MOVING, "mobility": {"kind": "static"}})
    run.step()
    assert run.link.mobility is None and run.world.cell.network.mobile is None
    assert "handovers" not in events_of(run)

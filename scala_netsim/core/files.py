"""A run folder's files, by name, in one place (README, "Results"): every module that reads
or writes OUT/<scenario>/<algorithm>/[<setting>/]seed<k>/ takes the names from here."""

from pathlib import Path

SCENARIO_YAML = "scenario.yaml"   # the resolved scenario, every default filled in
CLIENTS_CSV = "clients.csv"       # the drop: distance, path loss, FLOP/s, samples, labels
CELLS_CSV = "cells.csv"           # a network's cells: site, position, boresight
COUPLING_CSV = "coupling.csv"     # a network's: each client's coupling gain to every cell
ROUNDS_CSV = "rounds.csv"         # one row per round
EVENTS_CSV = "events.csv"         # one row per timed event
DEMANDS_CSV = "demands.csv"       # what each participant told the allocator, per round
AIR_CSV = "air.csv"               # a network's: the blocks each transfer held, and when
FADING_CSV = "fading.csv"         # a faded network's: each transfer's |h|^2 to every cell
TRAFFIC_CSV = "traffic.csv"       # a network's other users' files (network.traffic)
TRAFFIC_AIR_CSV = "traffic_air.csv"   # the blocks each of those files held, and when
LOAD_CSV = "load.csv"             # each cell's load: the background's, the learning's, idle
MOBILITY_CSV = "mobility.csv"     # moving clients' gain updates: where, when, toward which cell
HANDOVERS_CSV = "handovers.csv"   # their handovers: when, from and to which cell, the RSRPs
SUMMARY_JSON = "summary.json"     # written last: its presence means the run ended
CHECKPOINT_PT = "checkpoint.pt"   # state for resuming (the last one stays when the run ends)
MODEL_PT = "model.pt"             # the global model at the end of a completed trained run
ATTACK_JSON = "attack.json"       # the model-inversion attack on a trained run (privacy)
ATTACK_PNG = "attack.png"
#: each run's figures (analysis.plots.plot_run)
RUN_FIGURES = ("accuracy_vs_time.png", "accuracy_vs_rounds.png", "latency_breakdown.png")
#: a network run's pictures besides (analysis.network_pictures.plot_network_run)
NETWORK_FIGURES = ("network_map.png", "sinr_cdf.png", "round_timeline.png")
COMPARISON_CSV = "comparison.csv"   # OUT/<scenario>/: one row per run
SWEEP_JSON = "sweep.json"           # OUT/<scenario>/: the study's points and settings
#: sweep.json's list of the sweep's points (one algorithm under one combination of swept
#: values: algorithm, setting, folder); an index written by an earlier version calls it "cells"
SWEEP_POINTS, SWEEP_POINTS_BEFORE = "points", "cells"

#: a kept run's tables are compressed (scala_netsim.tools.keep): NAME.csv.xz for NAME.csv, or
#: NAME.csv.gz in a run kept by an earlier version
XZ, GZIPPED = ".xz", ".gz"
KEPT_SUFFIXES = (XZ, GZIPPED)


def run_file(folder: Path | str, name: str) -> Path:
    """Where a run folder holds its file `name`: the file, or its compressed copy where only
    that is there (a run kept in git: KEPT_SUFFIXES), else the plain name (which the caller
    finds missing)."""
    plain = Path(folder) / name
    if not plain.is_file():
        for suffix in KEPT_SUFFIXES:
            if plain.with_name(name + suffix).is_file():
                return plain.with_name(name + suffix)
    return plain


#: the per-round records a checkpoint must agree with when a run resumes
RECORD_FILES = (ROUNDS_CSV, EVENTS_CSV, DEMANDS_CSV)
#: the files summary.json's `files_sha256` vouches for, each where the run wrote it (cells.csv,
#: coupling.csv and air.csv: a network's; a run written before clients.csv, cells.csv and
#: air.csv were digested has the first three, one before air.csv or coupling.csv was written
#: has none: its digests name what it has, and only that is checked)
DIGESTED_FILES = (*RECORD_FILES, CLIENTS_CSV, CELLS_CSV, COUPLING_CSV, AIR_CSV, FADING_CSV,
                  TRAFFIC_CSV, TRAFFIC_AIR_CSV, LOAD_CSV, MOBILITY_CSV, HANDOVERS_CSV)
#: what a re-timed or timing-only run keeps in git (scala_netsim.tools.keep): its other files
#: come back, to the same digests, from `python -m scala_netsim.tools.regenerate`
SLIM_FILES = (SCENARIO_YAML, SUMMARY_JSON, ROUNDS_CSV)
#: summary.json statuses of a run that has ended (it is not run again, and can be re-timed)
FINISHED = ("completed", "diverged")

#: every file a run (or a re-timing, or the attack after it) writes in its folder: a fresh run
#: first removes those an earlier run left (scala_netsim.core.results.remove_run_files), so
#: that nothing of it passes for the new run's (a network's cells.csv beside a single cell's)
RUN_WRITES = (SCENARIO_YAML, CLIENTS_CSV, CELLS_CSV, COUPLING_CSV, *RECORD_FILES, AIR_CSV,
              FADING_CSV, TRAFFIC_CSV, TRAFFIC_AIR_CSV, LOAD_CSV, MOBILITY_CSV, HANDOVERS_CSV,
              SUMMARY_JSON,
              CHECKPOINT_PT, MODEL_PT, ATTACK_JSON, ATTACK_PNG, *RUN_FIGURES,
              *NETWORK_FIGURES)


def sweep_points(index: dict) -> list:
    """The points a sweep index (sweep.json, read) lists, by their name now or before."""
    points = index.get(SWEEP_POINTS, index.get(SWEEP_POINTS_BEFORE, []))
    return points if isinstance(points, list) else []

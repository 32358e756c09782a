"""The index kept beside a study's records lists exactly the runs kept (tools.keep)."""

import json

from scala_netsim.tools.keep import kept_index


def test_the_kept_index_lists_the_kept_runs_and_only_them(tmp_path):
    # the lanes' index named a run still training (splitfed_v2) and had lost a kept one
    # (fedavg, written by an earlier invocation); written by an earlier version, it calls its
    # points "cells", and the kept index "points"
    source = tmp_path / "sweep.json"
    source.write_text(json.dumps({
        "scenario": "s", "algorithms": ["scala", "splitfed_v2"], "sweep": {},
        "accuracy_targets": [0.8], "rounds": 5,
        "cells": [{"algorithm": "scala", "setting": {}, "folder": "scala/seed0"},
                  {"algorithm": "splitfed_v2", "setting": {}, "folder": "splitfed_v2/seed0"}]}))
    kept = tmp_path / "kept"
    for algorithm in ("scala", "fedavg"):
        (kept / algorithm / "seed0").mkdir(parents=True)
        (kept / algorithm / "seed0" / "summary.json").write_text(
            json.dumps({"algorithm": algorithm, "setting": {}}))
    index = kept_index(source, kept)
    assert index["algorithms"] == ["scala", "fedavg"]
    assert [c["folder"] for c in index["points"]] == ["scala/seed0", "fedavg/seed0"]
    assert "cells" not in index
    assert (index["scenario"], index["rounds"], index["accuracy_targets"]) == ("s", 5, [0.8])
    # an index of exactly the kept runs is kept as it is
    (kept / "fedavg").rename(tmp_path / "elsewhere")
    exact = json.loads(source.read_text())
    exact["points"] = exact.pop("cells")[:1]
    exact["algorithms"] = ["scala"]
    source.write_text(json.dumps(exact))
    assert kept_index(source, kept) == exact


def test_a_study_kept_in_parts_keeps_the_order_of_its_earlier_index(tmp_path):
    """A sweep's new point run on its own (the load study's m = 50): it follows the earlier
    runs' in the kept index (written by an earlier version: "cells"), and the swept values
    keep their order."""
    def cell(m: str) -> dict:
        return {"algorithm": "scala", "setting": {"load": m}, "folder": f"scala/load={m}/seed0"}

    kept = tmp_path / "kept"
    for m in ("m1", "m2", "m50"):
        run = kept / "scala" / f"load={m}" / "seed0"
        run.mkdir(parents=True)
        (run / "summary.json").write_text(json.dumps({"algorithm": "scala",
                                                      "setting": {"load": m}}))
    header = {"scenario": "load", "algorithms": ["scala"], "accuracy_targets": [0.8],
              "rounds": 10}
    (kept / "sweep.json").write_text(json.dumps(
        {**header, "sweep": {"load": ["m1", "m2"]}, "cells": [cell("m1"), cell("m2")]}))
    source = tmp_path / "sweep.json"
    source.write_text(json.dumps({**header, "sweep": {"load": ["m50"]}, "points": [cell("m50")]}))
    index = kept_index(source, kept)
    assert [c["folder"] for c in index["points"]] == [cell(m)["folder"]
                                                     for m in ("m1", "m2", "m50")]
    assert index["sweep"] == {"load": ["m1", "m2", "m50"]}

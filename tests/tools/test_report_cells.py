"""The report's section on a network of cells (analysis.cells, issue 61): its per-cell table
gives the cells of every network run, each row naming its run."""

from analysis.cells import DETAIL_HEADER, _cell, cell_table

from conftest import NETWORK as SEVEN_SITES

NETWORK = {f"network.{key}": value for key, value in SEVEN_SITES.items()}


def markdown_rows(block: str) -> list[list[str]]:
    """A markdown table's cells, row by row, its header first (its rule left out)."""
    head, _, *body = block.splitlines()
    return [line.strip("| ").split(" | ") for line in (head, *body)]


def test_the_per_cell_table_covers_every_run(tmp_path):
    """Issue 61: the per-cell table showed the first network run's cells alone, though the
    table above it has a row per run. Two runs (FedAvg and SCALA, one timed round each in 21
    cells): the table has each run's 21 cells, in the order of the table above, each row its
    run's label and its cell_table row as the report writes numbers."""
    import scala_netsim as sn
    from scala_netsim import load_scenario

    results = sn.run(load_scenario("tests/golden/scenario.yaml", {
        "algorithms": ["fedavg", "scala"], "training.rounds": 1, "timing_only": True,
        "data.num_clients": 30, **NETWORK}), out=tmp_path, echo=False, estimate=False)
    results.write(figures=False, report=True)
    report = (results.folder / "report.md").read_text()
    section = report[report.index("## The network's cells"):report.index("## Figures")]
    summary, detail = [markdown_rows(block) for block in section.split("\n\n")
                       if block.startswith("| ")]
    runs = [row[0] for row in summary[1:]]
    assert runs == ["fedavg seed 3", "scala seed 3"]
    assert detail[0][0] == "run" and len(detail) == 1 + 2 * 21
    assert "The cells of every run, one by one (2 runs; run: as in the table above):" in section
    expected = []
    for run in results.runs:
        table = cell_table(run.folder)
        assert len(table) == 21
        expected += [[f"{run.algorithm} seed {run.seed}", *(_cell(v) for v in cell)]
                     for cell in table.itertuples(index=False)]
    assert detail[0] == ["run", *(DETAIL_HEADER.get(c, c) for c in table.columns)]
    assert [row[0] for row in detail[1:]] == [runs[0]] * 21 + [runs[1]] * 21
    assert detail[1:] == expected
    # (the two runs' transfers differ: their rows are not one run's twice)
    assert detail[1:22] != [[runs[0], *row[1:]] for row in detail[22:]]

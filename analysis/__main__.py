"""python -m analysis OUT/<scenario>: write report.md (tables over seeds, study figures)."""

import argparse
import sys

from analysis.report import write_report
from scala_netsim.core.errors import Error


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis", description=__doc__)
    parser.add_argument("scenario_dir",
                        help="a scenario's results folder, e.g. results/local_iters")
    args = parser.parse_args(argv)
    try:
        path = write_report(args.scenario_dir)
    except Error as exc:   # (a report that cannot be written, a damaged run)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

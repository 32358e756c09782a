"""The model-inversion attack on a finished run, from the command line (the attack itself:
scala_netsim.tools.attack).

    python -m scala_netsim.attack RUN_DIR [--epochs 20] [--seeds 0 1 2] [--no-figure]

writes RUN_DIR/attack.json and RUN_DIR/attack.png (originals above their reconstructions).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from scala_netsim.tools.attack import AttackError, run_attack


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scala_netsim.attack",
        description="Model-inversion attack on a finished run's client-side model.")
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--epochs", type=int, default=20,
                        help="passes of the decoder over the auxiliary set (default 20)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--no-figure", action="store_true")
    args = parser.parse_args(argv)
    try:
        result = run_attack(args.run_dir, args.epochs, args.seeds, not args.no_figure)
    except AttackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.run_dir}: reconstruction MSE {result['mse']['mean']:.4f} ± "
          f"{result['mse']['std']:.4f}, SSIM {result['ssim']['mean']:.4f} ± "
          f"{result['ssim']['std']:.4f}, PSNR {result['psnr_db']['mean']:.2f} ± "
          f"{result['psnr_db']['std']:.2f} dB over {len(args.seeds)} seed(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

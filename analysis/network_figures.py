"""The network study's figures (analysis.network writes them beside its report)."""

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def plot_round_times(table: pd.DataFrame, path: Path, names: Mapping[str, str]) -> None:
    """Mean round time against clients per cell, per algorithm (its name in `names`) and
    interference."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for (algorithm, interference), group in table.groupby(["algorithm", "interference"]):
        ax.plot(group["m"], group["round_time_s"], marker="o",
                linestyle="-" if interference else "--",
                label=f"{names.get(str(algorithm), str(algorithm))}, interference "
                      f"{'on' if interference else 'off'}")
    ax.set(xscale="log", yscale="log", xlabel="clients per cell and round, m (mean)",
           ylabel="mean round time (s)",
           title="7 sites x 3 sectors, 38.901 UMa: round time against load")
    ax.set_xticks(sorted(table["m"].unique()), [str(m) for m in sorted(table["m"].unique())])
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_stragglers(table: pd.DataFrame, path: Path) -> None:
    """Each client's time busy per round against its uplink SINR, by LOS and indoor state."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for (los, indoor), group in table.groupby(["los", "indoor"]):
        ax.scatter(group["uplink_sinr_db"], group["busy_per_round_s"], s=18,
                   marker="o" if los else "x",
                   label=f"{'LOS' if los else 'NLOS'}, {'indoor' if indoor else 'outdoor'} "
                         f"({len(group)})")
    ax.set(yscale="log", xlabel="uplink SINR, mean over the client's uploads (dB)",
           ylabel="time busy per round (s)", title="Who the stragglers are (SCALA, every seed)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)

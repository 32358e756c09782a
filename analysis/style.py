"""How the figures stay legible when a study has many cells: colours for the settings of a
swept key (a sequential colour map with a colour bar for a numeric key of many values, a
qualitative palette otherwise), a logarithmic time axis where times span decades, and legends
outside the axes."""

from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.colors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402

#: a numeric swept key with at least this many values is drawn on a colour map with a colour
#: bar (a legend of a dozen near-identical entries is not read); fewer keep distinct colours
COLORMAP_MIN_VALUES = 5
#: a time axis is logarithmic when the curves' last times differ by this factor or more
LOG_TIME_SPAN = 10.0
#: curves with more evaluated points than this are drawn without markers
MARKER_MAX_POINTS = 40


@dataclass
class SettingColors:
    """The colour of each setting of the swept keys (tuples of their values, in the order the
    runs list them); `scale` is set when they are drawn on a colour map: (key, the
    ScalarMappable for its colour bar)."""

    colors: dict
    scale: tuple[str, matplotlib.cm.ScalarMappable] | None = None

    def colorbar(self, fig: plt.Figure, axes: Sequence[Axes] | np.ndarray) -> None:
        """The colour bar beside `axes`, when the settings are on a colour map (frequencies
        in MHz, as the sweep axes)."""
        if self.scale is None:
            return
        key, mappable = self.scale
        name = key.split(".")[-1]
        bar = fig.colorbar(mappable, ax=list(np.asarray(axes, dtype=object).ravel()), pad=0.02)
        if name.endswith("_hz") and (mappable.get_clim()[1] or 0.0) >= 1e6:
            bar.set_label(f"{name} (MHz)")
            bar.formatter = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v / 1e6:g}")
            bar.update_ticks()
        else:
            bar.set_label(name)


def _numeric(values: Sequence) -> bool:
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
               for v in values)


def setting_colors(settings: Sequence[tuple], keys: Sequence[str]) -> SettingColors:
    """Colours for `settings` (each a tuple of the values of `keys`). One numeric key with
    COLORMAP_MIN_VALUES values or more: viridis over its values (logarithmic when they span a
    factor of 20 or more, as the sweep axes); otherwise tab10 (tab20 beyond ten settings)."""
    distinct = list(dict.fromkeys(settings))
    values = [s[0] for s in distinct] if len(keys) == 1 else []
    if values and _numeric(values) and len(set(values)) >= COLORMAP_MIN_VALUES:
        low, high = float(min(values)), float(max(values))
        log = low > 0 and high / low >= 20
        norm = (matplotlib.colors.LogNorm(low, high) if log
                else matplotlib.colors.Normalize(low, high))
        cmap = matplotlib.colormaps["viridis"]
        mappable = matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap)
        return SettingColors({s: cmap(norm(float(s[0]))) for s in distinct},
                             (keys[0], mappable))
    palette = "tab10" if len(distinct) <= 10 else "tab20"
    cmap = matplotlib.colormaps[palette]
    return SettingColors({s: cmap(i % cmap.N) for i, s in enumerate(distinct)})


def log_time_axis(last_times: Sequence[float] | np.ndarray) -> bool:
    """Whether a time axis reads better logarithmic: the curves' last (positive) times differ
    by LOG_TIME_SPAN or more, so that on a linear axis the fastest curves would be squeezed
    against zero."""
    ends = [t for t in last_times if np.isfinite(t) and t > 0]
    return bool(ends) and max(ends) / min(ends) >= LOG_TIME_SPAN


#: a logarithmic axis spanning at most this many decades also labels its 2s and 5s (one
#: labelled decade alone does not say where the points are; over more, labels collide)
LABEL_MINOR_DECADES = 1.5


def round_axis(axis: matplotlib.axis.Axis) -> None:
    """Ticks on whole rounds only (a two-round run had ticks at 1.25 and 1.5)."""
    axis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))


def tick_text(value: float) -> str:
    """A logarithmic axis' tick as a plain number (0.2, 5, 3000), not 10 to a power."""
    return f"{value:g}"


def set_log_x(ax: Axes) -> None:
    """A logarithmic x axis labelled with plain numbers at its decades, and at the 2s and 5s
    between them while it spans LABEL_MINOR_DECADES or fewer (decided when it is drawn)."""
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: tick_text(x)))

    def minor(value: float, _: int) -> str:
        low, high = sorted(ax.get_xlim())
        few = low > 0 and np.log10(high / low) <= LABEL_MINOR_DECADES
        leading = round(value / 10 ** np.floor(np.log10(value) + 1e-9))
        return tick_text(value) if few and leading in (2, 5) else ""

    ax.xaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(minor))


def log_y_if_wide(ax: Axes, factor: float = 30.0) -> bool:
    """Make the y axis logarithmic when the positive values of its lines differ by `factor` or
    more (one algorithm's time or bytes per round would otherwise lie flat on zero)."""
    values = np.concatenate([np.asarray(line.get_ydata(), float) for line in ax.get_lines()]
                            or [np.array([])])
    values = values[np.isfinite(values) & (values > 0)]
    wide = bool(len(values)) and values.max() / values.min() >= factor
    if wide:
        ax.set_yscale("log")
    return wide


def marker_size(points: int) -> float:
    """Markers on short curves, none on long ones (they would merge into a thick line)."""
    return 3.0 if points <= MARKER_MAX_POINTS else 0.0


def legend_outside(fig: plt.Figure, axes: Sequence[Axes] | np.ndarray, title: str | None = None,
                   fontsize: float = 8) -> None:
    """One legend for the whole figure, to the right of its panels (never over the data),
    from the labelled artists of `axes` (each label once)."""
    handles, labels = [], []
    for ax in np.asarray(axes, dtype=object).ravel():
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if handles:
        fig.legend(handles, labels, loc="outside right upper", fontsize=fontsize, title=title,
                   title_fontsize=fontsize, frameon=False)


def time_unit(span_s: float) -> tuple[float, str]:
    """(seconds per unit, axis label): simulated time in s, min or h, whichever reads best."""
    if span_s >= 3 * 3600:
        return 3600.0, "simulated time (h)"
    if span_s >= 180:
        return 60.0, "simulated time (min)"
    return 1.0, "simulated time (s)"


#: one style per curve label, so that curves drawn on top of each other stay visible (a
#: dashed line over a solid one)
LINE_STYLES = ("-", (0, (5, 3)), (0, (1, 2)), (0, (5, 2, 1, 2)))


def legend_labels(curves: dict[str, list[np.ndarray]]) -> dict[str, str]:
    """Each curve label as the legend writes it: a label whose curves are those of an
    earlier one, point for point, says so ("fedprox (the same curve as fedavg)"), since one
    line hides the other."""
    legend: dict[str, str] = {}
    for label, runs in curves.items():
        same = next((other for other in legend
                     if len(curves[other]) == len(runs)
                     and all(a.shape == b.shape and np.array_equal(a, b)
                             for a, b in zip(curves[other], runs, strict=True))), None)
        legend[label] = label if same is None else f"{label} (the same curve as {same})"
    return legend

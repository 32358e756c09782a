"""Loading the installed packages' plugins (entry points), written once for every registry
that takes them: the path-loss models here (channel.pathloss), the algorithms
(scala_netsim.config.registry)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any


def load_entry_points(group: str, what: str, add: Callable[[Any], object]) -> dict[str, str]:
    """Load every entry point of `group` and give what it names to `add`. One that fails (its
    import, or `add` refusing it) does not stop the others: -> {its name: why}, and a warning
    says why ("the `what` plugin NAME = VALUE (entry-point group GROUP) could not be loaded:
    ...")."""
    broken = {}
    for entry in entry_points(group=group):
        try:
            add(entry.load())
        except Exception as exc:   # (any failure of a plugin's import is the plugin's)
            why = (f"the {what} plugin {entry.name} = {entry.value} (entry-point group "
                   f"{group}) could not be loaded: {type(exc).__name__}: {exc}")
            broken[entry.name] = why
            warnings.warn(why, stacklevel=3)
    return broken

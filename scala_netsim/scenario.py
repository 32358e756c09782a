"""Moved to `scala_netsim.config.scenario` (issue 26's layers); this import path keeps working
for one release: it is the same module object."""

import sys

from scala_netsim.config import scenario as _moved

sys.modules[__name__] = _moved

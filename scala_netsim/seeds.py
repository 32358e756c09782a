"""Moved to `scala_netsim.core.seeds` (issue 26's layers); this import path keeps working for
one release: it is the same module object."""

import sys

from scala_netsim.core import seeds as _moved

sys.modules[__name__] = _moved

"""Short names for swept values that are mappings or lists (a sweep over network.layout, over
compute.client_flops_per_s): a folder name and a figure's panel title must stay readable, so
a value written out longer than LONGEST characters is named by its first entry and a digest
of the whole (the same in folder names, tables and figures). Named sweep cases keep their
names; scalar values are written as they are."""

from __future__ import annotations

import hashlib
import json
from typing import Any

#: the longest swept value written out in full
LONGEST = 24


def compact(value: Any, text: str) -> str:
    """`text` (the value written out) when short enough, else '<first entry>-<6 hex digits>'
    (e.g. 'hexagonal-3f9a0c' for {kind: hexagonal, sites: 7, isd_m: 500.0, ...}): the digest
    is of the value itself, so equal values get equal names wherever they are written."""
    if len(text) <= LONGEST:
        return text
    digest = hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:6]
    entries = list(value.values()) if isinstance(value, dict) else list(value)
    first = entries[0] if entries else ""
    head = str(first)[:12] if isinstance(first, (str, int, float, bool)) else "case"
    return f"{head}-{digest}"

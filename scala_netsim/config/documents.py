"""Scenario documents before validation: the error that lists a scenario's problems, and the
dotted-key overrides (`--set training.rounds=20`) applied to a parsed YAML document."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml


class ScenarioError(ValueError):
    """A scenario that cannot be run; `problems` lists every `field: message` found."""

    def __init__(self, source: str | Path, problems: list[str]) -> None:
        self.source, self.problems = source, list(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{source}: invalid scenario\n{lines}")


def set_dotted(document: dict, key: str, value: Any) -> str | None:
    """document[a][b][c] = value for key "a.b.c" (sections created as needed). -> None, or a
    problem text when a part of the key is not a section."""
    node, parts = document, key.split(".")
    for part in parts[:-1]:
        if not isinstance(node.get(part, {}), dict):
            return f"{part!r} is not a section"
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return None


def apply_overrides(document: dict, overrides: Sequence[str], source: str = "--set") -> dict:
    """Apply `dotted.key=value` overrides (values parsed as YAML) to a raw document."""
    problems = []
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            problems.append(f"--set {item!r}: expected dotted.key=value")
            continue
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            why = getattr(exc, "problem", exc)
            problems.append(f"--set {key}: value {raw!r} is not valid YAML ({why})")
            continue
        problem = set_dotted(document, key, value)
        if problem:
            problems.append(f"--set {key}: {problem}")
    if problems:
        raise ScenarioError(source, problems)
    return document

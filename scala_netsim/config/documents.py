"""Scenario documents before validation: the error that lists a scenario's problems, and the
dotted-key overrides (`--set training.rounds=20`) applied to a parsed YAML document."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from scala_netsim.config.deployments import deploy
from scala_netsim.core.errors import Error


class ScenarioError(Error, ValueError):
    """A scenario that cannot be run; `problems` lists every `field: message` found."""

    def __init__(self, source: str | Path, problems: list[str]) -> None:
        self.source, self.problems = source, list(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{source}: invalid scenario\n{lines}")


class DuplicateKey(yaml.YAMLError):
    """A mapping that gives one key twice (YAML itself would keep the last, silently)."""


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a mapping that gives a key twice, with both lines."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        first: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                earlier = first.setdefault(key, key_node)
            except TypeError:     # an unhashable key: PyYAML says so itself
                continue
            if earlier is not key_node:
                raise DuplicateKey(f"key {key!r} is given twice, on line "
                                   f"{earlier.start_mark.line + 1} and on line "
                                   f"{key_node.start_mark.line + 1}; give it once")
        return super().construct_mapping(node, deep=deep)


def parse_yaml(text: str) -> Any:
    """A YAML document, refusing a key given twice in one mapping (DuplicateKey)."""
    return yaml.load(text, Loader=UniqueKeyLoader)


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


#: the override that names a deployment (config.deployments.deploy: applied first)
DEPLOYMENT_KEY = "network.deployment"


def deploy_first(document: Any, values: Mapping[str, Any]) -> None:
    """A deployment among overrides `values` ({dotted key: value}) into `document` before
    them (config.deployments.deploy: the other overrides then replace its keys)."""
    if DEPLOYMENT_KEY in values and isinstance(document, dict):
        deploy(document, values[DEPLOYMENT_KEY])


def apply_overrides(document: dict, overrides: Sequence[str], source: str = "--set") -> dict:
    """Apply `dotted.key=value` overrides (values parsed as YAML) to a raw document; a key
    given twice is refused, as the YAML refuses a key twice in a mapping (the last would win
    without a word), and so is a section given after one of its keys (it would drop it). A
    deployment among them is applied first, over the document's keys (config.deployments)."""
    problems = []
    values: dict[str, str] = {}
    for item in overrides:       # a deployment first: the other overrides replace its keys
        key, sep, raw = item.partition("=")
        if key == DEPLOYMENT_KEY and sep:
            with contextlib.suppress(yaml.YAMLError):   # (refused below, naming the key)
                deploy_first(document, {key: parse_yaml(raw)})
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            problems.append(f"--set {item!r}: expected dotted.key=value")
            continue
        if key in values:
            problems.append(f"--set {key}: given twice ({values[key]!r} and {raw!r}); give it "
                            f"once")
            continue
        dropped = [k for k in values if k.startswith(key + ".")]
        if dropped:
            them = "them" if len(dropped) > 1 else "it"
            problems.append(f"--set {key}: replaces the whole section, dropping the earlier "
                            f"--set {', '.join(dropped)}; give {them} after it, or inside its "
                            f"value")
            continue
        values[key] = raw
        try:
            value = parse_yaml(raw)
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

"""The configuration file's text: YAML read strictly and `${NAME}` interpolation.

PyYAML silently keeps the last of a key given twice; here that is an error naming the key.
`${NAME}`, `${NAME:-fallback}` and `$$` are replaced in text values as a shell would.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ingest.config import keys as K
from ingest.errors import ConfigError

_REFERENCE = re.compile(r"\$(?:(\$)|\{([^}]*)\}|(\{))")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def interpolate(text: str, env: Mapping[str, str], found: set[str] | None = None) -> str:
    """`${NAME}`, `${NAME:-fallback}` (unset or empty) and `$$` (a `$`) replaced, as a shell would.

    `found` collects the values taken from the environment, and the whole text they made.
    """

    def replace(match: re.Match[str]) -> str:
        if match.group(1):
            return "$"
        if match.group(3):
            raise ValueError("has a '${' without its closing '}'")
        name, has_fallback, fallback = match.group(2).partition(":-")
        if not _VARIABLE.fullmatch(name):
            raise ValueError(f"${{{match.group(2)}}} is not a variable reference: use ${{NAME}} or ${{NAME:-fallback}}")
        value = env.get(name)
        if value is None and not has_fallback:
            raise ValueError(f"environment variable {name} is not set")
        if found is not None and value:
            found.add(value)
        return value or fallback

    result = _REFERENCE.sub(replace, text)
    if found is not None and result != text and "${" in text:
        found.add(result)
    return result


class Unresolved(ValueError):
    """An interpolation error in a value, and the full name of the entry it is in."""

    def __init__(self, name: str, message: str):
        super().__init__(message)
        self.name = name


def interpolate_tree(value: Any, env: Mapping[str, str], name: str, found: set[str]) -> Any:
    try:
        if isinstance(value, str):
            return interpolate(value, env, found)
    except ValueError as e:
        raise Unresolved(name, str(e)) from None
    if isinstance(value, Mapping):
        return {entry: interpolate_tree(item, env, f"{name}.{entry}", found) for entry, item in value.items()}
    if isinstance(value, list):
        return [interpolate_tree(item, env, name, found) for item in value]
    return value


class _StrictLoader(yaml.SafeLoader):
    """Safe YAML that refuses a key given twice in one mapping."""


def _unique_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        name = loader.construct_object(key_node)
        if name in seen:
            raise yaml.constructor.ConstructorError(None, None, f"key {name!r} is given twice", key_node.start_mark)
        seen.add(name)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def read_yaml(origin: str) -> Mapping[Any, Any]:
    try:
        text = Path(origin).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read it: {e.strerror or e}", source=origin) from None
    except UnicodeDecodeError:
        raise ConfigError("is not UTF-8 text", source=origin) from None
    try:
        tree = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"is not valid YAML: {problem}{where}", source=origin) from None
    if not isinstance(tree, Mapping):
        raise ConfigError(f"expected a mapping of sections ({', '.join(K.SECTIONS)}), got "
                          f"{'nothing' if tree is None else K.kind_of(tree)}", source=origin)
    return tree



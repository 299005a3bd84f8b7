"""Gathering a configuration: the file, then `--set` items, each key looked up and typed.

Every value keeps where it came from (the file, or `--set`) and the name it was written under, so
an error names them; an unknown key suggests the closest valid one. Values of secret keys and
values taken from the environment are remembered, so no message repeats them (`scrubbed`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from ingest.config import hudi_keys
from ingest.config import keys as K
from ingest.config.keys import HUDI, Key, Secret, Type
from ingest.config.yaml_source import Unresolved, interpolate, interpolate_tree, read_yaml
from ingest.errors import ConfigError

SET = "--set"


@dataclass
class _Given:
    value: Any
    origin: str
    name: str  # as written: the key, or the alias it was given under


def _unknown(name: str, origin: str) -> ConfigError:
    known = [n for n in (*K.BY_NAME, *K.GROUPS) if not n.startswith(HUDI + ".")]
    near = K.closest(name, known)
    if near:
        return ConfigError(f"unknown key; did you mean {near}?", source=origin, key=name)
    parent = name.rsplit(".", 1)[0] if "." in name else ""
    children = sorted({n[len(parent) + 1 :].split(".")[0] if parent else n.split(".")[0]
                       for n in known if not parent or n.startswith(parent + ".")})
    where = f"{parent} takes" if parent else "the sections are"
    return ConfigError(f"unknown key; {where} {', '.join(children)}", source=origin, key=name)


class Gathered:
    """The values given, by canonical key, the file's first and `--set`'s over them."""

    def __init__(self, env: Mapping[str, str]):
        self.env = env
        self.values: dict[str, _Given] = {}
        self.extras: dict[str, _Given] = {}  # hoodie.* keys ingest does not use
        self.honoured: dict[str, _Given] = {}  # refused hoodie.* keys given the value ingest writes anyway
        self.groups: set[str] = set()
        self.secrets: set[str] = set()
        self.from_env: set[str] = set()  # values `${NAME}` brought in: no message shows them either
        self._layer: dict[str, _Given] = {}

    # -- sources ---------------------------------------------------------------------------------

    def read_file(self, origin: str) -> None:
        self._layer = {}
        tree = read_yaml(origin)
        self._remember_secrets(tree, "")
        self._walk(tree, "", origin)

    def read_overrides(self, items: Sequence[str]) -> None:
        self._layer = {}
        for item in items:
            name, _, text = item.partition("=")
            self._remember_secrets({name.strip(): text}, "")
        for item in items:
            name, has_value, text = item.partition("=")
            name = name.strip()
            section, _, rest = name.partition(".")
            if not has_value or not section or not rest:
                shown = K.REDACTED if K.is_secret(item) else item
                raise ConfigError(f"expected SECTION.KEY=VALUE, got {shown!r}", source=SET)
            if section == HUDI:
                self._hudi(rest, text, SET)
                continue
            key = K.BY_NAME.get(name)
            if key is not None and not key.type.is_map:
                self.put(key, text, name, SET)
                continue
            holder = next((k for k in K.KEYS if k.type.is_map and name.startswith(k.name + ".")), None)
            if holder is not None:
                self._put_entry(holder, name[len(holder.name) + 1 :], text, name)
            elif key is not None or name in K.GROUPS:
                raise ConfigError(f"holds several settings: set them one by one, {name}.<name>=VALUE",
                                  source=SET, key=name)
            else:
                raise _unknown(name, SET)

    def _walk(self, node: Mapping[Any, Any], prefix: str, origin: str) -> None:
        for raw, value in node.items():
            if not isinstance(raw, str):
                raise ConfigError(f"key {raw!r} is not text", source=origin, key=prefix or None)
            name = f"{prefix}.{raw}" if prefix else raw
            if name in K.GROUPS:
                self.groups.add(name)
                if value is None:
                    continue
                if not isinstance(value, Mapping):
                    raise ConfigError(f"is a section: expected a mapping of its keys, got {K.kind_of(value)}",
                                      source=origin, key=name)
                if name == HUDI:
                    for hudi_key, item in value.items():
                        self._hudi(str(hudi_key), item, origin)
                else:
                    self._walk(value, name, origin)
                continue
            key = K.BY_NAME.get(name)
            if key is None:
                raise _unknown(name, origin)
            if value is not None:
                self.put(key, value, name, origin)

    def _hudi(self, hudi_key: str, value: Any, origin: str) -> None:
        name = f"{HUDI}.{hudi_key}"
        key = K.lookup(name)
        if key is not None:
            if value is not None:
                self.put(key, value, name, origin)
            return
        listed = [n for n in (*K.BY_NAME, *K.BY_ALIAS) if n.startswith(HUDI + ".")]
        if not hudi_key.startswith("hoodie."):
            near = K.closest(name, listed)
            hint = f"; did you mean {near}?" if near else ""
            raise ConfigError(f"unknown key: keys of the hudi section are Hudi's (hoodie.*){hint}",
                              source=origin, key=name)
        typo = K.misspelt_hudi_key(name)
        if typo:
            raise ConfigError(f"unknown Hudi key; did you mean {typo}?", source=origin, key=name)
        if value is None:
            return
        value = self._interpolated(value, name, origin)
        if isinstance(value, (Mapping, list)):
            raise ConfigError(f"expected a value, got {K.kind_of(value)} (write Hudi keys whole: hoodie.a.b: value)",
                              source=origin, key=name)
        text = K.to_text(value)
        refused = hudi_keys.refusal(hudi_key, text)
        if refused is not None:
            shown = K.REDACTED if K.is_secret(name) else repr(text)
            accepted = f" (accepted: {', '.join(refused.allowed)})" if refused.allowed else ""
            raise ConfigError(f"{shown} is not supported{accepted}: {refused.instead}", source=origin, key=name)
        given = _Given(self._marked(name, text), origin, name)
        (self.honoured if hudi_keys.is_honoured_value(hudi_key, text) else self.extras)[name] = given

    # -- values ----------------------------------------------------------------------------------

    def _interpolated(self, value: Any, name: str, origin: str) -> Any:
        try:
            return interpolate_tree(value, self.env, name, self.from_env)
        except Unresolved as e:
            raise ConfigError(str(e), source=origin, key=e.name) from None

    def _remember_secrets(self, node: Mapping[Any, Any], prefix: str) -> None:
        """Every secret value given, before anything is checked: whichever key an error is about,
        and wherever else the same text was used, the message can then be scrubbed."""
        for entry, value in node.items():
            name = f"{prefix}.{entry}" if prefix else str(entry)
            if isinstance(value, Mapping):
                self._remember_secrets(value, name)
            elif K.is_secret(name) and isinstance(value, (str, int, float)) and not isinstance(value, bool):
                try:
                    self.secrets.add(interpolate(K.to_text(value), self.env))
                except ValueError:
                    pass  # reported, without the value, when the key is read

    def _marked(self, name: str, value: Any) -> Any:
        """Secret scalars wrapped as `Secret`, by name, so that no repr shows them."""
        if isinstance(value, Mapping):
            return {entry: self._marked(f"{name}.{entry}", item) for entry, item in value.items()}
        if K.is_secret(name) and isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return Secret(K.to_text(value))
        return value

    def put(self, key: Key, value: Any, name: str, origin: str) -> None:
        value = self._interpolated(value, name, origin)
        try:
            typed = self._marked(key.name, K.parse(key, value))
        except ValueError as e:
            raise ConfigError(str(e), source=origin, key=name) from None
        earlier = self._layer.get(key.name)
        if earlier is not None and earlier.name != name and earlier.value != typed:
            theirs = K.REDACTED if key.secret else repr(K.to_text(earlier.value))
            raise ConfigError(f"contradicts {earlier.name}={theirs}: give one of them", source=origin, key=name)
        given = _Given(typed, origin, name)
        self._layer[key.name] = self.values[key.name] = given

    def _put_entry(self, key: Key, entry: str, text: str, name: str) -> None:
        """One entry of a map key from --set, merged into what the file gave."""
        text = self._interpolated(text, name, SET)
        value: Any = text
        if key.type is Type.VALUE_MAP:  # typed as YAML would type it: true, 3, ...
            try:
                value = yaml.safe_load(text) if text.strip() else text
            except yaml.YAMLError:
                value = text
            for part in reversed(entry.split(".")[1:]):
                value = {part: value}
            entry = entry.split(".")[0]
        try:
            parsed = self._marked(key.name, K.parse(key, {entry: value}))
        except ValueError as e:
            raise ConfigError(str(e), source=SET, key=name) from None
        current = self.values[key.name].value if key.name in self.values else key.default or {}
        self.values[key.name] = _Given(_merged(current, parsed), SET, key.name)


def _merged(base: Mapping[Any, Any], update: Mapping[Any, Any]) -> dict[Any, Any]:
    """`update` over `base`, nested mappings merged entry by entry."""
    out = dict(base)
    for name, item in update.items():
        out[name] = _merged(out[name], item) if isinstance(item, Mapping) and isinstance(out.get(name), Mapping) else item
    return out


def bare(error: ConfigError) -> str:
    prefix = ": ".join(p for p in (error.source, error.key) if p)
    text = str(error)
    return text[len(prefix) + 2 :] if prefix and text.startswith(prefix + ": ") else text


def scrubbed(error: ConfigError, secrets: set[str], from_env: set[str]) -> ConfigError:
    """The error without secret values, nor values from the environment (whole words of them: an
    environment value `30` hides `got '30'`, not the 30 in `300`)."""
    message = bare(error)
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            message = message.replace(secret, K.REDACTED)
    for value in sorted(from_env, key=len, reverse=True):
        if value.strip():
            message = re.sub(rf"(?<![\w.-]){re.escape(value)}(?![\w.-])", K.REDACTED, message)
    return ConfigError(message, source=error.source, key=error.key)



"""Hudi's own Avro schemas (`hudi-common/src/main/avro/*.avsc`), to read our timeline files with.

The project does not carry Hudi's .avsc files. When `INGEST_HUDI_AVSC_DIR` names a folder holding
them, `hudi_schema(name)` returns the named record with every type it references inlined (a
standalone reader schema); otherwise it returns None and tests check the structure they verified.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

AVSC_DIR_ENV = "INGEST_HUDI_AVSC_DIR"
_COMMENT = re.compile(r"/\*.*?\*/", re.S)  # Hudi's .avsc files carry C-style comments Avro Java skips
_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


def avsc_dir() -> Path | None:
    raw = os.environ.get(AVSC_DIR_ENV)
    return Path(raw) if raw else None


def _records(node: Any, namespace: str | None, out: dict[str, dict]) -> None:
    if isinstance(node, list):
        for n in node:
            _records(n, namespace, out)
    elif isinstance(node, dict):
        if node.get("type") in ("record", "enum", "fixed"):
            ns = node.get("namespace", namespace)
            out[node["name"]] = {**node, "namespace": ns} if ns else node
            for f in node.get("fields", []):
                _records(f["type"], ns, out)
        else:
            for key in ("type", "items", "values"):
                if key in node:
                    _records(node[key], namespace, out)


def _named(folder: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for path in sorted(folder.glob("*.avsc")):
        _records(json.loads(_COMMENT.sub("", path.read_text())), None, out)
    return out


def _inline(node: Any, named: dict[str, dict], seen: set[str]) -> Any:
    if isinstance(node, str):
        short = node.rsplit(".", 1)[-1]
        if node in _PRIMITIVES or short not in named:
            return node
        if short in seen:
            return short
        return _inline(named[short], named, seen)
    if isinstance(node, list):
        return [_inline(n, named, seen) for n in node]
    if not isinstance(node, dict):
        return node
    if node.get("type") == "record":
        if node["name"] in seen:
            return node["name"]
        seen.add(node["name"])
        return {**node, "fields": [{**f, "type": _inline(f["type"], named, seen)} for f in node["fields"]]}
    return {k: _inline(v, named, seen) if k in ("type", "items", "values") else v for k, v in node.items()}


def hudi_schema(name: str) -> dict | None:
    """Hudi's schema of record `name`, standalone, or None without `INGEST_HUDI_AVSC_DIR`."""
    folder = avsc_dir()
    if folder is None:
        return None
    named = _named(folder)
    if name not in named:
        raise AssertionError(f"{folder} defines no record {name} (has {sorted(named)})")
    return _inline(named[name], named, set())

"""The package layers: no module imports from a layer above its own.

No Hudi rule applies; this is the project's own. The format code (`ingest/hudi/`) is layered the way
hudi-rs's `crates/core/src` is: Avro and keys at the bottom, then log and base files, the table
config, the timeline, the table and its services. Above the format: the key index, the writer, the
services runner, configuration, Spark, the pipelines, the commands. Format code never imports
Spark. A module may import its own package freely.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "ingest"

LAYERS: list[set[str]] = [
    {"ingest.errors", "ingest.faults", "ingest.process_exit", "ingest.__version__", "ingest.__init__"},
    {"ingest.storage", "ingest.liveness", "ingest.phases", "ingest.parquet_bytes", "ingest.hudi.java_numbers"},
    {"ingest.hudi.avro", "ingest.hudi.keygen", "ingest.hudi.merge"},
    {"ingest.hudi.log", "ingest.hudi.parquet"},
    {"ingest.hudi.config"},
    {"ingest.hudi.timeline"},
    {"ingest.hudi.table"},
    {"ingest.hudi.services"},
    {"ingest.index", "ingest.kafka", "ingest.catalog"},
    {"ingest.write"},
    {"ingest.services", "ingest.upgrade"},
    {"ingest.config"},
    {"ingest.spark"},
    {"ingest.pipeline"},
    {"ingest.commands"},
    {"ingest.cli"},
    {"ingest.__main__"},
]
FORMAT_UNITS = {u for layer in LAYERS[2:8] for u in layer} | {"ingest.index", "ingest.write"}


def _unit(module: str) -> str:
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "hudi" and parts[2] != "__init__":
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def _level(unit: str) -> int:
    for i, layer in enumerate(LAYERS):
        if unit in layer:
            return i
    raise AssertionError(f"{unit} is in no layer: add it to tests/test_layers.py")


def _imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "ingest":
                out += [f"ingest.{a.name}" for a in node.names]
            else:
                out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return out


def _modules() -> list[tuple[str, Path]]:
    return [(".".join(p.relative_to(ROOT.parent).with_suffix("").parts), p) for p in sorted(ROOT.rglob("*.py"))]


def _upward(modules: list[tuple[str, Path]]) -> list[str]:
    wrong = []
    for module, path in modules:
        unit = _unit(module)
        for target in _imports(path):
            if not target.startswith("ingest"):
                continue
            other = _unit(target)
            if other != unit and _level(other) >= _level(unit):
                wrong.append(f"{module} imports {target}")
    return wrong


def test_every_module_imports_only_from_its_own_layer_or_below():
    wrong = _upward(_modules())
    assert not wrong, "\n".join(wrong)


def test_format_code_imports_no_spark():
    wrong = [f"{m} imports {t}" for m, p in _modules() if _unit(m) in FORMAT_UNITS
             for t in _imports(p) if t.split(".")[0] in ("pyspark", "py4j")]
    assert not wrong, "\n".join(wrong)


def test_the_layer_check_sees_an_upward_import(tmp_path):
    """The check itself can fail: a timeline module importing the table package is caught."""
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from ingest.hudi.table.table import HudiTable\n")
    assert _upward([("ingest.hudi.timeline.probe", probe)]) == ["ingest.hudi.timeline.probe imports ingest.hudi.table.table"]
    assert _upward([("ingest.hudi.services.probe", probe)]) == []

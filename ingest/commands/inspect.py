"""`ingest inspect`: show what is inside Hudi files, for debugging tables by hand.

`inspect` is a parser of its own sub-commands; each `register_<what>(subparsers)` below adds one
(`log` today), so further ones (a table view, say) slot in beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from ingest.commands.args import add_path
from ingest.commands.render import json_safe
from ingest.errors import SchemaEvolutionError, UnsupportedTable
from ingest.hudi.avro.schema import META_FIELDS
from ingest.hudi.log.delete_block import DeleteRecord
from ingest.hudi.log.log_block import FRAME_PREFIX, MAGIC, BlockType, HeaderKey, LogBlock
from ingest.hudi.log.log_reader import DecodedBlock, decode_block, iter_log_blocks
from ingest.storage import Storage

_SCHEMA_PREVIEW = 100
_RECORD_PREVIEW = 240


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "inspect", help="show what is inside Hudi files", description="Show what is inside Hudi files."
    )
    parser.set_defaults(func=lambda args: _usage(parser))
    inner = parser.add_subparsers(dest="inspect_command", metavar="WHAT")
    register_log(inner)
    register_table(inner)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def register_log(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "log",
        help="print the blocks of a Hudi log file",
        description="Print the blocks of a Hudi log file: framing, header, records or deleted keys.",
    )
    parser.add_argument("file", metavar="FILE", help="a local path or an fsspec URL (s3://..., file://...)")
    parser.add_argument("--json", action="store_true", help="one JSON object per block, one per line")
    parser.add_argument(
        "--max-records",
        type=int,
        default=10,
        metavar="N",
        help="records shown per block in the human output (default 10; --json shows all)",
    )
    parser.set_defaults(func=run_log)


# -- reading --------------------------------------------------------------------------------------


def _locate(file: str) -> tuple[Storage, str]:
    """A storage rooted at the file's folder and the file's name in it."""
    if "://" in file:
        base, _, name = file.rstrip("/").rpartition("/")
        if base.endswith(":/"):  # "s3://file" has no folder part
            base, name = file, ""
    else:
        full = os.path.abspath(file)
        base, name = os.path.dirname(full), os.path.basename(full)
    if not name:
        raise IsADirectoryError(f"{file} names no file")
    return Storage(base), name


def _inspected(storage: Storage, name: str) -> Iterator[tuple[LogBlock, DecodedBlock | None, str | None]]:
    """Each block as read, its decoding (None if framing already found it corrupt) and a note."""
    for block in iter_log_blocks(storage, name):
        if block.is_corrupt:
            yield block, None, None
            continue
        try:
            yield block, decode_block(block), None
        except (UnsupportedTable, SchemaEvolutionError) as e:
            yield block, None, str(e)


# -- JSON -----------------------------------------------------------------------------------------


def _delete_json(d: DeleteRecord) -> dict[str, Any]:
    ov = d.ordering_value
    return {
        "record_key": d.record_key,
        "partition_path": d.partition_path,
        "ordering_value": None if ov is None else json_safe(ov.value),
        "ordering_wrapper": None if ov is None else ov.wrapper.record_name,
    }


def block_json(block: LogBlock, decoded: DecodedBlock | None, note: str | None) -> dict[str, Any]:
    """The JSON object `ingest inspect log --json` prints for one block."""
    framed = not block.is_corrupt  # a CORRUPT block straight from the reader has no readable frame
    shown = decoded.block if decoded is not None else block
    records = decoded.records if decoded is not None else None
    deletes = decoded.deletes if decoded is not None else None
    out: dict[str, Any] = {
        "offset": block.offset,
        "size": block.size,
        "magic": json_safe(block.content[: len(MAGIC)]) if not framed else MAGIC.decode("ascii"),
        "block_size": block.size - FRAME_PREFIX if framed else None,
        "format_version": block.format_version if framed else None,
        "type": shown.block_type.name,
        "header": {k.name: v for k, v in shown.header},
        "footer": {k.name: v for k, v in shown.footer},
        "instant_time": shown.instant_time,
        "target_instant_time": shown.target_instant_time,
        "content_length": len(block.content),
        "record_count": None,
        "records": None,
        "deleted_keys": None,
        "total_length": block.size - 8 if framed else None,
        "corrupt": shown.is_corrupt,
        "corrupt_reason": shown.corrupt_reason,
    }
    if framed and shown.is_corrupt:
        out["written_type"] = block.block_type.name
    if records is not None:
        out["record_count"] = len(records)
        out["records"] = [json_safe(r) for r in records]
    if deletes is not None:
        out["record_count"] = len(deletes)
        out["deleted_keys"] = [_delete_json(d) for d in deletes]
    if note is not None:
        out["note"] = note
    return out


# -- human output ---------------------------------------------------------------------------------


def _schema_preview(text: str) -> str:
    """The data fields of a header schema, clipped, then what was left out."""
    try:
        schema = json.loads(text)
        name = ".".join(p for p in (schema.get("namespace"), schema.get("name")) if p)
        fields = [f["name"] for f in schema.get("fields", [])]
    except (ValueError, AttributeError, TypeError, KeyError):
        return f"{_clip(text, _SCHEMA_PREVIEW)} ({len(text)} chars)"
    data_fields = [f for f in fields if f not in META_FIELDS]
    listed = _clip(", ".join(data_fields), _SCHEMA_PREVIEW)
    return f"{listed} [+{len(fields) - len(data_fields)} meta fields; record {name}; {len(text)} chars]"


def _clip(text: str, limit: int = _RECORD_PREVIEW) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _print_block(out: TextIO, index: int, info: dict[str, Any], max_records: int) -> None:
    def line(label: str, value: Any) -> None:
        out.write(f"  {label:<16}{value}\n")

    out.write(f"block {index} at offset {info['offset']} ({info['size']} bytes)\n")
    line("magic", info["magic"])
    if info["block_size"] is not None:
        line("block size", info["block_size"])
        line("format version", info["format_version"])
    written = info.get("written_type")
    line("type", info["type"] + (f" (written as {written})" if written else ""))
    header = info["header"]
    if header:
        for i, (key, value) in enumerate(header.items()):
            shown = _schema_preview(value) if key == HeaderKey.SCHEMA.name else value
            line("header" if i == 0 else "", f"{key} = {shown}")
    elif info["block_size"] is not None:
        line("header", "(empty)")
    line("content", f"{info['content_length']} bytes")
    if info["records"] is not None:
        line("records", info["record_count"])
        for record in info["records"][:max_records]:
            # Data fields first: the meta fields repeat what the header says and would fill the line.
            ordered = {k: v for k, v in record.items() if k not in META_FIELDS}
            ordered.update((k, v) for k, v in record.items() if k in META_FIELDS)
            out.write(f"    {_clip(json.dumps(ordered, ensure_ascii=False))}\n")
        if info["record_count"] > max_records:
            out.write(f"    ... {info['record_count'] - max_records} more\n")
    if info["deleted_keys"] is not None:
        line("deleted keys", info["record_count"])
        for d in info["deleted_keys"][:max_records]:
            ordering = "null" if d["ordering_wrapper"] is None else f"{d['ordering_wrapper']}({d['ordering_value']})"
            entry = f"{d['record_key']}  {d['partition_path']}  {ordering}"
            out.write(f"    {_clip(entry)}\n")
        if info["record_count"] > max_records:
            out.write(f"    ... {info['record_count'] - max_records} more\n")
    if info["type"] == BlockType.COMMAND.name:
        line("command", f"rollback of {info['target_instant_time']}")
    if info.get("note"):
        line("note", info["note"])
    if info["block_size"] is not None:
        footer = ", ".join(f"{k} = {v}" for k, v in info["footer"].items())
        line("footer", footer or "(empty)")
        line("total length", info["total_length"])
    line("corrupt", f"yes: {info['corrupt_reason']}" if info["corrupt"] else "no")
    out.write("\n")


def run_log(args: argparse.Namespace) -> int:
    out = sys.stdout
    try:
        storage, name = _locate(args.file)
        size = storage.size(name)
        if not args.json:
            out.write(f"{args.file}: {size} bytes\n\n")
        count = corrupt = 0
        for index, (block, decoded, note) in enumerate(_inspected(storage, name)):
            info = block_json(block, decoded, note)
            count += 1
            corrupt += bool(info["corrupt"])
            if args.json:
                out.write(json.dumps(info, ensure_ascii=False) + "\n")
            else:
                _print_block(out, index, info, max(args.max_records, 0))
        if not args.json:
            out.write(f"{count} block{'' if count == 1 else 's'}, {corrupt} corrupt\n")
    except BrokenPipeError:  # the reader of our output went away (`| head`); main() handles it
        raise
    except OSError as e:
        print(f"ingest: error: cannot read {args.file}: {e}", file=sys.stderr)
        return 1
    return 0


# -- tables ---------------------------------------------------------------------------------------


def register_table(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "table",
        help="print a table's properties, timeline, pending services and file groups",
        description="Print a Hudi table's properties, timeline (instant, action, state), pending table "
                    "services, partitions, and file groups with their file slices; on a bucket-indexed "
                    "table, warn of keys held outside their bucket's file group.",
    )
    add_path(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.set_defaults(func=run_table)


def table_report(path: str) -> dict[str, Any]:
    """Everything `inspect table` shows, as plain data."""
    from ingest.hudi.table import bucket_placement, snapshot
    from ingest.hudi.table.table import HudiTable
    from ingest.services import pending_services

    table = HudiTable.open(path)
    timeline = table.timeline()
    view = table.view(timeline)
    groups = []
    for group in view.groups:
        groups.append({
            "partition": group.partition_path,
            "file_id": group.file_id,
            "slices": [{
                "base_instant": s.base_instant,
                "base_file": {"name": s.base_file.name.name, "size": s.base_file.size} if s.base_file else None,
                "log_files": [{"name": lf.name.name, "size": lf.size} for lf in s.log_files],
            } for s in group.slices],
        })
    ctx, slices = snapshot.context(table)
    corrupt = [c.__dict__ for s in slices for c in snapshot.scan_logs(ctx, s).corrupt]
    return {
        "path": table.base_url,
        "properties": dict(table.config.props),
        "timeline": [{"instant": i.timestamp, "action": i.action.value, "state": i.state.value,
                      "completion_time": i.completion_time} for i in timeline],
        "pending_services": [p.__dict__ for p in pending_services(table)],
        "partitions": list(view.partitions),
        "file_groups": groups,
        "corrupt_blocks": corrupt,
        "bucket_placement": placement.__dict__ if (placement := bucket_placement.check(table)) else None,
    }


def run_table(args: argparse.Namespace) -> int:
    from ingest.hudi.table.snapshot import CorruptBlock

    report = table_report(args.path)
    for block in report["corrupt_blocks"]:
        print(f"ingest: warning: {CorruptBlock(**block).describe()}", file=sys.stderr)
    placement = report["bucket_placement"]
    if placement and placement["misplaced"]:
        shown = ", ".join(f"{k!r} in bucket {held}, hashed to {want}" for k, held, want in placement["examples"])
        print(f"ingest: warning: {placement['misplaced']} of {placement['keys']} keys sit outside the file group "
              f"of their bucket, where Hudi's writers (and ingest) look for them, so their next write would "
              f"duplicate them ({shown}); rewrite the table", file=sys.stderr)
    out = sys.stdout
    if args.json:
        out.write(json.dumps(json_safe(report), ensure_ascii=False) + "\n")
        return 0
    from ingest.commands.render import text_table

    out.write(f"table {report['path']}\n\nproperties\n")
    for key, value in report["properties"].items():
        out.write(f"  {key}={value if len(value) < 120 else value[:117] + '...'}\n")
    out.write(f"\ntimeline ({len(report['timeline'])} instants)\n")
    text_table(out, ["instant", "action", "state"],
               ([i["instant"], i["action"], i["state"]] for i in report["timeline"]))
    out.write(f"\npending services ({len(report['pending_services'])})\n")
    if report["pending_services"]:
        text_table(out, ["instant", "action", "state", "items", "description"],
                   ([p["instant"], p["action"], p["state"], p["items"], p["description"]]
                    for p in report["pending_services"]), max_width=70)
    out.write(f"\npartitions ({len(report['partitions'])}): {', '.join(report['partitions']) or '(none)'}\n")
    out.write(f"\nfile groups ({len(report['file_groups'])})\n")
    rows = []
    for g in report["file_groups"]:
        for s in g["slices"]:
            base = s["base_file"]
            rows.append([g["partition"], g["file_id"], s["base_instant"],
                         f"{base['name']} ({base['size']} B)" if base else "-",
                         len(s["log_files"]), sum(lf["size"] for lf in s["log_files"])])
    text_table(out, ["partition", "file group", "slice", "base file", "log files", "log bytes"], rows,
               max_width=60)
    out.write(f"\ncorrupt blocks of committed instants ({len(report['corrupt_blocks'])})\n")
    if report["corrupt_blocks"]:
        text_table(out, ["log file", "offset", "bytes", "instant", "reason"],
                   ([c["url"], c["offset"], c["size"], c["instant"] or "?", c["reason"]]
                    for c in report["corrupt_blocks"]), max_width=70)
    return 0

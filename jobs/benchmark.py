"""Benchmark: ingest's sink against Spark's parquet writer and delta-rs, in one process, on one data set.

    python jobs/benchmark.py [--rows 1000000] [--upsert-rows 200000] ...
    spark-submit jobs/benchmark.py --rows 1000000

Measures, on the same synthetic events (strings, longs, doubles, timestamps, a decimal, a nested
struct; keys optionally skewed):

* our sink: bulk load of `--rows` rows (parquet base files), then `--rounds` upsert micro-batches of
  `--upsert-rows` rows into that table (log mode), and the commit latency of many small batches;
* the bulk load and Spark's append of the same rows once more: what each later load of a long
  backfill costs, once the process has paid its one-off costs;
* the default configuration (key index, Hudi's SIMPLE: new keys into base files, small files first):
  the same rows loaded, then the same upsert batches (`upsert_time_vs_spark_parquet_default_index`);
* Spark's own parquet append of each upsert DataFrame (cached, so both writers read the same memory);
* Spark's own shuffle of the same rows by key to as many tasks as our sink uses, handed to Python as
  Arrow batches that Python only counts: what any Python writer behind a shuffle pays before its
  first line of code runs (the floor under our upsert time);
* the same shuffle with each task writing its rows plus Hudi's meta columns as one parquet file (the
  base table) or one Avro block (each upsert batch), and nothing else: the floor under any Python
  writer of Hudi's files, so that what our time adds above it is the table format's own work;
* delta-rs (`deltalake`, if installed): append of the same rows, then a merge of each upsert batch;
* Arrow -> Avro block encoding: ours against fastavro's record-by-record writer on the same batch;
* the driver process's peak memory while upserting a batch and a batch 4x its size;
* with `--scale N`, the bulk load and the upserts again at N times the rows (same batch share): the
  per-row cost at both sizes, the key index's bytes on storage and the write tasks' peak memory
  (each Python worker's resident memory while it ran a write task, reported by the task);
* optionally (`--stream-batches N`), a long stream of small batches with inline table services:
  commit time of the last batch against the 20th, active timeline size, file slices per file group.

`--kafka` measures the Kafka path instead (`jobs/benchmark_kafka.py`): `--rows` events as JSON on
the embedded broker, streamed by `ingest stream --available-now`, against raw kafka-python and
confluent-kafka consumers of the same topic and the sink alone on the same rows.

Every path runs once on a small batch first (JVM, Python workers and imports warmed), and the
upsert, parquet and merge times are medians over the rounds. Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="rows in the base table (default 1,000,000)")
    p.add_argument("--upsert-rows", type=int, default=None, help="rows in the upsert batch (default rows/5)")
    p.add_argument("--update-ratio", type=float, default=0.8,
                   help="share of upsert rows that update existing keys; the rest are new (default 0.8)")
    p.add_argument("--partitions", type=int, default=8, help="table partitions (default 8)")
    p.add_argument("--buckets", type=int, default=4,
                   help="buckets per partition (default 4: about 8 MB file groups at 1,000,000 rows)")
    p.add_argument("--rounds", type=int, default=5,
                   help="upsert batches timed, each against a parquet append and a delta-rs merge of the "
                        "same rows; medians are reported (default 5)")
    p.add_argument("--key-skew", type=float, default=0.0,
                   help="0 = uniform keys; >0 concentrates updates on few keys (power law exponent)")
    p.add_argument("--small-batches", type=int, default=30, help="small batches for commit latency (default 30)")
    p.add_argument("--small-batch-rows", type=int, default=1000, help="rows per small batch (default 1000)")
    p.add_argument("--encoder-rows", type=int, default=200_000,
                   help="rows encoded by fastavro for the encoder comparison (default 200,000)")
    p.add_argument("--memory-rows", type=int, default=None,
                   help="base batch size for the driver memory check; 4x is also run (default upsert rows / 4)")
    p.add_argument("--scale", type=int, default=1,
                   help="also run the bulk load and the upserts at this many times --rows and the upsert rows "
                        "(e.g. 4), and report the per-row cost at both sizes (default 1: not run)")
    p.add_argument("--stream-batches", type=int, default=0,
                   help="run a long stream of small batches with inline services (e.g. 500)")
    p.add_argument("--master", default=os.environ.get("INGEST_SPARK_MASTER", "local[2]"))
    p.add_argument("--workdir", default=None, help="where tables are written (default: a temp folder)")
    p.add_argument("--skip-delta", action="store_true", help="do not run the delta-rs comparison")
    p.add_argument("--kafka", action="store_true",
                   help="measure the Kafka path instead (stream vs raw consumers vs sink; see jobs/benchmark_kafka.py)")
    p.add_argument("--kafka-partitions", type=int, default=4, help="--kafka: topic partitions, at least (default 4; more when the embedded broker's 5 MiB "
                        "per partition would not hold the topic)")
    p.add_argument("--kafka-batch-rows", type=int, default=None,
                   help="--kafka: the stream's max_offsets_per_trigger (default: the whole topic in one batch)")
    return p.parse_args(argv)


# -- measuring ---------------------------------------------------------------------------------------


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


# -- data --------------------------------------------------------------------------------------------


def events(spark, n: int, *, key_offset: int = 0, key_space: int | None = None, skew: float = 0.0,
           ts: int = 1, partitions: int = 8, seed: int = 1):
    """`n` synthetic events; keys are `key_offset + id`, or drawn from `[0, key_space)` when given."""
    from pyspark.sql import functions as F

    df = spark.range(n)
    if key_space is None:
        key = F.col("id") + F.lit(key_offset)
    elif skew > 0:
        key = F.floor(F.pow(F.rand(seed), F.lit(1.0 + skew)) * F.lit(key_space)).cast("long")
    else:
        # Distinct existing keys spread over the whole key space (a stride coprime with its size).
        stride = next(p for p in (7919, 7927, 7933, 7937) if key_space % p)
        key = (F.col("id") * F.lit(stride) + F.lit(seed)) % F.lit(key_space)
    return df.select(
        F.concat(F.lit("order-"), key.cast("string")).alias("order_id"),
        F.concat(F.lit("region-"), (F.abs(F.hash(key)) % F.lit(partitions)).cast("string")).alias("region"),
        (F.lit(1_700_000_000_000) + F.lit(ts)).cast("long").alias("updated_at"),
        F.concat(F.lit("customer-"), (F.col("id") * 7 % 100_000).cast("string"), F.lit("-abcdef")).alias("customer"),
        F.concat(F.lit("sku-"), (F.col("id") % 977).cast("string")).alias("sku"),
        (F.col("id") * 3).alias("quantity"),
        (F.col("id") % 1000).alias("store_id"),
        (F.col("id").cast("double") / 7.0).alias("price"),
        F.rand(seed + 1).alias("discount"),
        F.timestamp_micros(F.lit(1_700_000_000_000_000) + F.col("id") * 1000).alias("ordered_at"),
        (F.col("id") % 100_000).cast("decimal(12,2)").alias("amount"),
        F.struct((F.col("id") % 13).cast("string").alias("channel"), (F.col("id") % 17).alias("priority"))
        .alias("meta"),
    )


def options(path: str, buckets: int, insert_mode: str | None = "log", services: bool = False, index: str = "bucket"):
    """The sink's options; `index="key"` with `insert_mode=None` is the default configuration (SIMPLE:
    the key index, inserts into base files, small files first)."""
    from ingest.write.file_group_writer import InsertMode
    from ingest.write.options import IndexOptions, IndexType, WriteOptions

    return WriteOptions(
        table_path=path,
        table_name="orders",
        hudi={
            "hoodie.datasource.write.recordkey.field": "order_id",
            "hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.precombine.field": "updated_at",
        },
        index=IndexOptions(type=IndexType(index), bucket_count=buckets),
        insert_mode=InsertMode(insert_mode) if insert_mode else None,
        checkpoint_id="benchmark",
    )


# -- the measurements ------------------------------------------------------------------------------------


INSTANT = "20240101000000000"


def with_meta(table, file_name: str, log_records: bool):
    """`table`'s rows with Hudi's five meta columns in front, keyed by `order_id` in `region`."""
    from ingest.write.file_group_writer import with_meta_columns

    keyed = table.append_column("_ingest_key", table.column("order_id")).append_column(
        "_ingest_partition", table.column("region"))
    return with_meta_columns(keyed, INSTANT, 0, [file_name], [table.num_rows], log_records=log_records).drop_columns(
        ["_ingest_key", "_ingest_partition"])


def measure_encoder(spark, rows: int) -> dict:
    """Our Arrow -> Avro encoder against fastavro's writer, same records, same schema, same bytes."""
    import fastavro
    import pyarrow as pa

    from ingest.hudi.avro import avro_encoder
    from ingest.hudi.avro import schema as avro
    from ingest.hudi.log.data_block import encode_avro_payloads

    table = events(spark, rows).toArrow()
    n = table.num_rows
    rows_with_meta = with_meta(table, "file-0", log_records=True)
    schema = avro.with_meta_fields(avro.arrow_to_avro(table.schema, "orders"))
    def with_ours() -> bytes:
        return avro_encoder.avro_data_block_content(avro_encoder.encode_batch(rows_with_meta, schema))

    # Best of a few calls each: one call on a shared machine measures its neighbours as much as itself.
    ours_s, encoded = min((timed(with_ours) for _ in range(5)), key=lambda r: r[0])
    records = rows_with_meta.to_pylist(maps_as_pydicts="lossy")
    parsed = fastavro.parse_schema(schema)

    def with_fastavro() -> bytes:
        payloads = []
        for r in records:
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, parsed, r)
            payloads.append(buf.getvalue())
        return encode_avro_payloads(payloads)

    theirs_s, reference = min((timed(with_fastavro) for _ in range(2)), key=lambda r: r[0])
    assert isinstance(rows_with_meta, pa.Table)
    return {
        "encoder_rows": n,
        "encoder_ours_s": ours_s,
        "encoder_fastavro_s": theirs_s,
        "encoder_ours_rows_per_s": n / ours_s,
        "encoder_fastavro_rows_per_s": n / theirs_s,
        "encoder_speedup_vs_fastavro": theirs_s / ours_s,
        "encoder_bytes_identical": encoded == reference,
    }


def upsert_batch(spark, args, round_: int):
    """Round `round_`'s upsert batch: updates of existing keys (later versions) plus new keys."""
    upsert_rows = args.upsert_rows or max(1, args.rows // 5)
    updates = int(upsert_rows * args.update_ratio)
    inserts = upsert_rows - updates
    return events(spark, updates, key_space=args.rows, skew=args.key_skew, ts=2 + round_,
                  partitions=args.partitions, seed=1 + round_) \
        .unionByName(events(spark, inserts, key_offset=args.rows + round_ * inserts, ts=2 + round_,
                            partitions=args.partitions))


def _count_rows(batches):
    import pyarrow as pa

    rows = sum(batch.num_rows for batch in batches)
    yield pa.RecordBatch.from_pydict({"rows": pa.array([rows], pa.int64())})


def shuffle_to_python(spark, df, row_bytes: float | None = None, task=_count_rows) -> None:
    """Spark's shuffle of `df` by key to the sink's task count, then an Arrow hand-off to Python
    where `task` (by default, one that does nothing but count) gets each task's rows: the cost a
    Python writer pays before its own work starts (with the Arrow batch settings the sink uses once
    it knows the rows' width)."""
    from ingest.spark.sink import arrow_batch_settings, session_conf

    tasks = spark.sparkContext.defaultParallelism
    with session_conf(spark, arrow_batch_settings(spark, row_bytes)):
        df.repartition(tasks, "order_id").mapInArrow(task, "rows long").collect()


def _bare_writer(folder: str, kind: str):
    """A write task that does only what any Python writer of Hudi files must: Hudi's five meta
    columns added to the task's rows, then one parquet file (snappy) or one Avro data block of them,
    written to `folder`. No bloom filter, pre-combining, key index, file-group split or commit."""

    def write(batches):
        import uuid

        import pyarrow as pa
        import pyarrow.parquet as pq

        from ingest.hudi.avro import avro_encoder
        from ingest.hudi.avro import schema as avro

        table = pa.Table.from_batches(list(batches)).combine_chunks()
        name = f"{uuid.uuid4()}-0_0-0-0_{INSTANT}.{'parquet' if kind == 'parquet' else 'log'}"
        rows = with_meta(table, name, log_records=kind != "parquet")
        if kind == "parquet":
            pq.write_table(rows, f"{folder}/{name}", compression="snappy")
        else:
            schema = avro.with_meta_fields(avro.arrow_to_avro(table.schema, "orders"))
            with open(f"{folder}/{name}", "wb") as out:
                out.write(avro_encoder.avro_data_block_content(avro_encoder.encode_batch(rows, schema)))
        yield pa.RecordBatch.from_pydict({"rows": pa.array([table.num_rows], pa.int64())})

    return write


def bare_writer(spark, df, folder: Path, kind: str, row_bytes: float | None = None) -> None:
    """`shuffle_to_python`, with each task writing its rows as `_bare_writer` does: the floor under
    any Python writer of Hudi's files behind a shuffle, against which our own time is the work of
    the table format (bloom filters, pre-combining, the key index, file groups, the commit)."""
    folder.mkdir(parents=True, exist_ok=True)
    shuffle_to_python(spark, df, row_bytes, task=_bare_writer(str(folder), kind))


def warm_up(spark, work: Path) -> None:
    """One small run of every path measured, so that no figure pays for JVM and worker start-up."""
    from ingest.spark.sink import HudiSink
    from ingest.write.commit import BatchId

    df = events(spark, 20_000).cache()
    df.count()
    df.write.mode("append").parquet(str(work / "warm-parquet"))
    shuffle_to_python(spark, df)
    for kind in ("parquet", "avro"):
        bare_writer(spark, df, work / "warm-bare", kind)
    with HudiSink(options(str(work / "warm"), 2, insert_mode="base"), spark=spark) as sink:
        sink.write(df)
    with HudiSink(options(str(work / "warm"), 2), spark=spark) as sink:
        sink.write(df, batch=BatchId("warm", 0))
    with HudiSink(options(str(work / "warm-key"), 2, insert_mode=None, index="key"), spark=spark) as sink:
        sink.write(df, batch=BatchId("warm", 0))
        sink.write(df, batch=BatchId("warm", 1))
    df.unpersist()
    shutil.rmtree(work / "warm", ignore_errors=True)
    shutil.rmtree(work / "warm-key", ignore_errors=True)
    shutil.rmtree(work / "warm-parquet", ignore_errors=True)
    shutil.rmtree(work / "warm-bare", ignore_errors=True)


def measure_sink(spark, args, work: Path) -> dict:
    from ingest.hudi.table.snapshot import read_snapshot
    from ingest.hudi.table.table import HudiTable
    from ingest.spark.sink import HudiSink
    from ingest.write.commit import BatchId

    upsert_rows = args.upsert_rows or max(1, args.rows // 5)
    base = events(spark, args.rows, partitions=args.partitions).cache()
    base.count()
    out: dict = {"rows": args.rows, "upsert_rows": upsert_rows, "rounds": args.rounds, "buckets": args.buckets,
                 "partitions": args.partitions}
    out["spark_parquet_base_s"], _ = timed(lambda: base.write.mode("append").parquet(str(work / "parquet_base")))

    table_path = str(work / "hudi")
    with HudiSink(options(table_path, args.buckets, insert_mode="base"), spark=spark) as bulk:
        out["bulk_load_s"], result = timed(lambda: bulk.write(base))
    out["bulk_load_files"] = result.files
    out["bulk_load_vs_spark_parquet"] = out["bulk_load_s"] / out["spark_parquet_base_s"]
    out.update(task_peaks("bulk_load", [bulk.task_peaks]))
    # After our load, so that it does not warm the Python workers' memory for it.
    out["bare_parquet_writer_s"], _ = timed(lambda: bare_writer(spark, base, work / "bare-base", "parquet",
                                                                bulk.row_bytes))
    out["bare_parquet_writer_vs_spark_parquet"] = out["bare_parquet_writer_s"] / out["spark_parquet_base_s"]
    base.unpersist()
    upserts = []

    parquet_times, floor_times, upsert_times, bare_times = [], [], [], []
    with HudiSink(options(table_path, args.buckets, insert_mode="log"), spark=spark) as sink:
        for r in range(args.rounds):
            upsert = upsert_batch(spark, args, r).cache()
            upsert.count()
            seconds, _ = timed(lambda upsert=upsert, r=r: upsert.write.mode("append").parquet(
                str(work / f"parquet-{r}")))
            parquet_times.append(seconds)
            seconds, _ = timed(lambda upsert=upsert: shuffle_to_python(spark, upsert, sink.row_bytes))
            floor_times.append(seconds)
            seconds, result = timed(lambda upsert=upsert, r=r: sink.write(upsert, batch=BatchId("benchmark", r)))
            upsert_times.append(seconds)
            upserts.append(sink.task_peaks)
            seconds, _ = timed(lambda upsert=upsert, r=r: bare_writer(spark, upsert, work / f"bare-{r}", "avro",
                                                                      sink.row_bytes))
            bare_times.append(seconds)
            upsert.unpersist()
        out.update(task_peaks("upsert", upserts))
        out["key_index_bytes"] = key_index_bytes(table_path)
        out["upsert_written"] = result.counts.get("upserts", 0)
        out["spark_parquet_append_s"] = statistics.median(parquet_times)
        out["upsert_s"] = statistics.median(upsert_times)
        out["spark_shuffle_to_python_s"] = statistics.median(floor_times)
        out["spark_shuffle_to_python_rounds_s"] = floor_times
        out["spark_parquet_append_rounds_s"] = parquet_times
        out["upsert_rounds_s"] = upsert_times
        out["upsert_time_vs_spark_parquet"] = out["upsert_s"] / out["spark_parquet_append_s"]
        out["shuffle_to_python_vs_spark_parquet"] = out["spark_shuffle_to_python_s"] / out["spark_parquet_append_s"]
        out["bare_avro_writer_s"] = statistics.median(bare_times)
        out["bare_avro_writer_vs_spark_parquet"] = out["bare_avro_writer_s"] / out["spark_parquet_append_s"]
        out["upsert_rows_per_s"] = upsert_rows / out["upsert_s"]

        latencies = []
        for i, small in enumerate(small_batches(spark, args)):
            seconds, _ = timed(lambda small=small, i=i: sink.write(
                small, batch=BatchId("benchmark", args.rounds + i)))
            latencies.append(seconds)
        out["small_batch_commit_p50_s"] = statistics.median(latencies)
        out["small_batch_commit_p95_s"] = sorted(latencies)[max(0, int(round(0.95 * len(latencies))) - 1)]
    out["table_rows_after"] = read_snapshot(HudiTable.open(table_path)).num_rows if args.rows <= 2_000_000 else None
    return out


def small_batches(spark, args) -> list:
    """The small batches, made before any is timed, each a DataFrame over its rows in memory: the
    same plan for every batch, as a stream's source hands its batches over. `events` bakes each
    batch's seed into its plan, and Spark compiled two new classes for every such batch (20-40 ms
    a batch here), which a stream, its plan the same from batch to batch, never does."""
    return [spark.createDataFrame(events(spark, args.small_batch_rows, key_space=args.rows, ts=10 + i,
                                         partitions=args.partitions, seed=100 + i).toArrow())
            for i in range(args.small_batches)]


def measure_second_load(spark, args, work: Path) -> dict:
    """Spark's append and our bulk load of `measure_sink`'s rows once more, each into a place of its
    own, once the upserts and small batches are measured (so that they run as before): the first load
    of each pays for what a process does once (the JVM compiling the paths a large write takes, the
    Python workers' first touch of their memory), the second is what every later load of a long
    backfill costs."""
    from ingest.spark.sink import HudiSink

    base = events(spark, args.rows, partitions=args.partitions).cache()
    base.count()
    out: dict = {}
    out["spark_parquet_base_second_s"], _ = timed(lambda: base.write.mode("append").parquet(
        str(work / "parquet_base_second")))
    table_path = str(work / "hudi-second")
    with HudiSink(options(table_path, args.buckets, insert_mode="base"), spark=spark) as bulk:
        out["bulk_load_second_s"], _ = timed(lambda: bulk.write(base))
    out["bulk_load_second_vs_spark_parquet_second"] = out["bulk_load_second_s"] / out["spark_parquet_base_second_s"]
    base.unpersist()
    shutil.rmtree(table_path, ignore_errors=True)
    shutil.rmtree(work / "parquet_base_second", ignore_errors=True)
    return out


def task_peaks(what: str, peaks: list[dict], suffix: str = "") -> dict:
    """The write tasks' peak memory over commits (`HudiSink.task_peaks` after each): resident, and in
    use (`ingest.spark.peak_memory`)."""
    from ingest.spark.sink import PEAK_NAMES

    return {f"{what}_{name}{suffix}": max((p.get(name) or 0 for p in peaks), default=0) for name in PEAK_NAMES.values()}


def key_index_bytes(table_path: str) -> int:
    """Bytes of the key index's segments on storage (all shards, all segments kept)."""
    from ingest.index.key_state import INDEX_ROOT
    from ingest.storage import Storage

    storage = Storage(table_path)
    return sum(f.size for f in storage.walk_files(INDEX_ROOT)) if storage.exists(INDEX_ROOT) else 0


def measure_scale(spark, args, work: Path, figures: dict) -> dict:
    """`--scale N`: the bulk load and the upsert rounds of `measure_sink` again at N times the rows
    and the upsert rows (the same batch share), on a table of their own; per-row cost at N times
    the size over the cost at 1x (1.0 when cost grows with the rows alone), the key index's bytes
    and the write tasks' peak memory at both sizes."""
    from ingest.spark.sink import HudiSink
    from ingest.write.commit import BatchId

    n = args.scale
    upsert_rows = args.upsert_rows or max(1, args.rows // 5)
    big = argparse.Namespace(**{**vars(args), "rows": args.rows * n, "upsert_rows": upsert_rows * n})
    base = events(spark, big.rows, partitions=args.partitions).cache()
    base.count()
    out: dict = {"scale": n, "rows_scaled": big.rows, "upsert_rows_scaled": big.upsert_rows}
    suffix = f"_{n}x"
    out["spark_parquet_base_s" + suffix], _ = timed(lambda: base.write.mode("append").parquet(
        str(work / "parquet_base_scaled")))
    table_path = str(work / "hudi-scaled")
    with HudiSink(options(table_path, args.buckets, insert_mode="base"), spark=spark) as bulk:
        out["bulk_load_s" + suffix], _ = timed(lambda: bulk.write(base))
    base.unpersist()
    shutil.rmtree(work / "parquet_base_scaled", ignore_errors=True)
    out.update(task_peaks("bulk_load", [bulk.task_peaks], suffix))
    out["bulk_load_vs_spark_parquet" + suffix] = out["bulk_load_s" + suffix] / out["spark_parquet_base_s" + suffix]
    times, results = [], []
    with HudiSink(options(table_path, args.buckets, insert_mode="log"), spark=spark) as sink:
        for r in range(args.rounds):
            upsert = upsert_batch(spark, big, r).cache()
            upsert.count()
            seconds, _ = timed(lambda upsert=upsert, r=r: sink.write(upsert, batch=BatchId("scaled", r)))
            times.append(seconds)
            results.append(sink.task_peaks)
            upsert.unpersist()
    out["upsert_s" + suffix] = statistics.median(times)
    out["upsert_rounds_s" + suffix] = times
    out.update(task_peaks("upsert", results, suffix))
    out["key_index_bytes" + suffix] = key_index_bytes(table_path)
    out[f"bulk_load_per_row_{n}x_ratio"] = (out["bulk_load_s" + suffix] / big.rows) / (figures["bulk_load_s"] / args.rows)
    out[f"upsert_per_row_{n}x_ratio"] = (out["upsert_s" + suffix] / big.upsert_rows) / (figures["upsert_s"] / upsert_rows)
    shutil.rmtree(table_path, ignore_errors=True)
    return out


def measure_default_index(spark, args, work: Path, parquet_append_s: float) -> dict:
    """The default configuration's path: the key index (Hudi's SIMPLE), new keys into base files (small
    files first, as Hudi's writer puts them), updates into logs; the same upsert batches as the bucket path."""
    from ingest.spark.sink import HudiSink
    from ingest.write.commit import BatchId

    path = str(work / "hudi-default")
    base = events(spark, args.rows, partitions=args.partitions).cache()
    base.count()
    out: dict = {}
    with HudiSink(options(path, args.buckets, insert_mode=None, index="key"), spark=spark) as sink:
        out["default_index_load_s"], _ = timed(lambda: sink.write(base, batch=BatchId("default", 0)))
        base.unpersist()
        times = []
        for r in range(args.rounds):
            upsert = upsert_batch(spark, args, r).cache()
            upsert.count()
            seconds, _ = timed(lambda upsert=upsert, r=r: sink.write(upsert, batch=BatchId("default", r + 1)))
            times.append(seconds)
            upsert.unpersist()
    out["upsert_default_index_s"] = statistics.median(times)
    out["upsert_default_index_rounds_s"] = times
    out["upsert_time_vs_spark_parquet_default_index"] = out["upsert_default_index_s"] / parquet_append_s
    return out


def measure_driver_memory(spark, args, work: Path) -> dict:
    """Peak growth of the driver's memory while writing a batch, and a batch four times larger."""
    from ingest.spark.peak_memory import PeakMemory
    from ingest.spark.sink import HudiSink
    from ingest.write.commit import BatchId

    n = args.memory_rows or max(1000, (args.upsert_rows or args.rows // 5) // 4)
    path = str(work / "memory")
    growth = {}
    with HudiSink(options(path, args.buckets), spark=spark) as sink:
        sink.write(events(spark, 1000, partitions=args.partitions), batch=BatchId("memory", 0))  # warm up
        for i, rows in enumerate((n, 4 * n)):
            df = events(spark, rows, key_offset=10_000_000 * (i + 1), partitions=args.partitions)
            with PeakMemory() as rss:
                sink.write(df, batch=BatchId("memory", i + 1))
            growth[rows] = rss.peak
    small, large = growth[n], growth[4 * n]
    return {
        "driver_peak_rss_bytes": {str(k): v for k, v in growth.items()},
        "driver_peak_rss_ratio_4x_rows": large / small,
        "driver_maxrss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def measure_delta(spark, args, work: Path) -> dict:
    try:
        import deltalake
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        return {"delta_available": False, "upsert_throughput_vs_delta_merge": None}
    base = events(spark, args.rows, partitions=args.partitions).toArrow()
    path = str(work / "delta")
    append_s, _ = timed(lambda data=base: deltalake.write_deltalake(path, data, partition_by=["region"]))
    del base
    merge_times, merged_rows = [], 0
    for r in range(args.rounds):
        upsert = upsert_batch(spark, args, r).toArrow()
        if args.key_skew > 0:
            # Skewed batches repeat keys; delta-rs MERGE refuses that, so it gets the last version of
            # each key (de-duplicated here, untimed: our sink's time includes its own pre-combining).
            last = upsert.append_column("_i", pa.array(range(upsert.num_rows))).group_by("order_id") \
                .aggregate([("_i", "max")]).column("_i_max")
            upsert = upsert.filter(pc.is_in(pa.array(range(upsert.num_rows)), value_set=last))
        table = deltalake.DeltaTable(path)
        seconds, _ = timed(lambda table=table, upsert=upsert: table.merge(
            source=upsert, predicate="t.order_id = s.order_id", source_alias="s", target_alias="t")
            .when_matched_update_all().when_not_matched_insert_all().execute())
        merge_times.append(seconds)
        merged_rows = upsert.num_rows
    merge_s = statistics.median(merge_times)
    return {"delta_available": True, "delta_append_s": append_s, "delta_merge_s": merge_s,
            "delta_merge_rounds_s": merge_times, "delta_merge_rows_per_s": merged_rows / merge_s}


def measure_stream(spark, args, work: Path) -> dict:
    """A long stream of small batches with inline table services: does commit time stay flat?"""
    from ingest.hudi.config.service_settings import ServiceSettings
    from ingest.hudi.table.table import HudiTable
    from ingest.services import run_inline_services
    from ingest.spark.sink import HudiSink
    from ingest.write.commit import BatchId

    path = str(work / "stream")
    settings = ServiceSettings.from_mapping({
        "hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "10",
        "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie.cleaner.fileversions.retained": "2",
        "hoodie.keep.min.commits": "20", "hoodie.keep.max.commits": "30", "hoodie.cleaner.commits.retained": "10",
    })
    times = []
    with HudiSink(options(path, min(args.buckets, 4)), spark=spark) as sink:
        for i in range(args.stream_batches):
            df = events(spark, 200, key_space=5_000, ts=i, partitions=2, seed=i)

            def step(df=df, i=i):
                sink.write(df, batch=BatchId("stream", i))
                run_inline_services(HudiTable.open(path), settings, lock=sink.lock)

            seconds, _ = timed(step)
            times.append(seconds)
    table = HudiTable.open(path)
    timeline = table.timeline()
    view = table.view(timeline)
    slices = [len(g.slices) for g in view.groups]
    window = 5
    early = statistics.median(times[19 - window // 2: 19 + window // 2 + 1]) if len(times) >= 25 else times[0]
    late = statistics.median(times[-window:])
    return {
        "stream_batches": args.stream_batches,
        "stream_commit_s_batch_20": early,
        "stream_commit_s_last": late,
        "stream_commit_ratio_last_vs_20": late / early,
        "stream_active_timeline_instants": len(timeline),
        "stream_max_slices_per_file_group": max(slices) if slices else 0,
    }


def report(figures: dict) -> None:
    rows = [
        ("rows in base table", figures.get("rows")),
        ("upsert batch rows", figures.get("upsert_rows")),
        ("partitions x buckets per partition", f"{figures.get('partitions')} x {figures.get('buckets')}"),
        ("Spark parquet append of the upsert batch (s, median)", figures.get("spark_parquet_append_s")),
        ("ingest bulk load, base files (s)", figures.get("bulk_load_s")),
        ("Spark parquet append of the base table (s)", figures.get("spark_parquet_base_s")),
        ("  bulk load / Spark parquet append", figures.get("bulk_load_vs_spark_parquet")),
        ("the same rows again: ingest bulk load, Spark parquet append (s)",
         f"{figures.get('bulk_load_second_s', 0):.3f} / {figures.get('spark_parquet_base_second_s', 0):.3f}"),
        ("  second bulk load / second Spark parquet append", figures.get("bulk_load_second_vs_spark_parquet_second")),
        ("bare Python writer behind the same shuffle: meta columns + parquet (s)", figures.get("bare_parquet_writer_s")),
        ("  bare parquet writer / Spark parquet append", figures.get("bare_parquet_writer_vs_spark_parquet")),
        ("Spark shuffle + Arrow hand-off to Python of the batch, no work (s, median)",
         figures.get("spark_shuffle_to_python_s")),
        ("  shuffle + hand-off / Spark parquet append", figures.get("shuffle_to_python_vs_spark_parquet")),
        ("bare Python writer behind the same shuffle: meta columns + Avro block (s, median)",
         figures.get("bare_avro_writer_s")),
        ("  bare Avro writer / Spark parquet append", figures.get("bare_avro_writer_vs_spark_parquet")),
        ("ingest upsert micro-batch, log mode (s, median)", figures.get("upsert_s")),
        ("  upsert time / Spark parquet append", figures.get("upsert_time_vs_spark_parquet")),
        ("  upsert rows/s", figures.get("upsert_rows_per_s")),
        ("ingest upsert micro-batch, default index: key, inserts in base files (s, median)",
         figures.get("upsert_default_index_s")),
        ("  default index upsert time / Spark parquet append", figures.get("upsert_time_vs_spark_parquet_default_index")),
        ("delta-rs append of the base table (s)", figures.get("delta_append_s")),
        ("delta-rs merge of the upsert batch (s, median)", figures.get("delta_merge_s")),
        ("  upsert rows/s / delta-rs merge rows/s", figures.get("upsert_throughput_vs_delta_merge")),
        ("small batch commit p50 (s)", figures.get("small_batch_commit_p50_s")),
        ("small batch commit p95 (s)", figures.get("small_batch_commit_p95_s")),
        ("encoder rows/s, ours", figures.get("encoder_ours_rows_per_s")),
        ("encoder rows/s, fastavro", figures.get("encoder_fastavro_rows_per_s")),
        (f"  encoder speed-up (bytes identical: {figures.get('encoder_bytes_identical')})",
         figures.get("encoder_speedup_vs_fastavro")),
        ("driver peak RSS, 4x rows / 1x rows", figures.get("driver_peak_rss_ratio_4x_rows")),
    ]
    rows += scale_rows(figures)
    if figures.get("stream_batches"):
        rows += [
            (f"stream: commit time, batch {figures['stream_batches']} / batch 20",
             figures.get("stream_commit_ratio_last_vs_20")),
            ("stream: active timeline instants", figures.get("stream_active_timeline_instants")),
            ("stream: max file slices per file group", figures.get("stream_max_slices_per_file_group")),
        ]
    print_table(rows)


def scale_rows(figures: dict) -> list[tuple[str, object]]:
    """The table's lines for `--scale N` (none without it)."""
    n = figures.get("scale")
    if not n:
        return []
    mib = 1 << 20

    def both(key: str, unit: int = 1) -> str:
        small, large = figures.get(key), figures.get(f"{key}_{n}x")
        if small is None or large is None:
            return "-"
        return f"{small / unit:,.1f} / {large / unit:,.1f}"

    return [
        (f"bulk load of {figures.get('rows_scaled'):,} rows (s)", figures.get(f"bulk_load_s_{n}x")),
        ("  Spark parquet append of the same rows (s)", figures.get(f"spark_parquet_base_s_{n}x")),
        ("  bulk load / Spark parquet append", figures.get(f"bulk_load_vs_spark_parquet_{n}x")),
        (f"  bulk load per-row cost, {n}x rows / 1x rows", figures.get(f"bulk_load_per_row_{n}x_ratio")),
        (f"upsert of {figures.get('upsert_rows_scaled'):,} rows (s, median)", figures.get(f"upsert_s_{n}x")),
        (f"  upsert per-row cost, {n}x rows / 1x rows", figures.get(f"upsert_per_row_{n}x_ratio")),
        (f"key index on storage, MiB (1x / {n}x)", both("key_index_bytes", mib)),
        (f"write-task peak memory in use, bulk load, MiB (1x / {n}x)", both("bulk_load_task_peak_in_use_bytes", mib)),
        (f"write-task peak memory in use, upsert, MiB (1x / {n}x)", both("upsert_task_peak_in_use_bytes", mib)),
        (f"write-task peak RSS (worker kept), bulk load, MiB (1x / {n}x)", both("bulk_load_task_peak_rss_bytes", mib)),
        (f"write-task peak RSS (worker kept), upsert, MiB (1x / {n}x)", both("upsert_task_peak_rss_bytes", mib)),
    ]


def print_table(rows: list[tuple[str, object]]) -> None:
    width = max(len(r[0]) for r in rows)
    for label, value in rows:
        if value is None:
            text = "-"
        elif isinstance(value, float):
            text = f"{value:,.3f}"
        else:
            text = f"{value:,}" if isinstance(value, int) else str(value)
        print(f"{label.ljust(width)}  {text}")


def machine(spark, args) -> dict:
    return {"cpus": os.cpu_count(), "master": args.master, "python": sys.version.split()[0], "spark": spark.version}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from ingest.spark.session import get_or_create

    spark = get_or_create(master=args.master, app_name="ingest-benchmark",
                          conf={"spark.sql.shuffle.partitions": "4", "spark.driver.memory": "6g"})
    work = Path(args.workdir or tempfile.mkdtemp(prefix="ingest-bench-"))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    figures: dict = {}
    if args.kafka:
        return finish_kafka(spark, args, work)
    warm_up(spark, work)
    figures.update(measure_sink(spark, args, work))
    figures.update(measure_second_load(spark, args, work))
    if args.scale > 1:
        figures.update(measure_scale(spark, args, work, figures))
    figures.update(measure_default_index(spark, args, work, figures["spark_parquet_append_s"]))
    figures.update(measure_driver_memory(spark, args, work))
    figures.update(measure_encoder(spark, min(args.encoder_rows, args.rows)))
    if not args.skip_delta:
        figures.update(measure_delta(spark, args, work))
        if figures.get("delta_available"):
            figures["upsert_throughput_vs_delta_merge"] = figures["upsert_rows_per_s"] / figures["delta_merge_rows_per_s"]
    figures.setdefault("upsert_throughput_vs_delta_merge", None)
    if args.stream_batches:
        figures.update(measure_stream(spark, args, work))
    figures["machine"] = machine(spark, args)
    report(figures)
    print(json.dumps(figures, default=str))
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    return 0


def finish_kafka(spark, args, work: Path) -> int:
    """`--kafka`: the Kafka path's figures (jobs/benchmark_kafka.py), a table, then one JSON line."""
    from benchmark_kafka import measure_kafka, report_kafka

    figures = measure_kafka(spark, args, work)
    figures["machine"] = machine(spark, args)
    print_table(report_kafka(figures))
    print(json.dumps(figures, default=str))
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

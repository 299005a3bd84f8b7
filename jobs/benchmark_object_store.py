"""Benchmark of a commit's requests to an object store: S3 requests and time per micro-batch.

A stream pays its commit's metadata work every micro-batch, and on an object store each storage call
is a request. This job writes `--commits` small batches (`--rows` rows over `--partitions`
partitions, keys drawn from a fixed space so that later batches update earlier rows) through
`LocalWriter` into a table on moto's S3 server on loopback, and into the same table on a local disk,
and prints the median commit time of each and the S3 requests of the last commit, by API call
(counted where s3fs makes them, `S3FileSystem._call_s3`), then one JSON line. The two tables must
read back the same rows, or the run fails. The write tasks run in
this process, so their requests (one marker and one file per file group written) are counted too.

    python jobs/benchmark_object_store.py [--index bucket|key] [--commits 12] [--partitions 8]

Needs `moto[server]`, `boto3` and `s3fs` (`pip install -e ".[test]"`). Loopback requests take a few
milliseconds; a real object store's take tens, so there the requests are most of a commit's time.
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from ingest.write.batch import LocalWriter
from ingest.write.options import IndexOptions, IndexType, WriteOptions


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--index", choices=["bucket", "key"], default="bucket", help="the table's index (default bucket)")
    p.add_argument("--commits", type=int, default=12, help="batches written, one commit each (default 12)")
    p.add_argument("--partitions", type=int, default=8, help="partitions each batch spreads over (default 8)")
    p.add_argument("--rows", type=int, default=200, help="rows per batch (default 200)")
    p.add_argument("--buckets", type=int, default=4, help="buckets per partition, bucket index (default 4)")
    return p.parse_args(argv)


def batch(i: int, rows: int, partitions: int) -> pa.Table:
    keys = [(i * 37 + j) % (rows * 5) for j in range(rows)]
    return pa.table({"id": [f"key-{k}" for k in keys], "part": [f"p{k % partitions}" for k in keys],
                     "ts": pa.array([i] * rows, pa.int64()), "v": [f"value-{i}"] * rows})


def options(path: str, args, storage_options: dict | None = None) -> WriteOptions:
    return WriteOptions(
        table_path=path, table_name="orders", storage_options=storage_options or {},
        hudi={"hoodie.datasource.write.recordkey.field": "id",
              "hoodie.datasource.write.partitionpath.field": "part",
              "hoodie.datasource.write.precombine.field": "ts"},
        index=IndexOptions(type=IndexType(args.index), bucket_count=args.buckets))


def stream(writer: LocalWriter, args, requests: collections.Counter | None = None) -> tuple[list[float], dict]:
    """Commit times, and the S3 calls of the last commit (`requests` counts them as they are made)."""
    times, last = [], {}
    for i in range(args.commits):
        if requests is not None:
            requests.clear()
        start = time.perf_counter()
        writer.write(batch(i, args.rows, args.partitions))
        times.append(time.perf_counter() - start)
        last = dict(requests or {})
    return times, last


def table_rows(path: str, storage_options: dict) -> set[tuple]:
    """The table's rows as Hudi's snapshot query reads them (the same on both stores, or the run fails)."""
    from ingest.hudi.table.snapshot import read_snapshot
    from ingest.hudi.table.table import HudiTable

    return {(r["id"], r["part"], r["ts"], r["v"]) for r in read_snapshot(HudiTable.open(path, storage_options)).to_pylist()}


def counting_s3_calls(requests: collections.Counter) -> None:
    """Count every S3 API call s3fs makes, by name (the call itself goes through unchanged)."""
    import s3fs

    real = s3fs.S3FileSystem._call_s3

    async def counted(self, method, *args, **kwargs):
        requests[method if isinstance(method, str) else getattr(method, "__name__", str(method))] += 1
        return await real(self, method, *args, **kwargs)

    s3fs.S3FileSystem._call_s3 = counted


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    work = Path(tempfile.mkdtemp(prefix="ingest-bench-os-"))
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="k", aws_secret_access_key="s",
                     region_name="us-east-1").create_bucket(Bucket="lake")
        s3 = {"key": "k", "secret": "s", "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
        requests: collections.Counter = collections.Counter()
        counting_s3_calls(requests)
        s3_times, last_commit = stream(LocalWriter(options("s3://lake/orders", args, s3)), args, requests)
        local_times, _ = stream(LocalWriter(options(str(work / "orders"), args)), args)
        s3_rows, local_rows = table_rows("s3://lake/orders", s3), table_rows(str(work / "orders"), {})
        if s3_rows != local_rows:
            raise SystemExit(f"the S3 table and the local one differ: {len(s3_rows)} against {len(local_rows)} rows")
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    warm = max(1, args.commits // 6)  # the first commits create the table and its folders
    figures = {
        "index": args.index, "commits": args.commits, "rows": args.rows, "partitions": args.partitions,
        "s3_commit_median_s": statistics.median(s3_times[warm:]),
        "local_commit_median_s": statistics.median(local_times[warm:]),
        "s3_requests_last_commit": dict(sorted(last_commit.items())),
        "s3_requests_last_commit_total": sum(last_commit.values()),
        "table_rows": len(s3_rows),
    }
    print(f"{args.commits} commits of {args.rows} rows over {args.partitions} partitions, {args.index} index")
    print(f"  commit median, moto S3 on loopback  {figures['s3_commit_median_s']:.3f} s")
    print(f"  commit median, local disk           {figures['local_commit_median_s']:.3f} s")
    print(f"  S3 requests of the last commit      {figures['s3_requests_last_commit_total']}")
    for name, count in figures["s3_requests_last_commit"].items():
        print(f"    {name:32s} {count}")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

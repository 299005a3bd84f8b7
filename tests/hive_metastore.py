"""The `metastore` fixture: a real Hive Metastore on loopback (`ingest.catalog.embedded_metastore`)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def metastore(tmp_path_factory):
    pytest.importorskip("hmsclient", reason="the ingest[hive] extra is not installed")
    from ingest.catalog.embedded_metastore import start_metastore

    ms = start_metastore(tmp_path_factory.mktemp("metastore"))
    yield ms
    ms.stop()

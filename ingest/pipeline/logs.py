"""Logging for the jobs: ingest's own lines at INFO on stderr, everyone else's warnings only.

Kafka clients, py4j and Spark log plenty at INFO; an operator wants the per-batch lines. The sink's
own per-batch line is left out: the job logs a fuller one (with decode errors and Kafka lag).
"""

from __future__ import annotations

import logging
import warnings

from ingest.pipeline.progress import BarAwareHandler

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure(verbose: bool = False) -> None:
    """Install the stderr handler (once: calling again replaces it, other handlers stay)."""
    handler = BarAwareHandler()
    handler.setFormatter(logging.Formatter(FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [h for h in root.handlers if not isinstance(h, BarAwareHandler)] + [handler]
    if verbose:
        root.setLevel(logging.INFO)
    logging.getLogger("ingest").setLevel(logging.DEBUG if verbose else logging.INFO)
    logging.getLogger("ingest.spark.sink").setLevel(logging.INFO if verbose else logging.WARNING)
    # pyspark warns about the installed pandas version on every Arrow UDF it plans.
    warnings.filterwarnings("ignore", category=FutureWarning, module="pyspark")

"""Reading a pipeline configuration: YAML, `${ENV}` interpolation, `--set` overrides, validation.

`load_config(path, overrides)` gives a checked `PipelineConfig` or raises `ConfigError`: one line
naming the file (or `--set`), the key and what is allowed, before anything starts Spark. Keys,
types and defaults come from `ingest.config.keys`; this module applies them:

1. the file is read (a key given twice is an error, as PyYAML would silently keep the last),
   `${NAME}` is replaced in every text value, each key is looked up (an unknown one suggests the
   closest valid name) and typed;
2. `--set SECTION.KEY=VALUE` items are read the same way and override the file;
3. rules across keys are checked (one source; topics or a pattern; bucket settings only with the
   bucket index; ...), then the writer's options and the Kafka decoder are built, which checks
   what they know (key generator settings, schema files, field names);
4. if the table exists, its `hoodie.properties` must agree with what the writer would record.

No message repeats a secret: values of secret keys are scrubbed from any message that would
carry one, wherever it was raised.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from ingest.config.gathering import Gathered, scrubbed
from ingest.config.pipeline import PipelineConfig
from ingest.config.resolver import Resolver
from ingest.errors import ConfigError


def load_config(
    path: str | os.PathLike[str],
    overrides: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    check_table: bool = True,
) -> PipelineConfig:
    """The checked configuration of the file at `path`, with `--set` items applied.

    `check_table=False` skips opening the table (for checking files where the lake is out of reach).
    """
    origin = str(path)
    gathered = Gathered(os.environ if env is None else env)
    try:
        gathered.read_file(origin)
        gathered.read_overrides(overrides)
        return Resolver(gathered, origin).config(check_table)
    except ConfigError as e:
        raise scrubbed(e, gathered.secrets, gathered.from_env) from None



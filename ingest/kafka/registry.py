"""Schemas from a Confluent Schema Registry, as HoodieStreamer's `SchemaRegistryProvider` reads them.

Mirrors org.apache.hudi.utilities.schema.SchemaRegistryProvider: the source schema is the one at
`hoodie.streamer.schemaprovider.registry.url` (a subject version, `.../subjects/<s>/versions/latest`),
the target schema the one at `...registry.targetUrl` (the source URL when unset), and credentials in
the URL (`https://user:pass@host/...`) are sent as basic auth. Hudi drops both schemas at the start
of every sync round (`refresh()`), so a new version of the subject reaches the next commit; here the
driver fetches them for every batch. When no URL is given they are built as HoodieMultiTableStreamer
does: `baseUrl` + topic + `urlSuffix` (else `sourceUrlSuffix` / `targetUrlSuffix`).

The writer schema of each message (its Confluent schema id) is what Hudi leaves to Confluent's
KafkaAvroDeserializer: GET /schemas/ids/{id} on the registry the subject URL is under, cached for
the life of the process (ids never change meaning) in a module-level cache keyed by registry and id,
so each Spark executor asks once per id. An id the registry answers "not found" is a bad record;
any other failure (refused connection, timeout, 5xx, refused credentials) raises
`RegistryUnavailable` naming the URL, which fails the batch: nothing is quarantined for it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from ingest.errors import ConfigError, IngestError

SUBJECTS = "/subjects/"
SCHEMA_NOT_FOUND = 40403  # the registry's error code for an unknown schema id
VERSION_NOT_FOUND = 40402
SUBJECT_NOT_FOUND = 40401
URL_KEY = "hoodie.streamer.schemaprovider.registry.url"  # Hudi's HoodieSchemaProviderConfig.SRC_SCHEMA_REGISTRY_URL


class RegistryUnavailable(IngestError):
    """The registry could not answer (down, unreachable, refusing us): the batch fails and is retried."""


def without_credentials(url: str) -> str:
    """The URL as messages may show it: user and password removed."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


@dataclass(frozen=True)
class SubjectVersion:
    """A `.../subjects/<subject>/versions/<version>` URL taken apart: registry root, subject, version."""

    root: str
    subject: str
    version: str

    @classmethod
    def parse(cls, url: str, key: str) -> SubjectVersion:
        parts = urlsplit(url)
        path = parts.path
        at = path.rfind(SUBJECTS)
        tail = path[at + len(SUBJECTS):].split("/") if at >= 0 else []
        if parts.scheme not in ("http", "https") or len(tail) != 3 or tail[1] != "versions" or not tail[0] \
                or not (tail[2] == "latest" or tail[2].isdigit()):
            raise ConfigError(f"{without_credentials(url)!r} is not a schema registry subject version URL "
                              "(http[s]://[user:pass@]host[:port][/path]/subjects/<subject>/versions/latest)", key=key)
        root = urlunsplit(parts._replace(path=path[:at], query="", fragment=""))
        return cls(root=root, subject=unquote(tail[0]), version=tail[2])

    @property
    def shown(self) -> str:
        """The URL without credentials, for messages."""
        return f"{without_credentials(self.root)}{SUBJECTS}{self.subject}/versions/{self.version}"

    def __repr__(self) -> str:
        return f"SubjectVersion({self.shown})"


@dataclass(frozen=True)
class RegistrySettings:
    """Where the source and target schemas are, and how to reach the registry (TLS, timeout).

    Pickled to the executors with the decoder spec; the key password is a `Secret`."""

    source: SubjectVersion
    target: SubjectVersion
    ssl_ca_location: str | None = None
    ssl_certificate_location: str | None = None
    ssl_key_location: str | None = None
    ssl_key_password: str | None = None
    timeout_seconds: float = 30.0

    def client_conf(self, root: str) -> dict[str, Any]:
        conf: dict[str, Any] = {"url": root, "timeout": self.timeout_seconds}
        optional = {
            "ssl.ca.location": self.ssl_ca_location,
            "ssl.certificate.location": self.ssl_certificate_location,
            "ssl.key.location": self.ssl_key_location,
            "ssl.key.password": None if self.ssl_key_password is None else str(self.ssl_key_password),
        }
        conf.update({k: v for k, v in optional.items() if v is not None})
        return conf

    def __repr__(self) -> str:
        return f"RegistrySettings(source={self.source.shown}, target={self.target.shown})"


def subject_urls(url: str | None, target_url: str | None, base_url: str | None, topics: tuple[str, ...],
                 suffixes: tuple[str | None, str | None, str | None]) -> tuple[str, str] | None:
    """The source and target subject URLs from Hudi's keys (HoodieMultiTableStreamer's rule for
    `baseUrl`: base + topic + `urlSuffix`, else the source / target suffix); None without any."""
    url_suffix, source_suffix, target_suffix = suffixes
    if not url and not base_url:
        return None
    if not url or (not target_url and base_url):
        if len(topics) != 1:
            raise ConfigError("builds the subject URL from the topic name: it needs exactly one topic in "
                              "source.kafka.topics", key="hoodie.streamer.schemaprovider.registry.baseUrl")
    source = url or f"{base_url}{topics[0]}{url_suffix or source_suffix or ''}"
    if target_url:
        target = target_url
    elif base_url:
        target = f"{base_url}{topics[0]}{url_suffix or target_suffix or ''}"
    else:
        target = source
    return source, target


# -- the per-process client and caches -----------------------------------------------------------

_LOCK = threading.Lock()
_CLIENTS: dict[tuple[str, tuple], Any] = {}
_WRITER_SCHEMAS: dict[tuple[str, int], str] = {}


def _client(settings: RegistrySettings, root: str):
    from confluent_kafka.schema_registry import SchemaRegistryClient

    conf = settings.client_conf(root)
    key = (root, tuple(sorted((k, str(v)) for k, v in conf.items())))
    with _LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            client = _CLIENTS[key] = SchemaRegistryClient(conf)
        return client


def _unavailable(url: str, error: Exception) -> RegistryUnavailable:
    detail = str(error).splitlines()[0] if str(error) else type(error).__name__
    return RegistryUnavailable(f"schema registry {without_credentials(url)} did not answer: {detail} "
                               "(the batch fails and is read again when the stream restarts)")


def _avro_text(schema: Any, url: str) -> str:
    kind = schema.schema_type or "AVRO"
    if kind != "AVRO":
        raise RegistryUnavailable(f"schema registry {without_credentials(url)}: a {kind} schema, not Avro")
    return schema.schema_str


def writer_schema(settings: RegistrySettings, schema_id: int) -> str | None:
    """The Avro schema text registered under `schema_id`, None when the registry does not know it."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    root = settings.source.root
    cache_key = (without_credentials(root), schema_id)
    found = _WRITER_SCHEMAS.get(cache_key)
    if found is not None:
        return found
    url = f"{root}/schemas/ids/{schema_id}"
    try:
        schema = _client(settings, root).get_schema(schema_id)
    except SchemaRegistryError as e:
        if e.http_status_code == 404 and e.error_code == SCHEMA_NOT_FOUND:
            return None
        raise _unavailable(url, e) from None
    except Exception as e:  # transport failures (refused, timeout, TLS) come as the HTTP library's errors
        raise _unavailable(url, e) from None
    text = _avro_text(schema, url)
    with _LOCK:
        _WRITER_SCHEMAS[cache_key] = text
    return text


def subject_schema(settings: RegistrySettings, where: SubjectVersion) -> str:
    """The Avro schema text of a subject version, fetched now (the latest is never cached)."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    url = where.shown
    version: int | str = int(where.version) if where.version.isdigit() else where.version
    try:
        registered = _client(settings, where.root).get_version(where.subject, version)
    except SchemaRegistryError as e:
        if e.http_status_code == 404 and e.error_code in (SUBJECT_NOT_FOUND, VERSION_NOT_FOUND):
            raise ConfigError(f"the schema registry has no {where.subject} version {where.version} at "
                              f"{where.shown}", key=URL_KEY) from None
        raise _unavailable(url, e) from None
    except Exception as e:
        raise _unavailable(url, e) from None
    return _avro_text(registered.schema, url)

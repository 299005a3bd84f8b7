"""Kafka client settings, checked and turned into kafka-python's, without Spark.

Spark's Kafka source takes client properties as `kafka.<name>`; ingest's Python source reads them
with kafka-python, whose settings are the same names with `_` (see `ingest.spark.kafka_source`).
The pipeline configuration checks them here, before Spark starts, so that a bad setting is one line
naming it; the source applies the same function when it builds its consumers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ingest.errors import ConfigError

# Client settings the source decides (as Spark's connector refuses them too).
_MANAGED_CLIENT_KEYS = {
    "auto.offset.reset": "offsets come from startingOffsets and the checkpoint",
    "enable.auto.commit": "the checkpoint holds the offsets",
    "key.deserializer": "keys are returned as bytes",
    "value.deserializer": "values are returned as bytes",
    "interceptor.classes": "Java interceptors do not apply to kafka-python",
}
_RENAMED_CLIENT_KEYS = {
    "sasl.plain.username": "sasl_plain_username",
    "sasl.plain.password": "sasl_plain_password",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
    "ssl.keystore.password": "ssl_password",
    "ssl.key.password": "ssl_password",
}
_INT_CLIENT_KEYS = {"receive_buffer_bytes", "send_buffer_bytes"}  # kafka-python defaults them to None
_JAAS_LOGIN_MODULES = ("PlainLoginModule", "ScramLoginModule")
# Settings whose kafka-python reading is narrower than the Java client's.
_JAVA_ONLY_CHECKS = {"sasl.jaas.config", "ssl.truststore.location", "ssl.keystore.location"}


def parse_api_version(text: str) -> tuple[int, ...]:
    """`2.3`, `2.3.0` or `2,3` as kafka-python's api_version tuple."""
    parts = [p for p in re.split(r"[.,\s()]+", text.strip()) if p]
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ConfigError(f"must look like 2.3 or 2.3.0, got {text!r}", key="kafka.api.version")
    return tuple(int(p) for p in parts)


def _parse_jaas(text: str) -> dict[str, str]:
    """Username and password from a PLAIN or SCRAM `sasl.jaas.config` line."""
    module = text.strip().split(None, 1)[0] if text.strip() else ""
    if not module.endswith(_JAAS_LOGIN_MODULES):
        raise ConfigError(
            f"only PlainLoginModule and ScramLoginModule are understood, got {module or 'nothing'!r}; "
            "for GSSAPI set kafka.sasl.mechanism=GSSAPI and kafka.sasl.kerberos.service.name",
            key="kafka.sasl.jaas.config",
        )
    values = dict(re.findall(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"', text))
    if "username" not in values or "password" not in values:
        raise ConfigError('needs username="..." and password="..."', key="kafka.sasl.jaas.config")
    return {
        "sasl_plain_username": values["username"].replace('\\"', '"'),
        "sasl_plain_password": values["password"].replace('\\"', '"'),
    }


def _convert_client_value(key: str, option: str, value: str, default: Any) -> Any:
    if key in _INT_CLIENT_KEYS or (isinstance(default, int) and not isinstance(default, bool)):
        try:
            return int(value)
        except ValueError:
            raise ConfigError(f"must be an integer, got {value!r}", key=option) from None
    if isinstance(default, bool):
        if value.strip().lower() not in ("true", "false"):
            raise ConfigError(f"must be true or false, got {value!r}", key=option)
        return value.strip().lower() == "true"
    if isinstance(default, float):
        try:
            return float(value)
        except ValueError:
            raise ConfigError(f"must be a number, got {value!r}", key=option) from None
    if default is None or isinstance(default, str):
        return value
    raise ConfigError("is not a setting kafka-python takes as text", key=option)


def consumer_config(options: Mapping[str, str], *, java_client: bool = False) -> dict[str, Any]:
    """kafka-python KafkaConsumer settings from the `kafka.*` options (see ingest.spark.kafka_source).

    `java_client=True` checks options for Spark's connector, whose Java client takes settings
    kafka-python lacks (any JAAS login module, JKS stores, ...): only the settings the source manages
    are refused, and the values of settings both clients share are type-checked.
    """
    from kafka import KafkaConsumer

    defaults = KafkaConsumer.DEFAULT_CONFIG
    lowered = {str(k).lower(): str(v) for k, v in options.items()}
    config: dict[str, Any] = {}
    truststore_type = lowered.get("kafka.ssl.truststore.type", "JKS").upper()
    keystore_type = lowered.get("kafka.ssl.keystore.type", "JKS").upper()
    for option, value in sorted(lowered.items()):
        if not option.startswith("kafka."):
            continue
        name = option[len("kafka.") :]
        if name in _MANAGED_CLIENT_KEYS:
            raise ConfigError(f"is not supported: {_MANAGED_CLIENT_KEYS[name]}", key=option)
        if name in ("ssl.truststore.type", "ssl.keystore.type"):
            continue
        if name == "api.version":
            config["api_version"] = parse_api_version(value)
        elif java_client and (name in _JAVA_ONLY_CHECKS or name.replace(".", "_") not in defaults):
            continue
        elif name == "sasl.jaas.config":
            config.update(_parse_jaas(value))
        elif name == "ssl.truststore.location":
            if truststore_type != "PEM":
                raise ConfigError(
                    f"kafka-python reads PEM files; this truststore is {truststore_type}: convert it "
                    "(keytool -exportcert -rfc) and set kafka.ssl.truststore.type=PEM",
                    key=option,
                )
            config["ssl_cafile"] = value
        elif name == "ssl.keystore.location":
            if keystore_type != "PEM":
                raise ConfigError(
                    f"kafka-python reads PEM files; this keystore is {keystore_type}: convert it to one "
                    "PEM file holding certificate and key and set kafka.ssl.keystore.type=PEM",
                    key=option,
                )
            config["ssl_certfile"] = value
        elif name == "ssl.truststore.password":
            continue  # PEM trust material has no password
        elif name == "ssl.endpoint.identification.algorithm":
            config["ssl_check_hostname"] = value.strip().lower() == "https"
        elif name in _RENAMED_CLIENT_KEYS:
            config[_RENAMED_CLIENT_KEYS[name]] = value
        else:
            key = name.replace(".", "_")
            if key not in defaults or key in ("key_deserializer", "value_deserializer", "kafka_client"):
                raise ConfigError(
                    "has no kafka-python equivalent (see ingest.spark.kafka_source for the supported "
                    "kafka.* options)",
                    key=option,
                )
            config[key] = _convert_client_value(key, option, value, defaults[key])
    if "bootstrap_servers" not in config:
        raise ConfigError("is required", key="kafka.bootstrap.servers")
    return config

"""A Confluent Schema Registry on loopback for tests: the endpoints confluent_kafka's client calls.

Written from the registry's API reference (Schemas and Subjects, v1):

    POST /subjects/{subject}/versions        register a schema -> {"id": n}; the same schema gets the same id
    GET  /schemas/ids/{id}                   -> {"schema": text}, 404 error_code 40403 when unknown
    GET  /subjects/{subject}/versions/{v}    v a number or `latest` -> {"subject", "id", "version", "schema"};
                                             404 error_code 40401 (no subject) / 40402 (no version)
    GET  /associations/resources/{ns}/{name} the subjects associated with a topic (newer serializers ask
                                             first): none here, so the serializer falls back to the
                                             topic name strategy (`<topic>-value`)

Errors are JSON `{"error_code", "message"}`. With `users`, every request needs HTTP basic auth with
one of them (401 otherwise). With `tls` (a PEM certificate and key file) it speaks HTTPS. `stop()`
and `start()` take the server down and bring it back on the same port; `requests` counts what was
asked, by method and path.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit


class SchemaRegistryServer:
    def __init__(self, users: dict[str, str] | None = None, port: int = 0, tls: tuple[str, str] | None = None):
        self.users = dict(users or {})
        self.tls = tls
        self.schemas: list[str] = []                       # id - 1 -> schema text
        self.subjects: dict[str, list[int]] = {}           # subject -> ids by version - 1
        self.requests: Counter[str] = Counter()
        self.port = port
        self._server: ThreadingHTTPServer | None = None
        self._lock = threading.Lock()

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> SchemaRegistryServer:
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                registry._handle(self, "GET")

            def do_POST(self) -> None:
                registry._handle(self, "POST")

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        if self.tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(*self.tls)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> SchemaRegistryServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def url(self, user: str | None = None) -> str:
        """The registry's base URL, with `user`'s credentials in it when given."""
        auth = f"{user}:{self.users[user]}@" if user else ""
        return f"{'https' if self.tls else 'http'}://{auth}127.0.0.1:{self.port}"

    # -- the API --------------------------------------------------------------------------------

    def register(self, subject: str, schema: str) -> int:
        """What POST /subjects/{subject}/versions does: the schema's id (a new one for a new schema)."""
        canonical = json.dumps(json.loads(schema), sort_keys=True)
        with self._lock:
            known = [i for i, s in enumerate(self.schemas, 1) if json.dumps(json.loads(s), sort_keys=True) == canonical]
            if known:
                schema_id = known[0]
            else:
                self.schemas.append(schema)
                schema_id = len(self.schemas)
            versions = self.subjects.setdefault(subject, [])
            if schema_id not in versions:
                versions.append(schema_id)
            return schema_id

    def _authorized(self, handler: BaseHTTPRequestHandler) -> bool:
        if not self.users:
            return True
        header = handler.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            return False
        return self.users.get(user) == password

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        path = urlsplit(handler.path).path
        self.requests[f"{method} {path}"] += 1
        if not self._authorized(handler):
            return self._reply(handler, 401, {"error_code": 401, "message": "Unauthorized"})
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if method == "GET" and len(parts) == 4 and parts[:2] == ["associations", "resources"]:
            return self._reply(handler, 200, [])
        if method == "GET" and len(parts) == 3 and parts[:2] == ["schemas", "ids"] and parts[2].isdigit():
            schema_id = int(parts[2])
            if not 1 <= schema_id <= len(self.schemas):
                return self._reply(handler, 404, {"error_code": 40403, "message": f"Schema {schema_id} not found"})
            return self._reply(handler, 200, {"schema": self.schemas[schema_id - 1]})
        if len(parts) >= 3 and parts[0] == "subjects" and parts[2] == "versions":
            subject = parts[1]
            if method == "POST" and len(parts) == 3:
                length = int(handler.headers.get("Content-Length", 0))
                body = json.loads(handler.rfile.read(length) or b"{}")
                if body.get("schemaType", "AVRO") != "AVRO":
                    return self._reply(handler, 422, {"error_code": 42201, "message": "only Avro here"})
                return self._reply(handler, 200, {"id": self.register(subject, body["schema"])})
            if method == "GET" and len(parts) == 4:
                versions = self.subjects.get(subject)
                if not versions:
                    return self._reply(handler, 404, {"error_code": 40401, "message": f"Subject '{subject}' not found."})
                wanted = parts[3]
                number = len(versions) if wanted in ("latest", "-1") else int(wanted) if wanted.isdigit() else 0
                if not 1 <= number <= len(versions):
                    return self._reply(handler, 404, {"error_code": 40402, "message": f"Version {wanted} not found."})
                schema_id = versions[number - 1]
                return self._reply(handler, 200, {"subject": subject, "version": number, "id": schema_id,
                                                  "schema": self.schemas[schema_id - 1]})
        return self._reply(handler, 404, {"error_code": 404, "message": f"HTTP 404 Not Found: {method} {path}"})

    @staticmethod
    def _reply(handler: BaseHTTPRequestHandler, status: int, body: dict | list) -> None:
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

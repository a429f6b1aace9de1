"""A STAND-IN for the remote interLink API, not interLink: it lets the real interLink 0.6.1
virtual-kubelet run against the test apiserver and records what it is sent.

interLink's virtual kubelet talks to an interLink API server (which runs the pods at the
provider through a plugin). Neither exists here, so this answers the five calls the
virtual kubelet makes, with the shapes of pkg/interlink/types.go (interLink 0.6.1):

- POST /pinglink: 200 "stand-in" (the node's Ready condition follows it,
  pkg/virtualkubelet/virtualkubelet.go nodeUpdate :600-660);
- POST /create: the PodCreateRequests {pod, configmaps, secrets, projectedvolumesmaps} is
  RECORDED and answered with CreateStruct {PodUID, PodJID};
- GET /status: for each pod sent, a PodStatus {name, UID, namespace, JID, containers} with
  every container running (what a plugin reports once the pod runs at the provider);
- DELETE /delete, POST /updateCache: 200.

Anything else is a 404 and recorded, so a test sees a call it did not expect. Every request
must carry `Authorization: Bearer <token>` (the VKTokenFile the virtual kubelet reads);
one without it is refused with 401 and recorded.

It listens on a unix socket: interLink refuses loopback hosts for pod calls as SSRF
(execute.go:35-48 isSafeURL) but accepts InterlinkURL unix://<path>, which it calls as
http://unix (execute.go:269-270; main.go:323-361 dials the socket). No port is opened.
"""

from __future__ import annotations

import datetime
import json
import socketserver
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from box.httpd import Background
from generators.k8s.objects import Obj


@dataclass
class Call:
    method: str
    path: str
    authorized: bool
    body: Any


@dataclass
class Record:
    calls: list[Call] = field(default_factory=list)
    created: list[Obj] = field(default_factory=list)  # PodCreateRequests, as sent


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class InterLinkStandIn:
    """The stand-in on `socket_path`; `record` holds what the virtual kubelet sent."""

    def __init__(self, socket_path: Path, token: str) -> None:
        self.socket_path = socket_path
        self.token = token
        self.record = Record()
        self._lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as Go's client expects

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw.strip() else None
                authorized = self.headers.get("Authorization") == f"Bearer {standin.token}"
                status, reply = standin.handle(self.command, self.path, authorized, body)
                data = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, format: str, *args: object) -> None:
                pass  # a unix socket has no client address to log; the record is the log

        self._serving = Background(_Server(str(socket_path), Handler)).start()

    @property
    def url(self) -> str:
        return f"unix://{self.socket_path}"

    def handle(self, method: str, path: str, authorized: bool, body: Any) -> tuple[int, Any]:
        with self._lock:
            self.record.calls.append(Call(method, path, authorized, body))
            if not authorized:
                return 401, b"missing or wrong bearer token"
            if (method, path) == ("POST", "/pinglink"):
                return 200, b"stand-in"
            if (method, path) == ("POST", "/create"):
                self.record.created.append(body)
                return 200, {
                    "PodUID": body["pod"]["metadata"]["uid"],
                    "PodJID": f"job-{len(self.record.created)}",
                }
            if (method, path) == ("GET", "/status"):
                return 200, [_running(pod) for pod in body or []]
            if (method, path) in (("DELETE", "/delete"), ("POST", "/updateCache")):
                return 200, b"ok"
            return 404, b"not served by the stand-in"

    def created(self) -> list[Obj]:
        with self._lock:
            return list(self.record.created)

    def calls(self) -> list[Call]:
        with self._lock:
            return list(self.record.calls)

    def close(self) -> None:
        self._serving.stop()
        self.socket_path.unlink(missing_ok=True)


def _running(pod: Obj) -> Obj:
    """PodStatus (pkg/interlink/types.go:36-49) with every container running."""
    meta = pod["metadata"]
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    containers = [
        {
            "name": c["name"],
            "image": c["image"],
            "imageID": "",
            "ready": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": started}},
        }
        for c in pod["spec"]["containers"]
    ]
    return {
        "name": meta["name"],
        "UID": meta["uid"],
        "namespace": meta["namespace"],
        "JID": meta.get("annotations", {}).get("JobID", ""),
        "containers": containers,
        "initContainers": [],
    }

"""A local HTTP server on 127.0.0.1 for the download tests: it serves byte strings the tests make, honours
``Range`` (206 with ``Content-Range``), can drop a connection mid-file, serve an HTML page instead of an
archive, ignore ``Range``, and records every request (path and ``Range`` header)."""

from __future__ import annotations

import contextlib
import http.server
import io
import re
import socket
import tarfile
import threading
from dataclasses import dataclass, field


@dataclass
class Served:
    """What the server answers for one path.

    ``drops``: how many of the next requests are cut after ``drop_after`` bytes of body (the
    ``Content-Length`` still promises the whole rest); ``ranges``: honour ``Range``.
    """

    body: bytes
    content_type: str = "application/octet-stream"
    drop_after: int = 0
    drops: int = 0
    ranges: bool = True
    status: int = 200


@dataclass
class Request:
    path: str
    range: str | None


class ReleaseServer:
    """``with ReleaseServer() as srv: srv.serve("/a.tar", Served(data)); srv.url("/a.tar")``."""

    def __init__(self) -> None:
        self.routes: dict[str, Served] = {}
        self.requests: list[Request] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802
                path = self.path.split("?", 1)[0]
                outer.requests.append(Request(path, self.headers.get("Range")))
                served = outer.routes.get(path)
                if served is None:
                    self.send_error(404)
                    return
                if served.status != 200:
                    self.send_error(served.status)
                    return
                body, start = served.body, 0
                match = re.match(r"bytes=(\d+)-", self.headers.get("Range") or "")
                if match and served.ranges:
                    start = int(match.group(1))
                    if start >= len(body):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(body)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                else:
                    self.send_response(200)
                rest = body[start:]
                self.send_header("Content-Type", served.content_type)
                self.send_header("Content-Length", str(len(rest)))
                self.end_headers()
                if served.drops > 0:
                    served.drops -= 1
                    self.wfile.write(rest[:served.drop_after])
                    self.wfile.flush()
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(rest)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ReleaseServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def serve(self, path: str, served: Served) -> str:
        self.routes[path] = served
        return self.url(path)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"

    def ranges(self, path: str) -> list[str | None]:
        return [r.range for r in self.requests if r.path == path]


def closed_port_url(path: str = "/x.tar") -> str:
    """A URL on 127.0.0.1 where nothing listens (a refused connection, as offline)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


def make_tar(members: dict[str, bytes], *, mode: str = "w") -> bytes:
    """A tar archive (``mode`` ``w`` or ``w:gz``) of regular files ``{name: content}``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@dataclass
class TarBuilder:
    """A tar archive with special members (links, devices) besides files, for the extraction tests."""

    members: list = field(default_factory=list)

    def file(self, name: str, data: bytes = b"x") -> TarBuilder:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        self.members.append((info, data))
        return self

    def link(self, name: str, target: str, *, hard: bool = False) -> TarBuilder:
        info = tarfile.TarInfo(name)
        info.type = tarfile.LNKTYPE if hard else tarfile.SYMTYPE
        info.linkname = target
        self.members.append((info, None))
        return self

    def special(self, name: str, kind: bytes) -> TarBuilder:
        info = tarfile.TarInfo(name)
        info.type = kind
        self.members.append((info, None))
        return self

    def bytes(self) -> bytes:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            for info, data in self.members:
                tf.addfile(info, io.BytesIO(data) if data is not None else None)
        return buf.getvalue()

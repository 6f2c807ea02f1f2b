"""Connecting a driver to a Ray cluster: find out, within seconds, whether an address is a Ray
cluster that accepts this driver, and say exactly what is wrong when it is not.

A Ray address is the head's GCS (``host:port``, 6379 by default) or its Ray Client server
(``ray://host:port``, 10001 by default). :func:`probe_address` checks, before ``ray.init``
(which waits up to minutes on a wrong address), in this order:

1. the port answers at all (TCP);
2. it speaks HTTP/2, as gRPC servers do (else it names what answered: a PostgreSQL server, an
   HTTP/1 server such as Ray's dashboard, an SSH server... from the first bytes it sends back);
3. it is the service the address names: a GCS answers ``NodeInfoGcsService/GetClusterId``, a Ray
   Client server ``RayletDriver/ClusterInfo`` (a GCS given as ``ray://`` and the reverse are named
   as such);
4. it accepts this driver's token: with token authentication on (``RAY_AUTH_MODE=token``), a
   missing or wrong token is named as such instead of Ray's generic "Failed to connect".

Steps 3 and 4 use ``grpcio``, which ``robustlab[ray]`` installs (``ray[client]``).
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from ..errors import InputError

#: Seconds the whole probe may take (an address that is not a Ray cluster fails within this).
CONNECT_TIMEOUT = 12.0
#: Default ports: the GCS and the Ray Client server.
GCS_PORT, CLIENT_PORT = 6379, 10001
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # + empty SETTINGS
_GCS_METHOD = "/ray.rpc.NodeInfoGcsService/GetClusterId"
_CLIENT_METHOD = "/ray.rpc.RayletDriver/ClusterInfo"


@dataclass(frozen=True)
class RayAddress:
    """A parsed Ray address: ``client`` is True for ``ray://`` (Ray Client)."""

    text: str
    host: str
    port: int
    client: bool

    @property
    def target(self) -> str:
        return f"{self.host}:{self.port}"


def parse_address(address: str) -> RayAddress:
    """Parse ``host:port`` or ``ray://host:port``; InputError when it is neither."""
    text = address.strip()
    client = text.startswith("ray://")
    if "://" in text and not client:
        raise InputError(f"Ray address {address!r} has the scheme {text.split('://')[0]!r}: give the head's "
                         "host:port (e.g. 10.0.0.5:6379) or ray://host:10001 for Ray Client.")
    parsed = urlparse(text if client else f"ray://{text}")
    try:
        port = parsed.port
    except ValueError:
        port = None
        parsed = parsed._replace(netloc="")
    if not parsed.hostname or (port is None and ":" in parsed.netloc):
        raise InputError(f"Ray address {address!r} is not host:port (e.g. 10.0.0.5:6379 or ray://head:10001).")
    return RayAddress(text, parsed.hostname, port or (CLIENT_PORT if client else GCS_PORT), client)


def token_mode() -> bool:
    """Whether this driver uses Ray's token authentication (``RAY_AUTH_MODE=token``, or the mode
    unset and a token available, as Ray decides)."""
    mode = os.environ.get("RAY_AUTH_MODE")
    if mode is not None:
        return mode.strip().lower() == "token"
    return driver_token()[0] is not None


def driver_token() -> tuple[str | None, str]:
    """The token this driver sends and where it comes from (``RAY_AUTH_TOKEN``, the file at
    ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``), as Ray looks for it."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return os.environ["RAY_AUTH_TOKEN"].strip(), "$RAY_AUTH_TOKEN"
    path = Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token").expanduser()
    try:
        token = path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None, str(path)
    return (token or None), str(path)


def probe_address(address: str, timeout: float = CONNECT_TIMEOUT) -> RayAddress:
    """Check that ``address`` is a Ray cluster that accepts this driver (see the module docstring).

    Returns the parsed address; raises InputError naming what answered, or the token problem,
    within about ``timeout`` seconds. Nothing is computed or written before it returns.
    """
    where = parse_address(address)
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((where.host, where.port), timeout=min(5.0, timeout)):
            pass
    except OSError as exc:
        raise InputError(f"cannot reach the Ray cluster at {where.text} ({exc}); check RAY_ADDRESS / --ray-address, "
                         "and that the head node runs (`ray start --head`). Nothing was computed.") from None
    answer = _http2_answer(where, min(4.0, max(0.5, deadline - time.monotonic())))
    if answer is not None:
        raise InputError(f"{where.target} is not a Ray cluster: {answer} answered there. Point RAY_ADDRESS / "
                         f"--ray-address at the Ray head's GCS port (host:{GCS_PORT} by default; `ray start --head "
                         f"--port`), or ray://host:{CLIENT_PORT} for Ray Client. Nothing was computed.")
    try:
        import grpc
    except ImportError:
        if where.client:
            raise InputError('ray:// addresses (Ray Client) need grpcio: pip install "robustlab[ray]" (it brings '
                             '"ray[client]"), or give the head\'s host:port.') from None
        return where  # HTTP/2 answered: ray.init finds out the rest
    _check_service(grpc, where, max(1.0, deadline - time.monotonic()))
    return where


def _http2_answer(where: RayAddress, timeout: float) -> str | None:
    """None when the port answers like an HTTP/2 (gRPC) server, else what answered."""
    try:
        with socket.create_connection((where.host, where.port), timeout=timeout) as sock:
            sock.settimeout(0.3)
            try:
                banner = sock.recv(256)  # protocols that speak first (SSH, SMTP, MySQL...)
            except TimeoutError:
                banner = b""
            if banner:  # an HTTP/2 server sends its SETTINGS first; others their banner
                return None if _is_http2(banner) else _describe(banner)
            sock.settimeout(timeout)
            sock.sendall(_HTTP2_PREFACE)
            data = b""
            try:
                while len(data) < 9:
                    chunk = sock.recv(512)
                    if not chunk:
                        break
                    data += chunk
            except TimeoutError:
                if not data:
                    return "a service that accepted the connection but did not answer an HTTP/2 (gRPC) greeting " \
                           f"within {timeout:.0f} s"
            except OSError as exc:
                return f"a service that reset the connection at an HTTP/2 (gRPC) greeting ({exc})"
    except OSError as exc:
        return f"a service that dropped the connection ({exc})"
    if _is_http2(data):
        return None
    if not data:
        return _ask_other_protocols(where) or "a service that closed the connection at an HTTP/2 (gRPC) greeting"
    return _describe(data)


#: Greetings that make common non-gRPC services answer: PostgreSQL's SSLRequest, then HTTP/1.0.
_OTHER_GREETINGS = (b"\x00\x00\x00\x08\x04\xd2\x16\x2f", b"GET / HTTP/1.0\r\n\r\n")


def _ask_other_protocols(where: RayAddress) -> str | None:
    """Name a service that closed the connection at the HTTP/2 greeting, by greeting it in other
    protocols (one connection each, one second each); None when none answers."""
    for greeting in _OTHER_GREETINGS:
        try:
            with socket.create_connection((where.host, where.port), timeout=1.0) as sock:
                sock.sendall(greeting)
                data = sock.recv(256)
        except OSError:
            continue
        if data:
            return _describe(data)
    return None


def _is_http2(data: bytes) -> bool:
    """Whether ``data`` starts with an HTTP/2 SETTINGS frame (type 4 on stream 0)."""
    return len(data) >= 9 and data[3] == 0x04 and data[5:9] == b"\x00\x00\x00\x00"


def _describe(data: bytes) -> str:
    """Name a service from the first bytes it sent."""
    head = data[:80]
    if head.startswith(b"SSH-"):
        return f"an SSH server ({head.splitlines()[0].decode(errors='replace')!r})"
    if head.startswith(b"HTTP/"):
        status = head.splitlines()[0].decode(errors="replace")
        return f"an HTTP/1 server ({status!r}; Ray's dashboard, port 8265, is one)"
    if head[:1] == b"E" and (b"SFATAL" in data or b"VFATAL" in data or b"startup packet" in data):
        return "a PostgreSQL server"
    if head[:1] in (b"N", b"S") and len(data) == 1:
        return "a PostgreSQL server"
    if head.startswith((b"-ERR", b"+")):
        return "a Redis server"
    if head[:3].isdigit() and head[3:4] in (b" ", b"-"):
        return f"a text-protocol server ({head.splitlines()[0].decode(errors='replace')!r}, e.g. SMTP or FTP)"
    if len(head) > 4 and head[4:5] == b"\x0a":  # MySQL handshake: protocol version 10
        return "a MySQL server"
    return f"a service that does not speak HTTP/2 (it answered {head[:24]!r})"


def _check_service(grpc, where: RayAddress, timeout: float) -> None:
    """Call the service ``where`` names, with this driver's token; InputError when it is another
    service or refuses the token."""
    token, source = driver_token() if token_mode() else (None, "")
    metadata = [("authorization", f"Bearer {token}")] if token else []
    channel = grpc.insecure_channel(where.target)
    try:
        own, other = (_CLIENT_METHOD, _GCS_METHOD) if where.client else (_GCS_METHOD, _CLIENT_METHOD)
        code, details = _call(grpc, channel, own, metadata, timeout)
        if code in (None, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.INTERNAL):
            return  # the service answered (a bare request may be rejected, but it was understood)
        if code == grpc.StatusCode.UNAUTHENTICATED:
            if token is None:
                raise InputError(
                    f"the Ray cluster at {where.text} uses token authentication and this driver has no token "
                    f"({details}). Set RAY_AUTH_MODE=token and give the cluster's token (`ray get-auth-token` on the "
                    "head) in RAY_AUTH_TOKEN or ~/.ray/auth_token. Nothing was computed.")
            raise InputError(
                f"the Ray cluster at {where.text} refused this driver's token (from {source}): it is not the "
                f"cluster's token ({details}). Copy the head's token (`ray get-auth-token` on the head) into "
                "RAY_AUTH_TOKEN or ~/.ray/auth_token on this machine. Nothing was computed.")
        if code == grpc.StatusCode.UNIMPLEMENTED:
            second, _ = _call(grpc, channel, other, metadata, min(3.0, timeout))
            if second != grpc.StatusCode.UNIMPLEMENTED:
                fix = (f"give it as {where.target} (without ray://)" if where.client
                       else f"give it as ray://{where.target}")
                what = "a Ray GCS, not a Ray Client server" if where.client else \
                    "a Ray Client server, not a Ray GCS"
                raise InputError(f"{where.target} is {what}: {fix}. Nothing was computed.")
            raise InputError(f"{where.target} is a gRPC server but not a Ray {'Client server' if where.client else 'GCS'}"
                             f" ({details}): point RAY_ADDRESS / --ray-address at the Ray head. Nothing was computed.")
        raise InputError(f"the Ray {'Client server' if where.client else 'GCS'} at {where.text} did not answer "
                         f"({code.name}: {details}); check that the head node runs. Nothing was computed.")
    finally:
        channel.close()


def _call(grpc, channel, method: str, metadata: list, timeout: float):
    """Call ``method`` with an empty request: (None, "") on success, else (status code, details)."""
    try:
        channel.unary_unary(method)(b"", timeout=timeout, metadata=metadata)
    except grpc.RpcError as exc:
        return exc.code(), (exc.details() or "").strip()
    return None, ""


def client_start_failed(where: RayAddress | None, exc: BaseException) -> bool:
    """True when a Ray Client connection failed because the head's client proxy could not start the
    server it runs for each client (it died while starting, on a loaded head): a transient failure,
    worth asking again; any other failure is the user's to fix."""
    return bool(where is not None and where.client and "Initialization failure from server" in str(exc))


def init_options(address: RayAddress | None) -> dict:
    """Keyword arguments of ``ray.init`` for this address (Ray Client accepts fewer)."""
    options = {"ignore_reinit_error": True, "log_to_driver": False}
    if address is None or not address.client:
        options.update(include_dashboard=False, configure_logging=False)
    return options

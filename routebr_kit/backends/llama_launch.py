"""Run llama-cpp-python's OpenAI-compatible server (``python -m llama_cpp.server``), optionally without llama.cpp's
extra weight buffers.

    python -m routebr_kit.backends.llama_launch [--exit-with-parent] [--no-extra-buffers] -- SERVER ARGS...

``--no-extra-buffers`` sets ``use_extra_bufts = false`` in llama.cpp's default model parameters before the server
loads the model: the weights stay in the plain CPU buffer instead of being repacked for AMX / AVX-512 kernels.  On
this project's machines (a CPU that reports AMX inside a VM) the repacked path crashes the server with a
segmentation fault on the first batched prompt; the plain path is correct, and slower where repacking works.
``--exit-with-parent`` ends the server when the process that started it is gone (no orphan server keeps two cores
busy after its ``serve-model`` was killed).  Everything after ``--`` goes to the server unchanged.
Used by :mod:`routebr_kit.backends.local_server`.
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
import time

OPTIONS = frozenset({"--no-extra-buffers", "--exit-with-parent"})


def _exit_with_parent() -> None:
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)  # the parent died without stopping us: nothing is left to serve

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def main(argv: list[str]) -> None:
    if "--" not in argv:
        raise SystemExit("usage: python -m routebr_kit.backends.llama_launch [--no-extra-buffers] -- SERVER ARGS")
    split = argv.index("--")
    ours, server = argv[:split], argv[split + 1:]
    if set(ours) - OPTIONS:
        raise SystemExit(f"unknown launcher option(s): {' '.join(sorted(set(ours) - OPTIONS))}")
    if "--exit-with-parent" in ours:
        _exit_with_parent()
    if "--no-extra-buffers" in ours:
        import llama_cpp.llama_cpp as native

        default = native.llama_model_default_params

        def plain_buffers():  # the same defaults, weights in the plain CPU buffer
            params = default()
            params.use_extra_bufts = False
            return params

        native.llama_model_default_params = plain_buffers
    sys.argv = ["llama_cpp.server", *server]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])

"""A light command line: ``routebr-kit --help`` and ``routebr-kit CMD --help`` import no pandas, numpy, scipy or
matplotlib (issue 29, item 5), and the command table still offers every command with its options.

Each help runs in a fresh interpreter, as the console script runs it, and prints ``sorted(sys.modules)`` at exit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from routebr_kit.cli.app import COMMANDS, build_parser, load_command, main

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "numpy", "scipy", "matplotlib")
RUNNER = ("import atexit, json, sys; "
          "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)) + '\\n')); "
          "from routebr_kit.cli import main; sys.exit(main())")

#: The commands the command line offered before the table (issue 29), in ``--help`` order: none may be lost.
OFFERED = ["generate", "generate-sessions", "audit", "run", "score", "replay", "tables", "metaroute",
           "metaroute-sweep", "reproduce", "fetch-artifact", "attack-surface", "generate-attacks", "adaptive-attack",
           "shadow", "diff", "gate-check", "impact", "review", "verify", "report", "train-proposer", "serve-model"]


def _run(code: str, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH")))),
               COLUMNS="100")
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    line = next((x for x in done.stderr.splitlines() if x.startswith("MODULES ")), "MODULES []")
    return done, json.loads(line[len("MODULES "):])


#: The kit's modules ``routebr-kit --help`` may import: the package, the command line's package, the table and the
#: shared helpers.  ``CMD --help`` may add its own command module, nothing else of the kit.
HELP_MODULES = {"routebr_kit", "routebr_kit.cli", "routebr_kit.cli.app", "routebr_kit.cli.common"}


def _command_modules(loaded: list[str]) -> set[str]:
    return {m for m in loaded if m.startswith("routebr_kit.cli.")} - {"routebr_kit.cli.app", "routebr_kit.cli.common"}


def _kit_modules(loaded: list[str]) -> set[str]:
    return {m for m in loaded if m == "routebr_kit" or m.startswith("routebr_kit.")}


def _said(text: str) -> str:
    """Help text with argparse's line wrapping undone (every run of whitespace one space)."""
    return " ".join(text.split())


def _help(name: str) -> str:
    done, _ = _run(RUNNER, name, "--help")
    assert done.returncode == 0, done.stderr
    return _said(done.stdout)


def test_the_table_offers_every_command_the_cli_offered():
    assert list(COMMANDS) == OFFERED
    for name, row in COMMANDS.items():
        assert row.name == name and row.help and "\n" not in row.help
        assert row.module.startswith("routebr_kit.cli.")
        command = load_command(name)
        assert command.name == name and command.help == row.help and callable(command.configure)


def test_top_level_help_lists_every_command_and_imports_no_command_module():
    done, loaded = _run(RUNNER, "--help")
    assert done.returncode == 0, done.stderr
    assert "usage: routebr-kit" in done.stdout
    for name in COMMANDS:
        assert f"    {name}" in done.stdout
    assert not [m for m in HEAVY if m in loaded]
    assert _command_modules(loaded) == set()
    assert _kit_modules(loaded) == HELP_MODULES  # not the error types, not the redactor


@pytest.mark.parametrize("name", list(COMMANDS))
def test_command_help_is_light_and_shows_every_option(name):
    done, loaded = _run(RUNNER, name, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: routebr-kit {name}")
    assert not [m for m in HEAVY if m in loaded], f"{name} --help imports heavy modules"
    assert _command_modules(loaded) == {COMMANDS[name].module}
    assert _kit_modules(loaded) == HELP_MODULES | {COMMANDS[name].module}, f"{name} --help imports kit modules"
    # the same options as the full parser (every command configured) declares
    full = build_parser()
    sub = next(a for a in full._actions if a.dest == "command").choices[name]
    for action in sub._actions:
        for option in action.option_strings:
            assert option in done.stdout, f"{name} --help lacks {option}"


def test_import_routebr_kit_loads_no_heavy_module():
    _, loaded = _run("import atexit, json, sys; atexit.register(lambda: sys.stderr.write("
                     "'\\nMODULES ' + json.dumps(sorted(sys.modules)) + '\\n')); import routebr_kit")
    assert "routebr_kit" in loaded
    assert not [m for m in HEAVY if m in loaded]


def test_the_sweep_help_shows_the_sweeps_own_cap():
    from routebr_kit.cli.metaroute_sweep import SHOWN_MAX_CONFIGURATIONS
    from routebr_kit.metaroute.sweep import MAX_CONFIGURATIONS

    assert SHOWN_MAX_CONFIGURATIONS == MAX_CONFIGURATIONS


# -- the error path: app.py imports the error types only when a handler fails, and still catches exactly these --


def _failing(monkeypatch, exc: BaseException) -> None:
    """``replay``'s handler replaced by one that raises ``exc`` (its options unchanged)."""
    import routebr_kit.cli.replay as module
    from routebr_kit.cli.common import command

    @command(module.replay.configure)
    def broken(args):
        raise exc

    monkeypatch.setattr(module, "replay", broken)


def test_a_kit_error_from_a_handler_is_one_line_and_exit_2(monkeypatch, capsys):
    from routebr_kit.core.errors import DataError, ErrorCode

    _failing(monkeypatch, DataError(ErrorCode.FILE_NOT_FOUND, "/nowhere/x.csv", field="--artifact"))
    assert main(["replay"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("routebr-kit replay: ") and "[FILE_NOT_FOUND]" in err, err


def test_an_os_error_from_a_handler_is_one_line_naming_the_path_and_exit_2(monkeypatch, capsys):
    _failing(monkeypatch, PermissionError(13, "Permission denied", "/root/out"))
    assert main(["replay"]) == 2
    err = capsys.readouterr().err
    assert err == "routebr-kit replay: [PermissionError] /root/out: Permission denied\n", err


def test_any_other_exception_from_a_handler_is_a_bug_and_propagates(monkeypatch):
    _failing(monkeypatch, RuntimeError("a bug"))
    with pytest.raises(RuntimeError, match="a bug"):
        main(["replay"])


# -- every default the help restates is the kit constant the handler uses (no kit import at --help time) ----------


def test_the_gate_helps_state_the_release_gates():
    from routebr_kit.review.gate import DEFAULT_GATE, RERUN_GATE

    assert f"(default: the release default, '{DEFAULT_GATE}')" in _help("gate-check")
    assert f"(default: {DEFAULT_GATE}; plus 'widening <= 0'" in _help("review")
    shown = _help("report")
    assert f"(default: {DEFAULT_GATE!r} for a shadow output" in shown and f"; {RERUN_GATE!r} otherwise" in shown


def test_the_attack_helps_state_the_protected_action_and_the_family_size():
    from routebr_kit.adversarial.suite import DEFAULT_PER_FAMILY
    from routebr_kit.adversarial.surface import PROTECTED_ACTION

    assert f"explicit permission (default {PROTECTED_ACTION})" in _help("attack-surface")
    shown = _help("generate-attacks")
    assert f"variants per attack family (default {DEFAULT_PER_FAMILY})" in shown
    assert f"prefer as target (default {PROTECTED_ACTION})" in shown


def test_the_serve_model_help_states_the_packaged_models_port_and_threads():
    from routebr_kit.backends.local_server import DEFAULT_PORT, PACKAGED_MODELS, SMOLLM2, default_threads

    shown = _help("serve-model")
    assert f"--model MODEL {' | '.join(PACKAGED_MODELS)} (a model shipped" in shown
    assert f"default {SMOLLM2.name}) or PATH.gguf" in shown
    assert f"(default {DEFAULT_PORT}: the local-smollm2 profile's)" in shown
    assert "CPU threads (default min(4, CPU count))" in shown
    assert default_threads() == min(4, os.cpu_count() or 1)


def test_the_reproduce_help_names_the_shipped_parameter_files():
    from routebr_kit.store.kitfiles import shipped_params

    assert f"one the kit ships: {', '.join(shipped_params())} (default: default)" in _help("reproduce")


def test_the_fetch_artifact_help_describes_the_default_destination():
    from routebr_kit.store import kitfiles
    from routebr_kit.store.artifact import CONVENTIONAL_DIR
    from routebr_kit.store.fetch import default_dest

    assert "(default: artifacts/routebr/ of the source checkout, else of the current directory" in _help(
        "fetch-artifact")
    assert kitfiles.source_checkout() is not None and default_dest() == CONVENTIONAL_DIR  # a checkout: its own


@pytest.mark.parametrize("argv, dest, default", [
    (["gate-check", "--artifact", "A"], "gate", None), (["review", "--candidate-assets", "C", "--artifact", "A"],
                                                        "gate", None),
    (["attack-surface", "--cases", "c.csv"], "protected_action", None),
    (["generate-attacks", "--cases", "c.csv", "--lang", "en", "--out", "o"], "per_family", None),
    (["serve-model"], "port", None), (["serve-model"], "model", None), (["fetch-artifact"], "dest", None),
])
def test_defaults_the_handler_resolves_are_none_in_the_parser(argv, dest, default):
    assert getattr(build_parser(argv).parse_args(argv), dest) == default

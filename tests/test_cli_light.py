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

from routebr_kit.cli.app import COMMANDS, build_parser, load_command

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


def _command_modules(loaded: list[str]) -> set[str]:
    return {m for m in loaded if m.startswith("routebr_kit.cli.")} - {"routebr_kit.cli.app", "routebr_kit.cli.common"}


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


@pytest.mark.parametrize("name", list(COMMANDS))
def test_command_help_is_light_and_shows_every_option(name):
    done, loaded = _run(RUNNER, name, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: routebr-kit {name}")
    assert not [m for m in HEAVY if m in loaded], f"{name} --help imports heavy modules"
    assert _command_modules(loaded) == {COMMANDS[name].module}
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

"""The command list: every entry is wired to its Command, and running one command imports only its module."""

from __future__ import annotations

import subprocess
import sys

import pytest

from routebr_kit.cli import COMMANDS, build_parser
from routebr_kit.cli.app import load_command


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_listed_command_loads_under_its_name(name):
    command = load_command(name)
    assert command.name == name and command.help


def test_the_full_help_lists_every_command_in_order():
    help_text = build_parser().format_help()
    import re

    positions = [re.search(rf"^    {re.escape(name)}(\s|$)", help_text, re.M).start() for name in COMMANDS]
    assert positions == sorted(positions)


def test_one_command_does_not_import_the_others():
    code = ("import sys; from routebr_kit.cli.app import build_parser; build_parser(['fetch-artifact']); "
            "print(sorted(m for m in ('pandas', 'scipy', 'routebr_kit.cli.tables', 'routebr_kit.cli.shadow') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

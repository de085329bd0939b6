"""Every command shown in the README and the how-to pages is valid as written: it builds its job and passes
every check that runs before computing (options, their combinations, output paths), without running."""

import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

import attnphys.cli as cli
from attnphys.errors import AttnphysError
from attnphys.jobs import build_job

ROOT = Path(__file__).resolve().parents[1]
NEEDS_FILES = ("rerun", "--config", "--text", "./models/", "compare-diagrams", "portraits")
"""Commands that read files a reader brings (a result to rerun, compare or draw from, an options file, text, a model
folder)."""


def documented_commands() -> list[tuple[str, str, str]]:
    """(page, command, the error the page shows after it or "") of every command on the pages."""
    out = []
    pages = sorted((ROOT / "docs" / "howto").glob("*.md")) + sorted((ROOT / "docs" / "theory").glob("*.md"))
    for f in pages + [ROOT / "README.md"]:
        lines = f.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            line = lines[i].strip()
            if line.startswith(("$ attnphys ", "attnphys ")) and not line.startswith("attnphys has"):
                cmd = line.removeprefix("$ ").strip()
                while cmd.endswith("\\"):
                    i += 1
                    cmd = cmd[:-1] + " " + lines[i].strip()
                shown = lines[i + 1].strip() if i + 1 < len(lines) else ""
                error = shown.removeprefix("error: ") if shown.startswith("error: ") else ""
                out.append((f.relative_to(ROOT).as_posix(), cmd.split(" #")[0].strip(), error))
            i += 1
    return out


COMMANDS = documented_commands()


def test_the_pages_show_commands():
    assert len(COMMANDS) >= 40


@pytest.mark.parametrize("page, command, error", COMMANDS, ids=[f"{p}: {c[:60]}" for p, c, _ in COMMANDS])
def test_a_documented_command_passes_its_checks(page, command, error, tmp_path, monkeypatch):
    """A command the page shows failing fails with the message shown."""
    if any(token in command for token in NEEDS_FILES):
        pytest.skip("reads a file the reader brings")
    if "optional dependencies" in error:
        pytest.skip("shows an installation without the extra")
    checked = []

    def preflight_only(cls, given, config):
        try:
            job = build_job(cls, given, config)
            job.preflight()
        except AttnphysError as e:
            cli.fail(str(e), e.exit_code)
        checked.append(job)

    monkeypatch.setattr(cli, "run_job", preflight_only)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs" / "figures").mkdir(parents=True)
    res = CliRunner().invoke(cli.app, shlex.split(command)[1:])
    if error:
        assert res.exit_code != 0 and error in " ".join(res.output.split()), f"{page}: {command}\n{res.output}"
        return
    assert res.exit_code == 0, f"{page}: {command}\n{res.output}"
    assert checked, "no job was checked"

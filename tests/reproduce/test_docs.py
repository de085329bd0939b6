"""The reproduction how-to names real figures and real options."""

import re
from pathlib import Path

from attnphys._messages import option_name
from attnphys.jobs import job_class
from attnphys.reproduce import FIGURES

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs/howto/reproduce.md"


def commands(text: str) -> list[str]:
    """The ``$ attnphys …`` lines of the page's console blocks, continuation lines joined."""
    return [m.replace("\\\n", " ") for m in re.findall(r"^\$ (attnphys (?:.*\\\n)*.*)$", text, re.MULTILINE)]


def test_every_command_of_the_howto_names_real_options():
    text = PAGE.read_text(encoding="utf-8")
    found = commands(text)
    assert len(found) >= 4
    for line in found:
        words = line.split("#")[0].split()[1:]
        name = " ".join(words[:2]) if words[0] == "dmft" else words[0]
        cls = job_class(name)
        options = {option_name(f) for f in cls.model_fields} | {f"--no-{f.replace('_', '-')}" for f in cls.model_fields}
        for w in words:
            if w.startswith("--"):
                assert w in options | {"--config"}, f"{line}: {w}"
        if name == "reproduce":
            assert words[1] in set(FIGURES) | {"list"}, line


def test_the_howto_table_of_figures_is_the_registrys():
    """The page does not copy the figures: its table is written from the registry at build time
    (``{figures}``, tests/test_registries_lists.py)."""
    text = PAGE.read_text(encoding="utf-8")
    assert "{figures}" in text
    assert not [name for name in FIGURES if f"| `{name}` |" in text]

"""Build hook: the docstrings' cross-reference roles read as code in the API reference.

Docstrings name other objects with roles such as ``:class:`~attnphys.dmft.DMFTConfig``` and
``:func:`attnphys.dmft.trajectories```. mkdocstrings renders Markdown, where a role would stay literal
text; this hook turns every rendered role into the code it names — the last component with ``~``, the
whole path without — so the reference reads ``DMFTConfig`` and ``attnphys.dmft.trajectories``.
"""

from __future__ import annotations

import re

ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj|const|ref|term|py:\w+):<code>(?P<tilde>~?)(?P<name>[^<]+)</code>")


def _code(m: re.Match) -> str:
    name = m.group("name")
    if m.group("tilde"):
        name = name.rsplit(".", 1)[-1]
    return f"<code>{name}</code>"


def on_page_content(html: str, page, config, files) -> str:
    return ROLE.sub(_code, html)

"""Build hook: the docstrings' theory citations become links in the API reference.

Docstrings cite the theory pages as ``(theory: docs/theory/dmft.md §3.4)``. On every page outside
``theory/`` this hook turns ``docs/theory/PAGE.md §N.M`` (and the bare ``docs/theory/PAGE.md``) in the
text into a link to that page and section. The section anchors are read from the theory pages' own
tables of contents (headings ``## N. Title`` / ``### N.M Title``). A citation of a page or section that
does not exist is a warning, hence an error under ``mkdocs build --strict``.
"""

from __future__ import annotations

import html
import logging
import re

from mkdocs.utils import get_relative_url

log = logging.getLogger("mkdocs.hooks.theory_links")

CITATION = re.compile(r"docs/theory/(?P<page>[\w-]+)\.md(?P<secs>(?:(?:\s*,\s*|\s+and\s+|\s*)§\s?\d+(?:\.\d+)*)*)")
SECTION = re.compile(r"§\s?(\d+(?:\.\d+)*)")
HEADING_NUMBER = re.compile(r"^\s*(\d+(?:\.\d+)*)\.?\s")

SKIP = ("a", "script", "style", "pre", "textarea", "title")
"""Elements whose text is never linked."""

_anchors: dict[str, dict[str, str]] = {}
_urls: dict[str, str] = {}


def on_files(files, config):
    _anchors.clear()
    _urls.clear()
    for f in files.documentation_pages():
        m = re.fullmatch(r"theory/([\w-]+)\.md", f.src_uri)
        if m:
            _urls[m.group(1)] = f.url
    return files


def _walk(items, out):
    for item in items:
        m = HEADING_NUMBER.match(html.unescape(item.title))
        if m:
            out.setdefault(m.group(1), item.id)
        _walk(item.children, out)


def on_page_content(content, page, config, files):
    m = re.fullmatch(r"theory/([\w-]+)\.md", page.file.src_uri)
    if m:
        _walk(page.toc.items, _anchors.setdefault(m.group(1), {}))
    return content


def _link(match: re.Match, page) -> str:
    name = match.group("page")
    text = match.group(0)
    if name not in _urls:
        log.warning("%s cites docs/theory/%s.md, which is not a page of the site", page.file.src_uri, name)
        return text
    base = get_relative_url(_urls[name], page.url)
    secs = SECTION.findall(match.group("secs") or "")
    if not secs:
        return f'<a href="{base}">{text}</a>'
    anchors = _anchors.get(name, {})
    missing = [s for s in secs if s not in anchors]
    if missing:
        log.warning("%s cites docs/theory/%s.md §%s, which has no such section",
                    page.file.src_uri, name, ", §".join(missing))
        return text
    head = f'<a href="{base}#{anchors[secs[0]]}">docs/theory/{name}.md</a>'
    rest = match.group("secs")
    for s in secs:  # link every section number in place
        rest = re.sub(rf"§\s?{re.escape(s)}(?![\d.])", f'<a href="{base}#{anchors[s]}">§{s}</a>', rest, count=1)
    return head + rest


def on_post_page(output, page, config):
    if page.file.src_uri.startswith("theory/"):
        return output
    parts = re.split(r"(<[^>]*>)", output)
    in_code = 0
    for i, part in enumerate(parts):
        if part.startswith("<"):
            m = re.match(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)", part)
            if m and m.group(2).lower() in SKIP and not part.endswith("/>"):
                in_code = max(0, in_code + (-1 if m.group(1) else 1))
            continue
        if not in_code and "docs/theory/" in part:
            parts[i] = CITATION.sub(lambda m: _link(m, page), part)
    return "".join(parts)

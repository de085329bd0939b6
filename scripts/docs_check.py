"""Check what a reader of the built documentation sees, in a real browser.

    python scripts/docs_check.py [SITE_DIR]          (default: site/, built by `make docs`)

Serves SITE_DIR on the loopback interface (``python -m http.server``), opens pages in headless
Chromium (Debian's ``chromium`` and ``chromium-driver``, driven by selenium) and checks, per page:

* equations are typeset: KaTeX output (``.katex``) exists, every ``.arithmatex`` element was rendered,
  no KaTeX parse error (``.katex-error``) is shown, and no raw ``$$``, ``\\[`` or ``\\(`` delimiter is
  left in the visible text;
* every image has loaded (``complete`` and ``naturalWidth > 0``), and the pages that must show gallery
  figures do;
* nothing was requested from another host (the site works offline).

* every link inside the site resolves (a page, an anchor-free file, an image);
* no caption or text shows raw markdown (``**bold**``, ``[text](link)``, a backtick pair);

and, before the browser starts, that no source page under ``docs/`` holds a control character (a tab or
vertical tab where a backslash of TeX was lost: ``\tau`` written in a Python string becomes a tab).

Pages: every page of the site's navigation, read from the built landing page (so a page added to
``mkdocs.yml`` or by a build hook is checked without a list to keep); ``MINIMUM`` adds, for some pages, the
least number of formulas and gallery images they must show. Exits non-zero naming every failed check.
Not part of ``pytest``: ``make docs-check`` runs it (``tests/docs/test_docs_check.py`` checks the checker
on planted faults).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1280,1600")

# page path → (minimum number of typeset formulas, minimum number of gallery images); every other page of
# the navigation is checked with (0, 0)
MINIMUM = {
    "": (2, 1),
    "theory/dmft/": (20, 0),
    "theory/sweeps/": (2, 0),
    "theory/expfam/": (10, 0),
    "theory/particles/": (5, 0),
    "theory/clouds/": (5, 0),
    "howto/dmft/": (0, 0),
    "gallery/": (0, 4),
}

PLAIN_TEXT_TEX = ("_{", "^{")
"""Sub- and superscripts that the API reference shows as written: its docstrings state equations in plain
text (``F^p(x; s)``, ``x_{t+1}``), not TeX; delimiters (``$$``, ``\\(``) and commands are still refused."""

PROBE = r"""
const root = document.querySelector("article") || document.body;
// the visible text outside typeset formulas and code: raw TeX must not survive there
const bare = root.cloneNode(true);
bare.querySelectorAll(".katex, pre, code, script").forEach(e => e.remove());
const text = bare.textContent;
const imgs = Array.from(root.querySelectorAll("img"));
const hosts = performance.getEntriesByType("resource").map(e => new URL(e.name).host)
    .concat([location.host]);
return {
  katex: root.querySelectorAll(".katex").length,
  arithmatex: root.querySelectorAll(".arithmatex").length,
  untypeset: root.querySelectorAll(".arithmatex:not([data-typeset])").length,
  errors: Array.from(root.querySelectorAll(".katex-error")).map(e => e.getAttribute("title") || e.textContent).slice(0, 5),
  raw: ["$$", "\\[", "\\(", "\\frac", "\\sum", "\\mathbf", "\\mathcal", "_{", "^{"]
      .filter(d => text.includes(d))
      .concat((text.match(/\$[^$\n]{1,80}\$/g) || []).slice(0, 3)),
  images: imgs.map(i => ({src: i.currentSrc || i.src, ok: i.complete && i.naturalWidth > 0, w: i.naturalWidth})),
  markdown: ((text.match(/\*\*[^*\n]{1,80}\*\*|\[[^\]\n]{1,80}\]\([^)\s]{1,200}\)|`[^`\n]{1,80}`/g) || []).slice(0, 3)),
  links: Array.from(document.querySelectorAll("a[href]")).map(a => a.href)
      .filter(h => h.startsWith(location.origin)).map(h => h.split("#")[0]),
  nav: Array.from(document.querySelectorAll("nav.md-nav--primary a.md-nav__link[href]")).map(a => a.href)
      .filter(h => h.startsWith(location.origin)).map(h => h.split("#")[0]),
  hosts: Array.from(new Set(hosts)),
  katexLoaded: typeof katex !== "undefined",
  // the page's table of contents (headings with TeX show it raw there)
  tocRaw: Array.from(document.querySelectorAll(".md-sidebar--secondary .md-nav__link")).map(a => a.textContent)
      .filter(t => /\\\(|\\\[|\$/.test(t)).slice(0, 3),
};
"""


def free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(site: Path):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                             "--directory", str(site)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(base, timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError(f"the local server on {base} did not start")
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextlib.contextmanager
def browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        sys.exit("selenium is not installed: pip install -e '.[docs]'")
    for exe in (CHROMIUM, CHROMEDRIVER):
        if not Path(exe).exists():
            sys.exit(f"{exe} is missing: `make docs-browser` installs Debian's chromium and chromium-driver")
    profile = tempfile.mkdtemp(prefix="attnphys-docs-check-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for f in FLAGS + (f"--user-data-dir={profile}",):
        opts.add_argument(f)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        driver.set_page_load_timeout(60)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def check_page(driver, base: str, path: str, min_math: int, min_images: int, shots: Path | None) -> list[str]:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    url = base + path
    driver.get(url)
    try:
        WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")
        # typesetting runs after the load event, and images may still be decoding: wait for both,
        # then look (a page where they never finish is reported below, not here)
        WebDriverWait(driver, 15).until(lambda d: d.execute_script(
            "return document.querySelectorAll('.arithmatex:not([data-typeset])').length === 0 && "
            "Array.from(document.images).every(i => i.complete)"))
    except TimeoutException:
        pass
    r = driver.execute_script(PROBE)
    if shots is not None:
        name = (path.strip("/").replace("/", "_") or "index") + ".png"
        driver.save_screenshot(str(shots / name))
    problems = []
    where = f"/{path}"
    if min_math:
        if not r["katexLoaded"]:
            problems.append(f"{where}: KaTeX did not load")
        if r["katex"] < min_math:
            problems.append(f"{where}: {r['katex']} typeset formulas, expected at least {min_math}")
    if r["untypeset"]:
        problems.append(f"{where}: {r['untypeset']} of {r['arithmatex']} formulas were not typeset")
    if r["errors"]:
        problems.append(f"{where}: KaTeX errors: {r['errors']}")
    raw = r["raw"]
    if path.startswith("reference/"):  # docstrings write their equations in plain text (x_{t+1}, A^{[2]})
        raw = [d for d in raw if d not in PLAIN_TEXT_TEX]
    if raw:
        problems.append(f"{where}: raw TeX delimiters in the visible text: {raw}")
    if r["tocRaw"]:
        problems.append(f"{where}: raw TeX in the table of contents (a heading with math): {r['tocRaw']}")
    if r["markdown"]:
        problems.append(f"{where}: raw markdown in the visible text: {r['markdown']}")
    bad = [i["src"] for i in r["images"] if not i["ok"]]
    if bad:
        problems.append(f"{where}: images that did not load: {bad}")
    gallery = [i for i in r["images"] if "gallery/" in (i["src"] or "") and i["ok"]]
    if len(gallery) < min_images:
        problems.append(f"{where}: {len(gallery)} gallery images loaded, expected at least {min_images}")
    foreign = [h for h in r["hosts"] if not h.startswith("127.0.0.1")]
    if foreign:
        problems.append(f"{where}: requests to other hosts: {foreign}")
    print(f"{where:40s} formulas {r['katex']:4d}  images {len(r['images'])} "
          f"({len(gallery)} from the gallery)  {'ok' if not problems else 'FAILED'}")
    return problems, r


def control_characters(docs: Path) -> list[str]:
    """One line per source page of ``docs`` that holds a control character other than a newline."""
    bad = []
    for page in sorted(docs.rglob("*.md")):
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            chars = sorted({f"U+{ord(c):04X}" for c in line if ord(c) < 32 or ord(c) == 127})
            if chars:
                bad.append(f"{page}:{n}: control characters {', '.join(chars)} (a lost backslash?)")
    return bad


def broken_links(links: set[str]) -> list[str]:
    """The links inside the site that the server answers with an error."""
    bad = []
    for url in sorted(links):
        try:
            urllib.request.urlopen(url, timeout=10).close()
        except OSError as e:
            bad.append(f"broken link {url}: {e}")
    return bad


def check_site(driver, base: str, shots: Path | None, minimum: dict | None = None) -> list[str]:
    """Check every page of the navigation of the site served at ``base`` (see the module's docstring)."""
    minimum = MINIMUM if minimum is None else minimum
    problems, first = check_page(driver, base, "", *minimum.get("", (0, 0)), shots)
    pages = list(dict.fromkeys(u[len(base):] for u in first["nav"]))
    missing = [p for p in minimum if p not in pages and p != ""]
    if missing:
        problems.append(f"pages with expectations that the navigation does not show: {missing}")
    links = set(first["links"])
    for path in pages:
        if path == "":
            continue
        more, r = check_page(driver, base, path, *minimum.get(path, (0, 0)), shots)
        problems += more
        links |= set(r["links"])
    if len(pages) < 2:
        problems.append(f"the navigation of the landing page lists {len(pages)} pages")
    return problems + broken_links(links)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("site", nargs="?", default="site", type=Path, help="built site (default: site)")
    ap.add_argument("--screenshots", type=Path, default=None, help="save a screenshot of every page here")
    ap.add_argument("--docs", type=Path, default=Path(__file__).resolve().parents[1] / "docs",
                    help="the source pages checked for control characters (default: docs/)")
    args = ap.parse_args(argv)
    if not (args.site / "index.html").is_file():
        print(f"{args.site}/index.html does not exist: run `make docs` first", file=sys.stderr)
        return 2
    if args.screenshots is not None:
        args.screenshots.mkdir(parents=True, exist_ok=True)
    problems: list[str] = control_characters(args.docs)
    with serve(args.site.resolve()) as base, browser() as driver:
        problems += check_site(driver, base, args.screenshots)
    if problems:
        print("\n".join(["docs-check failed:"] + problems), file=sys.stderr)
        return 1
    print("docs-check: every page of the navigation: equations typeset, images loaded, links resolve, no raw "
          "markdown, no request left the machine")
    return 0


if __name__ == "__main__":
    sys.exit(main())

# -- documentation (included by the Makefile) ------------------------------------------------------
# make docs        the site into site/ with warnings as errors (mkdocs build --strict); the gallery
#                  figures and the tutorials' outputs are kept in docs/ and re-made by the build for
#                  the scripts and notebooks that changed (make docs-gallery: all of them); KaTeX is installed from the npm registry (pinned in
#                  docs/_hooks/package-lock.json) into build/docs-vendor and served by the site itself
# make docs-check  the built pages in headless Chromium (Debian's chromium + chromium-driver): equations
#                  typeset, gallery images loaded, no request leaving the machine
# make docs-serve  a live-reloading local preview
DOCS_STAMP  := $(VENV)/.docs-installed
DOCS_VENDOR := build/docs-vendor
KATEX_STAMP := $(DOCS_VENDOR)/.installed
SUDO        ?= $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: docs docs-check docs-serve docs-vendor docs-browser docs-clean docs-gallery

$(DOCS_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install -e ".[docs]"
	touch $(DOCS_STAMP)

docs-vendor: $(KATEX_STAMP)

$(KATEX_STAMP): docs/_hooks/package.json docs/_hooks/package-lock.json
	mkdir -p $(DOCS_VENDOR)
	cp docs/_hooks/package.json docs/_hooks/package-lock.json $(DOCS_VENDOR)/
	cd $(DOCS_VENDOR) && npm ci --no-audit --no-fund --ignore-scripts --omit=dev
	touch $(KATEX_STAMP)

docs: $(DOCS_STAMP) $(KATEX_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# every gallery script and tutorial run again against the current library (their stored outputs replaced)
docs-gallery: $(DOCS_STAMP) $(KATEX_STAMP)
	ATTNPHYS_DOCS_RERUN=1 NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: $(DOCS_STAMP) $(KATEX_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

docs-browser:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then \
	  echo "chromium and chromedriver are installed"; \
	else \
	  $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends chromium chromium-driver; \
	fi

docs-check: docs docs-browser
	$(BIN)/python scripts/docs_check.py site
	ATTNPHYS_REQUIRE_SITE=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/docs/test_site.py

docs-clean:
	rm -rf site $(DOCS_VENDOR)

# Attention, step by step. The README's two commands: `make lab` and `make test`.
# Every target sets up what it needs; nothing depends on anything installed by hand: the
# learner's set (`pip install -e .`) for the Lab, the instructor's (`.[grader]`) for grading,
# handouts and the bundle, and everything (`.[grader,hub,test]`) for the tests.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Every install is held to the tested environment's exact versions (constraints.txt).
PIP := $(PY) -m pip install --quiet -c constraints.txt
GRADER_STAMP := $(VENV)/.grader-installed
TEST_STAMP := $(VENV)/.test-installed
SUBMISSIONS ?= submitted
OUT ?= out

.PHONY: setup grader-setup test-setup lab update reset test test-fast release collect grade formgrader \
	totals export data bench handouts bundle lint browser axe sandbox perf clean hub-setup hub hub-end

$(STAMP): pyproject.toml constraints.txt attnlib/lab/settings.py
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip
	$(PIP) -e .
	$(PY) -m attnlib.lab.settings
	touch $(STAMP)

$(GRADER_STAMP): $(STAMP)
	$(PIP) -e '.[grader]'
	touch $(GRADER_STAMP)

$(TEST_STAMP): $(STAMP)
	$(PIP) -e '.[grader,hub,test]'
	touch $(TEST_STAMP)

setup: $(STAMP)
grader-setup: $(GRADER_STAMP)
test-setup: $(TEST_STAMP)

# The learner's own copy: work/ (git-ignored), made from notebooks/ on the first `make lab`.
# LAB_OPTIONS go to JupyterLab: make lab LAB_OPTIONS="--port 8899 --no-browser".
lab: setup
	$(PY) -m attnlib.lab $(LAB_OPTIONS)

update: setup
	$(PY) -m attnlib.lab update

reset: setup
	$(PY) -m attnlib.lab reset $(NOTEBOOK) $(EXERCISE)

# Two pytest workers (pytest-xdist), each module whole in one (tests/conftest.py).
test: test-setup browser axe sandbox hub-setup
	$(PY) -m pytest -n 2

# A few minutes, for a change: no graded batch, no grading, hub, browser or bundle venv, and
# no test that builds a release or starts a kernel (markers set in tests/conftest.py).
test-fast: test-setup
	$(PY) -m pytest -m "not (graded or grading or hub or browser or bundle or slow)"

release: grader-setup
	$(PY) -m grader release

collect: grader-setup
	$(PY) -m grader collect $(ZIP) --roster $(ROSTER) --into $(SUBMISSIONS)

grade: grader-setup sandbox
	$(PY) -m grader autograde $(SUBMISSIONS) --out $(OUT) \
	  $(if $(NOTEBOOKS),--notebooks $(NOTEBOOKS)) $(if $(STUDENTS),--students $(STUDENTS)) \
	  $(if $(ROSTER),--roster $(ROSTER))

formgrader: grader-setup
	$(PY) -m grader formgrader $(OUT) $(if $(PORT),--port=$(PORT)) $(if $(IP),--ip=$(IP))

totals: grader-setup
	$(PY) -m grader totals $(OUT)

export: grader-setup
	$(PY) -m grader export $(OUT) $(if $(ROSTER),--roster $(ROSTER)) \
	  $(if $(CANVAS_GRADEBOOK),--canvas-gradebook $(CANVAS_GRADEBOOK)) \
	  $(foreach w,$(MOODLE_WORKSHEETS),--moodle-worksheet $(w))

data: setup
	$(PY) -m attnlib.factory --retrain

bench: test-setup browser sandbox perf
	$(PY) -m bench

handouts: grader-setup browser
	$(PY) -m grader handouts --out handouts

bundle: grader-setup
	$(PY) -m grader bundle --out dist

lint: test-setup
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/mypy

# Debian's Chromium, for the browser test and the PDF handouts, and poppler-utils, whose
# pdfinfo checks the handouts are tagged PDFs (installed once, as root).
browser:
	@command -v chromium >/dev/null 2>&1 && command -v pdfinfo >/dev/null 2>&1 || { \
	  echo "Installing chromium and poppler-utils (Debian) for the browser test and PDF handouts..."; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver poppler-utils >/dev/null; }

# `$(call npm_ci,FOLDER,TARGET)`: the npm packages FOLDER's package-lock.json pins, into
# TARGET (in the venv), with Debian's Node.js and npm (installed once, as root).
define npm_ci
	@command -v npm >/dev/null 2>&1 || { echo "Installing Node.js and npm (Debian)..."; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }
	mkdir -p $(2) && cp $(1)/package.json $(1)/package-lock.json $(2)/
	cd $(2) && npm ci --omit=dev --no-audit --no-fund --loglevel=error
endef

# axe-core from npm (pinned by tests/axe/package-lock.json): the accessibility checker the
# browser tests run in Chromium (tests/accessibility.py).
AXE := $(VENV)/axe/node_modules/axe-core/axe.min.js

$(AXE): tests/axe/package.json tests/axe/package-lock.json
	$(call npm_ci,tests/axe,$(VENV)/axe)
	touch $(AXE)

axe: $(AXE)

# Debian's bubblewrap, the OS sandbox every graded notebook runs in (installed once, as root).
sandbox:
	@command -v bwrap >/dev/null 2>&1 || { \
	  echo "Installing bubblewrap (Debian package) for the grading sandbox..."; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; }

# Debian's linux-perf, with which the bench counts a grading run's system calls (p8).
perf:
	@command -v perf >/dev/null 2>&1 || { echo "Installing linux-perf (Debian) for the bench..."; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >/dev/null; }

# The workshop server (README "Workshop server"): JupyterHub for a room, as root.
HUB_STAMP := $(VENV)/.hub-installed
CHP := $(VENV)/chp/node_modules/.bin/configurable-http-proxy
HUB_ROOT ?= /opt/attention-course
HUB_OPTIONS ?=

$(HUB_STAMP): $(STAMP)
	$(PIP) -e '.[hub]'
	touch $(HUB_STAMP)

# JupyterHub's proxy from npm (pinned by hub/proxy/package-lock.json) with Debian's Node.js,
# and Debian's patchelf (to copy a Python that sits in a private folder; hub/environment.py).
$(CHP): hub/proxy/package.json hub/proxy/package-lock.json
	$(call npm_ci,hub/proxy,$(VENV)/chp)
	touch $(CHP)

hub-setup: $(HUB_STAMP) $(CHP)
	@command -v patchelf >/dev/null 2>&1 || { echo "Installing patchelf (Debian)..."; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq patchelf >/dev/null; }

hub: setup sandbox hub-setup
	$(PY) -m hub --root $(HUB_ROOT) start $(HUB_OPTIONS)

hub-end: setup hub-setup
	$(PY) -m hub --root $(HUB_ROOT) end

clean:
	rm -rf $(VENV) out handouts dist artifacts

# Attention, step by step. The README's two commands: `make lab` and `make test`.
# Every target sets up what it needs; nothing depends on anything installed by hand.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SUBMISSIONS ?= submitted
OUT ?= out

.PHONY: setup lab update reset test release grade formgrader totals export data bench handouts \
	bundle lint browser sandbox clean

$(STAMP): pyproject.toml attnlib/setup_lab.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	$(PY) -m attnlib.setup_lab
	touch $(STAMP)

setup: $(STAMP)

# The learner's own copy: work/ (git-ignored), made from notebooks/ on the first `make lab`.
lab: setup
	$(PY) -m attnlib.lab

update: setup
	$(PY) -m attnlib.lab update

reset: setup
	$(PY) -m attnlib.lab reset $(NOTEBOOK) $(EXERCISE)

test: setup browser sandbox
	$(PY) -m pytest

release: setup
	$(PY) -m grader release

grade: setup sandbox
	$(PY) -m grader autograde $(SUBMISSIONS) --out $(OUT)

formgrader: setup
	$(PY) -m grader formgrader $(OUT)

totals: setup
	$(PY) -m grader totals $(OUT)

export: setup
	$(PY) -m grader export $(OUT) $(if $(ROSTER),--roster $(ROSTER))

data: setup
	$(PY) -m attnlib.shipped --retrain

bench: setup browser sandbox
	$(PY) -m bench

handouts: setup browser
	$(PY) -m grader handouts --out handouts

bundle: setup
	$(PY) -m grader bundle --out dist

lint: setup
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

# Debian's Chromium, for the browser test and the PDF handouts (installed once, as root).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "Installing chromium (Debian package) for the browser test and PDF handouts..."; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; }

# Debian's bubblewrap, the OS sandbox every graded notebook runs in (installed once, as root).
sandbox:
	@command -v bwrap >/dev/null 2>&1 || { \
	  echo "Installing bubblewrap (Debian package) for the grading sandbox..."; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; }

clean:
	rm -rf $(VENV) out handouts dist artifacts

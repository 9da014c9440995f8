# Every target bootstraps .venv itself. On a machine with no package index (such as a lent
# GPU machine whose python already has the packages), pass PYTHON=python3 to use that python
# (with memlens installed in it: python3 -m pip install --no-deps .).
VENV   := .venv
PYTHON ?= $(VENV)/bin/python
# CuPy wheel for the GPU's CUDA major (nvidia-smi's "CUDA Version"): 13 or 12.
CUDA   ?= 13
SUITE  ?= kernels
# K=REGEX: only the variants (family/variant) it matches, in profile and bench alike.
K ?=
SELECT = $(if $(K),-k '$(K)')
# --roofline: the FLOP and L1 global-sector counters too (roofline, coalescing): 2 more replay passes a kernel
PROFILE_ARGS ?= --roofline
BENCH_ARGS ?=

ifeq ($(PYTHON),$(VENV)/bin/python)
SETUP := $(VENV)/.installed
else
SETUP :=
endif

.PHONY: setup test lint format profile
setup: $(VENV)/.installed

# constraints.txt: the exact versions CI and the GPU machine use (pyproject.toml has only lower bounds).
$(VENV)/.installed: pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q -c constraints.txt --upgrade pip
	$(VENV)/bin/pip install -q -c constraints.txt -e ".[test]"
	touch $@

# pytest-xdist: TEST_JOBS workers (default one a logical CPU; 0: every test in pytest's own process, as a
# python without pytest-xdist runs them too); the GPU tier keeps to one worker (tests/conftest.py).
TEST_JOBS ?= logical
XDIST = $(if $(filter 0,$(TEST_JOBS)),,$(if $(shell $(PYTHON) -c 'import xdist' 2>/dev/null && echo y),\
	-n $(TEST_JOBS) --dist loadgroup))

test: $(SETUP)
	$(PYTHON) -m pytest $(XDIST)

# ruff, then mypy and the import contracts on the checkout as it is (no wheel, no copied tree). Both
# look the package `memlens` up on a path, and the checkout's folders are `memlens` only through the
# editable install's import hook, which neither runs: tools/package_tree.py lays build/lint/memlens/ out
# as pyproject's package-dir says (real folders, one symlink a .py file; import-linter does not walk
# into linked folders), anew each time, and mypy (mypy_path in pyproject.toml) and lint-imports
# (PYTHONPATH, found before the editable hook) read it there. A reported build/lint/... path is a link
# to the checkout's file.
lint: $(SETUP)
	$(PYTHON) -m ruff check profiling reports kernels tests tools
	$(PYTHON) -m ruff format --check profiling reports kernels tests tools
	$(PYTHON) tools/package_tree.py build/lint
	$(PYTHON) -m mypy
	PYTHONPATH=build/lint $(PYTHON) -c 'import sys, importlinter.cli as c; sys.exit(c.lint_imports_command())' \
		--config pyproject.toml --no-cache  # lint-imports, with the make's python

# ruff's formatter (the suite's kernels excepted: pyproject.toml); `make lint` checks the tree is formatted.
format: $(SETUP)
	$(PYTHON) -m ruff format profiling reports kernels tests tools

# Needs an NVIDIA GPU and Nsight Compute (ncu) on PATH. Profiles, times the variants into the same
# run, adds the static check (check.json: spills, stack frames; it needs ptxas, and without one the
# report says the cause of local memory is unknown), and writes its report; a run that failed
# part-way still gets its report, and make fails. The check compiles on the CPU while the bench times
# on the GPU (the bench queues its launches behind a held GPU, so the compiles do not reach its times).
# matplotlib's font cache, which a machine's first chart builds (5 to 7 s on the GPU machine), is built
# on the CPU while ncu profiles, and the report waits for it.
profile: $(SETUP)
	@if [ "$(PYTHON)" = "$(VENV)/bin/python" ]; then $(VENV)/bin/pip install -q -e ".[cuda$(CUDA)]"; fi
	@before=$$(readlink runs/latest); status=0; \
	$(PYTHON) -c "import matplotlib.font_manager" > /dev/null 2>&1 & fonts=$$!; \
	$(PYTHON) -m memlens profile $(SUITE) $(SELECT) $(PROFILE_ARGS) || status=$$?; \
	checked=0; log=$$(mktemp); if [ "$$(readlink runs/latest)" != "$$before" ]; then \
		( $(PYTHON) -m memlens check $(SUITE) --into runs/latest $(SELECT) > /dev/null 2> $$log ) & checked=$$!; fi; \
	if [ $$status -eq 0 ]; then $(PYTHON) -m memlens bench $(SUITE) --into runs/latest $(SELECT) $(BENCH_ARGS) || status=$$?; fi; \
	if [ $$checked -ne 0 ] && ! wait $$checked; then tail -1 $$log >&2; \
		echo "memlens: memlens check failed: the report cannot name the cause of local memory" >&2; fi; rm -f $$log; \
	wait $$fonts; if [ "$$(readlink runs/latest)" != "$$before" ]; then $(PYTHON) -m memlens report runs/latest || status=$$?; fi; \
	exit $$status

.PHONY: check gate
RUN ?= runs/latest
# Static checks, no GPU: compile every suite kernel for sm_90 and gate registers, spills, .local.
check: $(SETUP)
	mkdir -p build  # memlens makes no folders for its outputs
	$(PYTHON) -m memlens check $(SUITE) --json build/check.json
	$(PYTHON) -m memlens gate build/check.json --rules $(SUITE)/gates-static.toml \
		--junit build/gate-static.xml --summary build/gate-static.md

# Gate a profile run (default: the latest) with the suite's rules; BASELINE=FILE adds regression checks.
gate: $(SETUP)
	mkdir -p build
	$(PYTHON) -m memlens gate $(RUN) --rules $(SUITE)/gates.toml $(if $(BASELINE),--baseline $(BASELINE)) \
		--junit build/gate.xml --summary build/gate.md --json build/gate.json

.PHONY: report demo
# The report of the latest run (runs/latest): writes runs/latest/report.html and prints its path.
report: $(SETUP)
	$(PYTHON) -m memlens report runs/latest

# The report rendered from the recorded fixtures, no GPU needed: the full suite beside its --fast
# run (the probe until the suite recordings exist), and a plain ncu report's "other kernels".
# Writes build/demo-report.{html,md} and build/demo-plain-ncu.html.
DEMO_RUNS ?= $(or $(wildcard tests/fixtures/*/suite.results.json tests/fixtures/*/suite_fast.results.json),\
	tests/fixtures/probe/probe.csv tests/fixtures/probe/probe_fast.ncu-rep)
DEMO_PLAIN ?= $(firstword $(wildcard tests/fixtures/*/plain_ncu.ncu-rep))
demo: $(SETUP)
	mkdir -p build
	$(PYTHON) -m memlens report $(DEMO_RUNS) -o build/demo-report.html
	$(PYTHON) -m memlens report $(DEMO_RUNS) --format md -o build/demo-report.md
	$(if $(DEMO_PLAIN),$(PYTHON) -m memlens report $(DEMO_PLAIN) -o build/demo-plain-ncu.html)

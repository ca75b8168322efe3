# SPDX-License-Identifier: GPL-2.0
# taintport: the two entry points a newcomer needs, plus the pieces they run.
#   make matrix   fetch, build, boot and judge every kernel in versions/
#   make check    the test suite (unit, agent, fixtures, end-to-end on 6.1)
# Both install their Debian packages first (tools/install-deps).

PYTHON := /usr/bin/python3
TAINTPORT := $(PYTHON) tools/taintport
PYTEST := $(PYTHON) -m pytest
AGENT_TEST_OUT := $(CURDIR)/results/.agent-check

.PHONY: deps ci-tools matrix check unit typecheck agent-check e2e report ci ci-check ci-local \
	bench regen point-releases outdated man completion

deps:
	@sh tools/install-deps

# The CI tools the tests run the pipelines under ci/ with (npm packages pinned
# in ci/tools/, installed into the taintport cache); only the tests need them.
ci-tools:
	@sh tools/install-deps --ci-tools

matrix: deps
	$(TAINTPORT) matrix $(MATRIX_ARGS)

# Everything but the boots: seconds.
unit: deps ci-tools
	$(PYTEST) -q -m "not e2e" tools/tests

# mypy.ini: a dict where a cell is expected is an error (seconds)
typecheck: deps
	$(PYTHON) -m mypy

agent-check: deps
	$(MAKE) -C test-matrix/agent check OUT=$(AGENT_TEST_OUT)

e2e: deps ci-tools
	$(PYTEST) -q -m e2e tools/tests

# On every core (pytest-xdist): a TCG boot, spatch and most tests are one
# thread each; the tests on the user's cache run in one worker, in order
# (tools/tests/conftest.py).
check: deps ci-tools typecheck agent-check ci-check
	$(PYTEST) -v -n auto --dist loadgroup tools/tests

# Reports again from a results folder's matrix.json: make report DIR=results/<run>
report:
	$(TAINTPORT) report $(DIR)

# The CI pipelines under ci/ are generated from versions/: regenerate after editing it.
ci:
	$(TAINTPORT) ci

ci-check:
	$(TAINTPORT) ci --check

# The GitLab pipeline run here by gitlab-ci-local, on your cache:
# make ci-local VERSIONS=bookworm-6.1 (default: every kernel)
ci-local: deps ci-tools
	$(TAINTPORT) ci --local $(if $(VERSIONS),--versions $(VERSIONS))

# One measured run (about 95 minutes on 2 cores: a cold matrix, its rerun,
# the naive way and the upload cost): writes docs/benchmarks.md.
bench: deps
	$(TAINTPORT) bench

# Rewrite quilt/<version>/backported/ from semantic-patches/.
regen: deps
	$(TAINTPORT) regen

# The layer (no build) on every linux-source version the suites offer now.
point-releases: deps
	$(TAINTPORT) check --all-point-releases

# Each pin against what its suites serve now (a scheduled job's "a new
# security upload is out"): exit 1 when one is behind, 2 when an index fails.
outdated: deps
	$(TAINTPORT) versions --outdated

# The man page and the bash completion, generated from the command line's
# parser (never committed, so never stale): man -l build/taintport.1;
# . build/taintport.bash (tools/taintport on PATH as taintport).
man: deps
	@mkdir -p build
	PYTHONPATH=tools/lib $(PYTHON) -m taintport.cli.manual man > build/taintport.1

completion: deps
	@mkdir -p build
	PYTHONPATH=tools/lib $(PYTHON) -m taintport.cli.manual completion > build/taintport.bash

# harnessgen — every target installs what it needs (idempotently).
#   make fuzz [TARGET=cloudsc|kernels|npbench[:NAME]] [NPBENCH=checkout] [XFORM=A,B] [TIME=s per instance] [INSTANCE=id] [JOBS=n] [REDO=VERDICT|Class,...]
#             [PARAMS=default|boundary|N]
#   make recipe [TARGET=cloudsc] [RECIPE=file.py:function] [TIME=s per step] [BUDGET=s]
#   make campaign [TARGET=kernels] [XFORMS=all|A,B] [BUDGET=60s|200000x per instance] [JOBS=n] [CAMPAIGN=dir]
#   make pyfuzz [COMPILER=dace|torch|tvm] [TORCH=version] [PYFUZZ_TIME=s] [PYFUZZ_ARGS=...]
#   make setup-torch [TORCH=version]
#   make setup-cuda / setup-gpu
#   make test
#   make instances TARGET=kernels XFORM=MapTiling

SHELL        := /bin/bash
PYTHON       ?= python3
VENV         := .venv
WORK         := .harnessgen
# DACE=<version>: run on that DaCe, in an environment of its own built from
# constraints-dace-<version>.txt ($(WORK)/daceenvs/dace-<version>); empty or 2.0.0b1: the default
# environment (.venv, constraints.txt). OTHER_DACE is the version `make test` also checks.
# DACE=<path to a DaCe source tree> (a git checkout, an unpacked sdist): that tree installed
# editable, in an environment of its own with the default's pins for everything else.
DACE         ?=
DEFAULT_DACE := 2.0.0b1
OTHER_DACE   := 1.0.2
DACE_ENV      = $(WORK)/daceenvs/dace-$(1)
ON_OTHER_DACE = $(filter-out $(DEFAULT_DACE),$(DACE))
DACE_TREE    := $(if $(findstring /,$(DACE)),$(abspath $(DACE)))
DACE_TAG     := $(if $(DACE_TREE),checkout-$(notdir $(DACE_TREE))-$(shell printf '%s' '$(DACE_TREE)' | sha1sum | cut -c1-8),$(DACE))
BIN          := $(if $(ON_OTHER_DACE),$(call DACE_ENV,$(DACE_TAG))/bin,$(VENV)/bin)
OTHER_BIN    := $(call DACE_ENV,$(OTHER_DACE))/bin
SETUP        := $(if $(ON_OTHER_DACE),setup-dace,setup)
DEB_PACKAGES := afl++ clang lld llvm libomp-dev libclang-rt-14-dev build-essential cmake procps gnuplot-nox gdb
TARGET       ?= cloudsc
# NPBENCH=<an NPBench checkout> for TARGET=npbench (default: ../shared/npbench where it exists)
NPBENCH      ?=
XFORM        ?=
TIME         ?= 2
# the whole run's bound, s (planning in it): CLOUDSC's plan fits 840 s; NPBench's whole plan (about
# 7,000 matches) gets 1,800 s, its matches judged before any parameter variant or audit
BUDGET       ?= $(if $(filter npbench,$(TARGET)),1800,840)
JOBS         ?= $(shell nproc 2>/dev/null || echo 1)
OUT          ?= $(WORK)/runs/$(subst :,-,$(subst /,_,$(TARGET)))-$(if $(XFORM),$(subst $(comma),+,$(subst :,-,$(XFORM))),defaults)$(if $(ON_OTHER_DACE),-dace$(DACE_TAG))
comma        := ,
RECIPE       ?=
RECIPE_OUT   ?= $(WORK)/runs/recipe-$(subst :,-,$(subst /,_,$(TARGET)))$(if $(RECIPE),-$(notdir $(subst :,-,$(RECIPE))))$(if $(ON_OTHER_DACE),-dace$(DACE_TAG))
FUZZ_ARGS    ?=
TEST_ARGS    ?=
BENCH_ARGS   ?=
XFORMS       ?=
ON_DACE      ?=
CAMPAIGN_ARGS ?=
WHATSUP_ARGS ?= -s -d
CAMPAIGN     ?= $(WORK)/campaigns/$(subst :,-,$(subst /,_,$(TARGET)))-$(if $(XFORMS),$(subst $(comma),+,$(subst :,-,$(XFORMS))),defaults)$(if $(ON_OTHER_DACE),-dace$(DACE_TAG))
# make campaign: BUDGET is per instance there (60s, 5m, 200000x); for make fuzz it bounds the whole run
CAMPAIGN_BUDGET = $(if $(filter command line environment,$(origin BUDGET)),$(BUDGET),60s)

COMPILER     ?= dace
TORCH        ?=
PYFUZZ_TIME  ?= 120
PYFUZZ_ARGS  ?=

.PHONY: setup warm setup-dace test-other-dace setup-torch setup-tvm setup-cuda setup-gpu gpu-check barriers pyfuzz deps venv shipped-parses fuzz recipe campaign report whatsup plot triage bugs replay instances test test-unit bench bench-quick bench-zoo bench-recipe bench-npbench bench-prove clean distclean help

help:
	@echo "make fuzz [TARGET=cloudsc] [XFORM=A,B] [TIME=2] [JOBS=n]  fuzz every instance (default: the target's"
	@echo "                                                         default transformations), TIME s each, JOBS at a time"
	@echo "make fuzz TARGET=kernels:gemm INSTANCE=id JOBS=4 TIME=86400  one long session: -M main + 3 -S (one with CMPLOG);"
	@echo "                                                         the same command again resumes it (afl-fuzz -i -)"
	@echo "make recipe [TARGET=cloudsc] [RECIPE=file.py:function]   an optimization, step by step: every transformation"
	@echo "                                                         and pass it applied judged where it applied it, the"
	@echo "                                                         first wrong step named (default: cloudsc's own recipe)"
	@echo "make whatsup [OUT=dir]                                   afl-whatsup on every afl-fuzz sync directory under OUT"
	@echo "                                                         (WHATSUP_ARGS=-d for every instance's details)"
	@echo "make plot [OUT=dir]                                      afl-plot of every afl-fuzz instance under OUT (gnuplot)"
	@echo "make campaign TARGET=kernels XFORMS=all BUDGET=30s JOBS=2  every instance of every transformation, resumable;"
	@echo "                                                         report.html/.md in CAMPAIGN (default $(WORK)/campaigns/...)"
	@echo "make report CAMPAIGN=dir                                 redraw a campaign's report"
	@echo "make campaign TARGET=generated:0-29 XFORMS=all BUDGET=3s  random DaCe programs (a guided stream) x every"
	@echo "                                                        CPU built-in; harnessgen generate 17 prints one"
	@echo "make triage TARGET=kernels:gemm XFORM=MapTiling         re-triage that run's raw crashes"
	@echo "make bugs TARGET=cloudsc                              that run's findings as distinct bugs (bugs.json, BUG.md)"
	@echo "make bugs TARGET=cloudsc ON_DACE=1.0.2,2.0.0b1         ... each judged again on those DaCe versions"
	@echo "make replay CRASH=crashes/<target>/<instance>/<finding>  run a finding's reproducer"
	@echo "make instances TARGET=kernels XFORM=MapTiling           list instances and cutout sizes"
	@echo "make fuzz TARGET=npbench [NPBENCH=dir]                  every NPBench benchmark (default ../shared/npbench) x"
	@echo "                                                         every CPU built-in; TARGET=npbench:gemm for one"
	@echo "make fuzz TARGET=kernels XFORM=MapTiling PARAMS=boundary  the transformation's own parameters too (tile sizes,"
	@echo "                                                         offsets, widths...): boundary values, or PARAMS=N per match"
	@echo "make fuzz TARGET=kernels XFORM=gpu                       GPU transformations (GPU cutouts; built only where no GPU is)"
	@echo "make fuzz TARGET=gpukernels                              our CUDA kernels against their references (AuCS bugs planted)"
	@echo "make barriers [TARGET=gpukernels:NAME]                   which __syncthreads() are redundant (on a GPU)"
	@echo "make pyfuzz COMPILER=dace|torch|tvm PYFUZZ_TIME=120      Atheris on DaCe's frontend, torch.compile or TVM Relax;"
	@echo "                                                         findings in crashes/pyfuzz/<compiler>/"
	@echo "make setup-torch                                         install torch 2.13.0 (CPU) for COMPILER=torch"
	@echo "make setup-tvm                                           install apache-tvm (Relax) for COMPILER=tvm"
	@echo "make setup-torch TORCH=2.0.1                             that torch in its own env and Python (3.10 for 2.0);"
	@echo "                                                         make pyfuzz COMPILER=torch TORCH=2.0.1 uses it"
	@echo "make setup-cuda                                          CUDA 13 compiler, runtime and CCCL from PyPI into the venv"
	@echo "                                                         (builds GPU cutouts and kernels; no GPU needed)"
	@echo "make setup-gpu                                           on a GPU machine: pycuda (kernel replays) as well"
	@echo "make gpu-check [GPU_CHECK_ARGS=--quick]                 on a GPU machine: tests/gpu, GPU fuzzing of kernels and"
	@echo "                                                         gpukernels; figures in $(WORK)/gpu-check/gpu-check.md"
	@echo "make test                                               the whole test suite on DaCe $(DEFAULT_DACE), then its bounded set on $(OTHER_DACE)"
	@echo "make setup-dace DACE=1.0.2                              another DaCe in its own environment; DACE=1.0.2 on any"
	@echo "                                                         target (fuzz, campaign, bugs...) runs there"
	@echo "make shipped-parses                                     parse the built-in programs that ship (CLOUDSC) again on"
	@echo "                                                         every pinned DaCe: after an edit to the port or the loader"
	@echo "make bench                                              performance figures: table, bench/results/perf.json,"
	@echo "                                                         README section Performance (about 30 min)"
	@echo "make bench-quick                                        the same, one repetition each (a smoke run, no README)"
	@echo "make bench-zoo                                          time the planted-bug zoo (about 10 min)"
	@echo "make bench-recipe                                       a wrong step planted in CLOUDSC's recipe: how soon it is named"
	@echo "make bench-npbench                                      NPBench's whole plan in its 1,800 s bound: the figures of"
	@echo "                                                         docs/npbench.md (about 32 min)"
	@echo "make bench-prove                                        proof coverage: kernels x all CPU built-ins and CLOUDSC defaults (--prove only)"

setup: deps venv warm

# another DaCe in its own environment: make setup-dace DACE=1.0.2, or DACE=/path/to/dace
setup-dace: deps
	@test -n "$(ON_OTHER_DACE)" || { echo "make setup-dace needs DACE=<version> other than $(DEFAULT_DACE) (e.g. DACE=$(OTHER_DACE)) or DACE=<path to a DaCe source tree>"; exit 2; }
ifneq ($(DACE_TREE),)
	@test -f "$(DACE_TREE)/dace/__init__.py" || { echo "DACE=$(DACE): no dace/__init__.py there; give the folder of a DaCe source tree (a git checkout or an unpacked sdist, with setup.py or pyproject.toml)"; exit 2; }
	@$(MAKE) --no-print-directory $(call DACE_ENV,$(DACE_TAG))/.stamp-tree
else
	@test -f constraints-dace-$(DACE).txt || { echo "no constraints-dace-$(DACE).txt: write one (pip freeze of a venv with dace==$(DACE)) to run on DaCe $(DACE)"; exit 2; }
	@$(MAKE) --no-print-directory $(call DACE_ENV,$(DACE))/.stamp
endif
# a DaCe source tree, editable (its edits take effect at once): the default's pins but DaCe's own
$(WORK)/daceenvs/dace-checkout-%/.stamp-tree: constraints.txt pyproject.toml
	test -x $(@D)/bin/python || $(PYTHON) -m venv $(@D)
	$(@D)/bin/pip install -q --upgrade pip
	grep -v '^dace==' constraints.txt > $(@D)/constraints.txt
	$(@D)/bin/pip install -q -c $(@D)/constraints.txt -e '$(DACE_TREE)'
	$(@D)/bin/pip install -q -c $(@D)/constraints.txt -e '.[test,dask]'
	touch $@
$(WORK)/daceenvs/dace-%/.stamp: constraints-dace-%.txt pyproject.toml
	test -x $(@D)/bin/python || $(PYTHON) -m venv $(@D)
	$(@D)/bin/pip install -q --upgrade pip
	$(@D)/bin/pip install -q -c constraints-dace-$*.txt -e '.[test,dask]'
	touch $@

# Debian packages: apt-get runs only when one of them is missing.
deps: $(WORK)/.deps-stamp
$(WORK)/.deps-stamp: Makefile
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@mkdir -p $(WORK) && touch $@

venv: $(VENV)/.stamp
$(VENV)/.stamp: pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[test,dask]'
	touch $@

# the precompiled headers every build shares, and the main command's program read once, made
# here: a fresh clone's first verdict does not wait on them (harnessgen/harness/warm.py; never
# fails setup; again when what it warms changes)
warm: $(WORK)/.warm-stamp
$(WORK)/.warm-stamp: $(WORK)/.deps-stamp $(VENV)/.stamp harnessgen/harness/warm.py
	$(if $(NPBENCH),HARNESSGEN_NPBENCH=$(abspath $(NPBENCH))) $(BIN)/python -m harnessgen.harness.warm $(WORK)
	@touch $@

# GPU work needs the CUDA toolchain: a kernel target, or GPU transformations (XFORM=gpu, GPU...)
NEEDS_CUDA = $(or $(findstring gpukernels,$(TARGET)),$(findstring gpu,$(XFORM)),$(findstring GPU,$(XFORM)))

fuzz: $(SETUP) $(if $(NEEDS_CUDA),setup-cuda)
	$(if $(NPBENCH),HARNESSGEN_NPBENCH=$(abspath $(NPBENCH))) $(BIN)/harnessgen fuzz --program $(TARGET) $(if $(XFORM),--transformation $(XFORM)) \
	  $(if $(INSTANCE),--instance $(INSTANCE),--all) --time $(TIME) --jobs $(JOBS) \
	  $(if $(BUDGET),--budget $(BUDGET)) $(if $(REDO),--redo $(REDO)) $(if $(PARAMS),--params $(PARAMS)) \
	  --out $(OUT) $(FUZZ_ARGS)

# a recipe: the target's own (cloudsc's), or RECIPE=file.py:function; judged step by step
recipe: $(SETUP)
	$(BIN)/harnessgen recipe --program $(TARGET) $(if $(RECIPE),--recipe $(RECIPE)) --time $(TIME) --jobs $(JOBS) \
	  $(if $(BUDGET),--budget $(BUDGET)) --out $(RECIPE_OUT) $(FUZZ_ARGS)

campaign: $(SETUP)
	$(if $(NPBENCH),HARNESSGEN_NPBENCH=$(abspath $(NPBENCH))) $(BIN)/harnessgen campaign --program $(TARGET) $(if $(XFORMS),--transformation $(XFORMS)) \
	  --budget $(CAMPAIGN_BUDGET) --jobs $(JOBS) $(if $(PARAMS),--params $(PARAMS)) --out $(CAMPAIGN) $(CAMPAIGN_ARGS)

report: $(SETUP)
	$(BIN)/harnessgen report $(CAMPAIGN)

# afl-fuzz sync directories hold one folder per instance, each with its own fuzzer_stats
AFL_SYNC_DIRS = find $(OUT) -name fuzzer_stats -printf '%h\n' 2>/dev/null | xargs -r -n1 dirname | sort -u

whatsup: deps
	@dirs=$$($(AFL_SYNC_DIRS)); \
	test -n "$$dirs" || { echo "no afl-fuzz output under $(OUT): pass OUT=<fuzz --out or campaign directory>"; exit 2; }; \
	for d in $$dirs; do echo "== $$d"; afl-whatsup $(WHATSUP_ARGS) $$d 2>/dev/null | grep -v 'status check tool'; done

plot: deps
	@dirs=$$(find $(OUT) -name plot_data -printf '%h\n' 2>/dev/null | sort -u); \
	test -n "$$dirs" || { echo "no afl-fuzz output under $(OUT): pass OUT=<fuzz --out or campaign directory>"; exit 2; }; \
	for d in $$dirs; do afl-plot $$d $$d/plot >/dev/null && echo "$$d/plot/index.html"; done

triage: $(SETUP)
	$(BIN)/harnessgen triage $(OUT)

# ON_DACE=1.0.2,2.0.0b1: each bug judged again on those DaCe versions (make setup-dace DACE=<v> first)
bugs: $(SETUP)
	$(BIN)/harnessgen bugs $(OUT) $(if $(ON_DACE),--on-dace $(ON_DACE))

replay: $(SETUP)
	@test -n "$(CRASH)" || { echo "usage: make replay CRASH=crashes/<target>/<instance>/<finding>"; exit 2; }
	$(BIN)/harnessgen replay $(CRASH)

barriers: $(SETUP) setup-cuda
	$(BIN)/harnessgen barriers --program $(if $(filter gpukernels%,$(TARGET)),$(TARGET),gpukernels)

instances: $(SETUP)
	$(BIN)/harnessgen instances --program $(TARGET) $(if $(XFORM),--transformation $(XFORM)) $(if $(PARAMS),--params $(PARAMS))

# torch for pyfuzz --compiler torch, into the same venv (2.13.0 is a CPU build here and runs
# beside DaCe's numpy<2); TORCH=<version>: that release in .harnessgen/pyenvs/torch-<version>,
# on the newest Python its torch.compile runs on (3.10 for the 2.0 series)
setup-torch: $(if $(TORCH),setup,$(VENV)/.torch-stamp)
ifneq ($(TORCH),)
	$(BIN)/python -m harnessgen.pyfuzz.interpreters setup-torch $(TORCH)
endif
$(VENV)/.torch-stamp: $(VENV)/.stamp
	$(BIN)/pip install -q -c constraints.txt -e '.[test,dask,torch]'
	touch $@

# apache-tvm for pyfuzz --compiler tvm (Relax), into the same venv
setup-tvm: $(VENV)/.tvm-stamp
$(VENV)/.tvm-stamp: $(VENV)/.stamp
	$(BIN)/pip install -q -c constraints.txt -e '.[test,dask,tvm]'
	touch $@

# CUDA 13 from PyPI wheels (nvcc, cicc, ptxas, cudart, CCCL): compiles GPU code anywhere; the
# self-check compiles a CUB kernel with the flags GPU builds use
setup-cuda: $(VENV)/.cuda-stamp
$(VENV)/.cuda-stamp: $(VENV)/.stamp
	$(BIN)/pip install -q -c constraints.txt -e '.[test,dask,cuda]'
	$(BIN)/python -m harnessgen.cuda.toolkit
	touch $@

# pycuda builds from source against the driver's libcuda: only where a GPU and its driver are
# (checked first: elsewhere one line says what is missing, and nothing is built or run)
setup-gpu: setup-cuda
	@$(BIN)/python -m harnessgen.cuda.toolkit --need-gpu
	$(BIN)/pip install -q -c constraints.txt -e '.[test,dask,cuda,gpu]'

# one command for a machine with a GPU: tests/gpu, then GPU fuzzing with figures (execs/s, first execution)
GPU_CHECK_ARGS ?=
gpu-check: setup-gpu
	$(BIN)/python bench/gpu_check.py --out $(WORK)/gpu-check $(GPU_CHECK_ARGS)

pyfuzz: setup $(if $(filter torch,$(COMPILER)),setup-torch) $(if $(filter tvm,$(COMPILER)),setup-tvm)
	$(BIN)/harnessgen pyfuzz --compiler $(COMPILER) --time $(PYFUZZ_TIME) $(if $(TORCH),--torch $(TORCH)) $(PYFUZZ_ARGS)

# the whole suite on the default DaCe (2.0), then the bounded set on the other one (1.0.2): its
# unit tests, the documents, tests/versions (a planted bug per subject kind, the correct twin,
# region cutouts against their programs, a user's scalars, inputs computed before a loop), every
# kernel cutout's pre built, the faults no run may end on (tests/integration/test_run_errors.py),
# and the tests marked dace_102 (what 1.0.2 itself does; the default run says where it leaves them)
test: setup setup-torch setup-tvm setup-cuda
	$(BIN)/pytest -n 2 --durations=10 $(TEST_ARGS)
	@$(MAKE) --no-print-directory test-other-dace

test-other-dace:
	@$(MAKE) --no-print-directory setup-dace DACE=$(OTHER_DACE)
	$(OTHER_BIN)/pytest -n 2 --durations=5 -m "not other_compiler" tests/unit docs tests/versions \
	  tests/integration/test_cutout_builds.py tests/integration/test_run_errors.py $(TEST_ARGS)
	$(OTHER_BIN)/pytest -n 2 --durations=5 -m "dace_102 and not other_compiler" tests/integration tests/quality $(TEST_ARGS)

bench: $(SETUP)
	$(BIN)/python bench/perf.py $(BENCH_ARGS)

bench-quick: $(SETUP)
	$(BIN)/python bench/perf.py --quick --out $(WORK)/perf-quick.json $(BENCH_ARGS)

bench-zoo: $(SETUP)
	$(BIN)/python bench/zoo.py

# a wrong step among CLOUDSC's recipe: how soon make recipe names it (about 20 min; bench/results/recipe.json)
bench-recipe: $(SETUP)
	$(BIN)/python bench/recipe.py $(BENCH_ARGS)

# NPBench's whole plan in its default bound (30 min and the analysis): the figures of docs/npbench.md
# (bench/results/npbench-plan.json)
bench-npbench: $(SETUP)
	@started=$$(date +%s); $(MAKE) --no-print-directory fuzz TARGET=npbench FUZZ_ARGS="--fresh --no-progress $(FUZZ_ARGS)" \
	  > $(WORK)/bench-npbench.log 2>&1; ended=$$(date +%s); \
	$(BIN)/python bench/npbench_plan.py $(WORK)/runs/npbench-defaults --wall $$((ended - started)) --workers $(JOBS) \
	  --json bench/results/npbench-plan.json

bench-prove: $(SETUP)
	$(BIN)/python bench/prove.py --program kernels
	$(BIN)/python bench/prove.py --program cloudsc --transformation '' --budget 900

# the parsed built-in programs that ship (harnessgen/targets/parsed/), on every pinned DaCe:
# after an edit to a built-in program's source or to how harnessgen/targets/loaders.py prepares it
shipped-parses: setup
	@$(MAKE) --no-print-directory setup-dace DACE=$(OTHER_DACE)
	$(VENV)/bin/python -m harnessgen.targets.shipped
	$(OTHER_BIN)/python -m harnessgen.targets.shipped

test-unit: $(SETUP)
	$(BIN)/pytest -n 2 tests/unit docs $(TEST_ARGS)

clean:
	rm -rf $(WORK)/builds $(WORK)/objects $(WORK)/generated $(WORK)/confirm-programs $(WORK)/runs

distclean:
	rm -rf $(WORK) $(VENV)

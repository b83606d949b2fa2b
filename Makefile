# adjit: `make test` and `make bench` work on a fresh clone; each creates .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

N ?= 1000
SEED ?= 0
# programs per fuzzer process (a worker that kept every compiled program grew to gigabytes)
FUZZ_CHUNK ?= 250
# the chunk to start at: a stopped campaign goes on with FUZZ_FIRST=<chunks it finished>
FUZZ_FIRST ?= 0

.PHONY: test check durations bench bench-docs vmath-docs examples fuzz fuzz-cuda clean cuda-bench coverage

$(VENV)/.base: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.test: $(VENV)/.base
	$(PY) -m pip install -q -e '.[test,distributed]'
	touch $@

# the suite in one worker process per core (pytest-xdist), a test file's tests together so that
# they share what they compile (tests marked `spread` go to any free worker: tests/conftest.py);
# TEST_JOBS=1 runs it in this process
TEST_JOBS ?= auto

test: $(VENV)/.test
	$(PY) -m pytest -q -n $(TEST_JOBS) --dist loadgroup

# the edit-test loop (a few minutes): every test file's cheapest tests by the durations a
# full run recorded (tests/durations.json), up to CHECK_SECONDS per file
CHECK_SECONDS ?= 1.5
check: $(VENV)/.test
	$(PY) -m pytest -q -n $(TEST_JOBS) --dist loadgroup --quick $(CHECK_SECONDS)

# the whole suite, writing every test's duration to tests/durations.json (what `make check`
# chooses by): run it after adding or changing tests, and commit the file
durations: $(VENV)/.test
	$(PY) -m pytest -q -n $(TEST_JOBS) --dist loadgroup --record-durations

# make fuzz N=10000: N generated programs, every construct group drawn, against the reference
# AD (tests/fuzz/campaign.py)
fuzz: $(VENV)/.test
	PYTHONPATH=tests $(PY) -m fuzz -n $(N) --seed $(SEED) --groups --chunk $(FUZZ_CHUNK) \
	  --first-chunk $(FUZZ_FIRST)

# make fuzz-cuda N=1000: N drawn numba.cuda kernels through adjit.cuda.adjoint_kernel against a
# sequential oracle with a race detector (tests/fuzz_cuda/campaign.py; CUDA simulator)
fuzz-cuda: $(VENV)/.test
	NUMBA_ENABLE_CUDASIM=$${NUMBA_ENABLE_CUDASIM:-1} PYTHONPATH=tests $(PY) -m fuzz_cuda -n $(N) --seed $(SEED)

bench: $(VENV)/.base
	$(PY) benchmarks/run.py

$(VENV)/.plot: $(VENV)/.base
	$(PY) -m pip install -q -e '.[plot]'
	touch $@

# the table plus docs/benchmarks.md and docs/benchmarks.png (matplotlib: the extra [plot])
bench-docs: $(VENV)/.plot
	$(PY) benchmarks/run.py --docs

# the vector-math accuracy and speed tables: docs/vector_math.md
vmath-docs: $(VENV)/.base
	$(PY) benchmarks/vmath.py --docs

$(VENV)/.dist: $(VENV)/.base
	$(PY) -m pip install -q -e '.[distributed]'
	touch $@

# every example; those that scale out need the extra [distributed], and the MPI one runs
# on two ranks
examples: $(VENV)/.dist
	for f in examples/*.py; do echo "== $$f"; \
	  case $$f in *_mpi.py) $(VENV)/bin/mpiexec -n 2 $(PY) $$f || exit 1;; \
	  *) $(PY) $$f || exit 1;; esac; done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

# CUDA kernels on a GPU (numba-cuda comes with the test extra); says so and exits 0 without one
cuda-bench: $(VENV)/.test
	$(PY) benchmarks/cuda_bench.py

# docs/coverage.md from the registry of primitives (tests/test_coverage.py checks it)
coverage: $(VENV)/.base
	$(PY) -m adjit.rules.coverage

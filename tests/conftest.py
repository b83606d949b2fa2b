"""Test configuration: the hypothesis profiles (a bounded default, a larger one on request),
how the suite spreads over workers (a test file's tests together, so that they share what
they compile, but for tests marked `spread`), and `make check`'s selection (`--quick`: the
cheapest tests of every file by the durations a full run recorded in tests/durations.json)."""
import gc
import json
import os
import pathlib
import sys

# The suite compiles with LLVM's optimizations off (NUMBA_OPT=0, numba's own code and adjit's
# generated code alike): the same IR, the same floating-point operations in the same order,
# in about 60% of the compile time, which is most of the suite's time. What users run is
# compiled at numba's default (3); tests/test_optimized.py runs the hand-adjoint and bitwise
# checkpoint tests at that level, and `make bench` and `make examples` run there too.
# NUMBA_OPT=3 make test runs everything optimized.
if "numba" not in sys.modules:
    os.environ.setdefault("NUMBA_OPT", "0")

# Gradients compiled at numba's default optimization (the subprocesses of
# tests/test_optimized.py, the examples) keep their machine code on disk by default: in a
# folder of this run's, not the user's ~/.cache/adjit.
if "ADJIT_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile
    os.environ["ADJIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="adjit-test-cache-")
    atexit.register(shutil.rmtree, os.environ["ADJIT_CACHE_DIR"], True)

# The CUDA tests (tests/test_cuda.py) run in numba's CUDA simulator unless the environment
# chooses: on a machine with a GPU, NUMBA_ENABLE_CUDASIM=0 runs the same tests on it.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

# numba-cuda 0.2x registers an overload of np.row_stack, which numpy 2.5 removed: on a GPU
# machine with both, compiling any kernel raises AttributeError inside numba-cuda. The tests
# give numpy back the alias (np.vstack, which it was) so they can run there; adjit itself
# leaves numpy alone.
import numpy as _np

if not hasattr(_np, "row_stack"):
    _np.row_stack = _np.vstack

import pytest
from hypothesis import HealthCheck, settings

# `make test` (and CI, which runs it) draws 25 examples per property, the same ones every run
# (derandomized: a property's examples follow from its name, so a run cannot fail on a point
# no earlier run drew, such as a finite-difference stencil straddling a kink, and a change
# that fails a test fails it every time). HYPOTHESIS_PROFILE=explore draws 25 new examples
# per property on every run; HYPOTHESIS_PROFILE=deep draws 200 new ones, for a longer look
# before a release or after changing a rule.
settings.register_profile("default", max_examples=25, deadline=None, derandomize=True,
                          database=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", max_examples=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("deep", max_examples=200, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# The benchmark cases are also test programs: one definition of each.
_ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT / "benchmarks"))
sys.path.insert(0, str(_ROOT / "examples"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """After each test, its garbage collected and what survives frozen (gc.freeze): Python's
    cyclic collector otherwise walks every object a worker holds (numba's compiled
    functions, types and IR, gigabytes by the end of a run) at each full collection; that
    was a fifth of a test file's time (tests/test_natural_programs.py in one process: 127 s,
    24 s of it full collections; 88 s this way, the same peak memory). Frozen objects are
    still freed when nothing refers to them; only cycles among them stay."""
    yield
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def _outgrown_tapes_forgotten():
    """Each test starts as a fresh process would: a gradient whose tape outgrew the cache in
    an earlier test does not make a later test's gradient of the same code checkpoint from
    its first call (adjit.api._OUTGREW)."""
    import adjit.api
    adjit.api._OUTGREW.clear()
    yield


# -- workers: `make test` runs with --dist loadgroup; every test is in its file's group (the
# file's tests run in one process and share its compiled fixtures), but for tests marked
# `spread` (seeded chunks of one long test), which go to whichever worker is free
DURATIONS = _ROOT / "tests" / "durations.json"


def pytest_addoption(parser):
    parser.addoption("--quick", type=float, default=None, metavar="SECONDS",
                     help="run every test file's cheapest tests: per file, by the durations "
                          "in tests/durations.json, the cheapest test and then others while "
                          "the file's total stays under SECONDS (make check)")
    parser.addoption("--record-durations", action="store_true",
                     help="write every test's duration (setup, call, teardown) to "
                          "tests/durations.json at the end of the run")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("spread") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    if getattr(config.option, "loadgroup", False):
        _group_ids(items)
    budget = config.getoption("--quick")
    if budget is None:
        return
    known = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    by_file = {}
    for item in items:
        by_file.setdefault(item.nodeid.split("::")[0], []).append(item)
    keep = set()
    for tests in by_file.values():
        keep |= _cheapest(tests, known, budget)
    drop = [t for t in items if t not in keep]
    config.hook.pytest_deselected(items=drop)
    items[:] = [t for t in items if t in keep]


def _group_ids(items):
    """pytest-xdist's loadgroup sends a group's tests to one worker by the suffix `@group` of
    their node ids, which it writes to `item._nodeid`; pytest 9 keeps a node's id in
    `item._id`, so that write does nothing and every file's tests spread over the workers
    (each then making the file's module fixtures: its compiled programs, the MPI run). The
    suffix is written here where pytest 9 reads it (xdist's own write still works before)."""
    try:
        from _pytest.nodeid import coerce_node_id
    except ImportError:
        return
    for item in items:
        groups = sorted({str(m.args[0]) if m.args else str(m.kwargs.get("name", "default"))
                         for m in item.iter_markers("xdist_group")})
        if groups and "@" not in item.nodeid:
            item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(groups)}")


QUICK_MOST = 20.0   # seconds: a file whose cheapest test costs more has no quick part


def _cheapest(tests, known, budget):
    """A file's tests for --quick: greedily the test that adds least to the file's time (its
    own setup and call, and the setup of the module fixtures it needs that no chosen test has
    paid for yet, estimated as the longest recorded setup among the tests that use it)."""
    def fixtures(t):
        info = getattr(t, "_fixtureinfo", None)
        return frozenset((defs[-1].baseid, name) for name, defs in
                         (info.name2fixturedefs.items() if info else ()) if defs and
                         defs[-1].scope != "function")
    recorded = {t: known.get(_plain(t.nodeid), [0.5, 0.5]) for t in tests}
    shared = {t: fixtures(t) for t in tests}
    fixture_cost = {}
    for t in tests:
        for f in shared[t]:
            fixture_cost[f] = max(fixture_cost.get(f, 0.0), recorded[t][0])
    paid, chosen, total = set(), set(), 0.0
    left = list(tests)
    while left:
        cost = {t: recorded[t][1] + sum(fixture_cost[f] for f in shared[t] - paid)
                + (0.0 if shared[t] else recorded[t][0]) for t in left}
        t = min(left, key=cost.get)
        if total + cost[t] > (budget if chosen else QUICK_MOST):
            break
        chosen.add(t)
        paid |= shared[t]
        total += cost[t]
        left.remove(t)
    return chosen


def _plain(nodeid):
    return nodeid.split("@")[0]


_SPENT = {}


def pytest_runtest_logreport(report):
    """Durations as [setup, call and teardown] per test (tests/durations.json)."""
    spent = _SPENT.setdefault(_plain(report.nodeid), [0.0, 0.0])
    spent[report.when != "setup"] += report.duration


def pytest_sessionfinish(session):
    if session.config.getoption("--record-durations", False) and \
            not hasattr(session.config, "workerinput") and _SPENT:
        DURATIONS.write_text(json.dumps({k: [round(v[0], 2), round(v[1], 2)] for k, v in
                                         sorted(_SPENT.items())}, indent=0) + "\n")

"""cache=True: a second process loads the compiled gradient from numba's on-disk cache
(beside the generated source in $ADJIT_CACHE_DIR) instead of compiling it."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ENERGY = textwrap.dedent("""
    def energy(x, k, steps):
        v = np.zeros_like(x)
        for t in range(steps):
            v -= 0.01 * (k * x + np.sin(x))
            for i in range(x.shape[0]):
                x[i] += 0.01 * v[i]
        return 0.5 * np.sum(v * v) + 0.5 * k * np.sum(x * x)
""")
"""The test scripts' function (written into each script)."""

SCRIPT = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import adjit
""") + ENERGY + textwrap.dedent("""
    g = adjit.value_and_grad(energy, argnums=(0, 1), cache=True)
    x = np.linspace(0.1, 1.0, 7)
    t = time.perf_counter()
    value, (gx, gk) = g(x.copy(), 1.5, 40)
    first = time.perf_counter() - t
    hits = sum(g._called.dispatcher.stats.cache_hits.values())
    print(json.dumps({"value": value, "gx": gx.tolist(), "gk": gk, "hits": hits,
                      "first": first}))
""")


def _run(tmp_path, env):
    path = tmp_path / "script.py"
    path.write_text(SCRIPT)
    out = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _processes(tmp_path, name, script, count, **extra):
    """What `script` printed last (JSON) in each of `count` fresh processes, one after the
    other, at numba's default optimization with a disk cache of this test's (the suite's
    NUMBA_OPT=0 keeps the unused globals of linked helpers, which numba will not cache:
    "uses dynamic globals"); a numba warning that it cannot cache fails the test."""
    env = dict(os.environ, ADJIT_CACHE_DIR=str(tmp_path / "cache"), NUMBA_OPT="3", **extra)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    path = tmp_path / name
    if not path.exists() or path.read_text() != script:
        path.write_text(script)     # (rewritten, numba's cache of its functions is stale)
    runs = []
    for _ in range(count):
        out = subprocess.run([sys.executable, str(path)], env=env, capture_output=True,
                             text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        assert "Cannot cache" not in out.stderr, out.stderr
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return runs


def test_second_process_loads_the_gradient_from_the_disk_cache(tmp_path):
    # at numba's default optimization (the suite's NUMBA_OPT=0 keeps the unused globals of
    # linked helpers, which numba will not cache: "uses dynamic globals")
    env = dict(os.environ, ADJIT_CACHE_DIR=str(tmp_path / "cache"), NUMBA_OPT="3")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    first = _run(tmp_path, env)
    second = _run(tmp_path, env)
    assert first["hits"] == 0 and second["hits"] == 1
    assert second["value"] == first["value"] and second["gx"] == first["gx"] and \
        second["gk"] == first["gk"]
    sources = [p for p in os.listdir(tmp_path / "cache") if p.endswith(".py")]
    assert len(sources) == 1 and sources[0].startswith("_adjit_energy_value_and_grad")


PRANGE = textwrap.dedent("""
    import json
    import numba
    import numpy as np
    import adjit

    def pair_energy(x):
        e = 0.0
        for i in numba.prange(x.shape[0]):
            for j in range(i + 1, x.shape[0]):
                d = x[i] - x[j]
                e += 1.0 / (1.0 + d * d)
        return e

    g = adjit.grad(pair_energy, cache=True)
    gx = g(np.linspace(0.0, 3.0, 9))
    hits = sum(g._called.dispatcher.stats.cache_hits.values())
    print(json.dumps({"gx": gx.tolist(), "hits": hits}))
""")


def test_a_parallel_gradient_is_loaded_from_the_disk_cache_too(tmp_path):
    """The parallel backward sweep asks numba for its thread count in a form numba can
    cache (numba.get_num_threads() would keep the function out of the cache)."""
    runs = _processes(tmp_path, "prange_script.py", PRANGE, 2)
    assert runs[0]["hits"] == 0 and runs[1]["hits"] == 1, runs
    x = np.linspace(0.0, 3.0, 9)
    d = x[:, None] - x[None, :]
    exact = np.sum(-2.0 * d / (1.0 + d * d) ** 2, axis=1)   # d/dx_i of the pair sum
    np.testing.assert_allclose(runs[1]["gx"], exact, rtol=1e-12, atol=1e-14)


DEFAULT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import scipy.special
    import adjit

    W = np.linspace(1.0, 2.0, 5) * float(sys.argv[1])

    def weighted(x):
        return np.sum(W * np.sin(x) ** 2)

    def log_gamma_sum(x):          # scipy.special through a ctypes function: numba will
        s = 0.0                    # not cache code calling one
        for i in range(x.shape[0]):
            s += scipy.special.gammaln(x[i])
        return s

    x = np.linspace(0.5, 1.5, 5)
    g, h = adjit.grad(weighted), adjit.grad(log_gamma_sum)
    gx, hx = g(x), h(x)
    print(json.dumps({"gx": gx.tolist(), "hx": hx.tolist(),
                      "hits": sum(g._called.dispatcher.stats.cache_hits.values()),
                      "h_hits": sum(h._called.dispatcher.stats.cache_hits.values())}))
""")


def test_gradients_are_cached_on_disk_by_default(tmp_path):
    """Without cache=, a second process loads the gradient; a changed global array is
    another key (never stale code); code numba cannot cache compiles without a warning;
    ADJIT_CACHE=0 turns it off."""
    env = dict(os.environ, ADJIT_CACHE_DIR=str(tmp_path / "cache"), NUMBA_OPT="3")
    env.pop("ADJIT_CACHE", None)        # (a benchmark's main, run in this process, sets it)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    path = tmp_path / "default_script.py"
    path.write_text(DEFAULT)

    def run(scale, **extra):
        out = subprocess.run([sys.executable, str(path), str(scale)], env=dict(env, **extra),
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        assert "Cannot cache" not in out.stderr, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    first, second, scaled = run(1.0), run(1.0), run(3.0)
    assert (first["hits"], second["hits"], scaled["hits"]) == (0, 1, 0)
    assert first["h_hits"] == second["h_hits"] == 0
    x = np.linspace(0.5, 1.5, 5)
    exact = np.linspace(1.0, 2.0, 5) * 2.0 * np.sin(x) * np.cos(x)
    np.testing.assert_allclose(second["gx"], exact, rtol=1e-13)
    np.testing.assert_allclose(scaled["gx"], 3.0 * exact, rtol=1e-13)
    from scipy.special import digamma
    np.testing.assert_allclose(second["hx"], digamma(x), rtol=1e-12)
    off = run(1.0, ADJIT_CACHE="0", ADJIT_CACHE_DIR=str(tmp_path / "off"))
    assert off["hits"] == 0 and not os.path.exists(tmp_path / "off")


def test_a_cache_directory_that_cannot_be_written_compiles_silently(tmp_path, monkeypatch):
    from adjit.codegen import emit
    import adjit
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    monkeypatch.setenv("ADJIT_CACHE_DIR", str(blocked / "cache"))
    monkeypatch.setattr(emit, "caching_by_default", lambda: True)

    def f(x):
        return np.sum(x * x * x)
    np.testing.assert_allclose(adjit.grad(f)(np.array([1.0, 2.0])), [3.0, 12.0])
    assert emit.caching_by_default() and blocked.read_text() == ""


WEIGHTS = np.array([1.0, 2.0, 3.0])


def weighted_cubes(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += WEIGHTS[i] * x[i] ** 3
    return s


def test_the_same_gradient_made_again_in_a_process_is_not_compiled_again():
    import adjit
    x = np.array([0.5, -1.0, 2.0])
    first = adjit.grad(weighted_cubes)
    np.testing.assert_allclose(first(x), 3.0 * WEIGHTS * x ** 2, rtol=1e-15)
    again = adjit.grad(weighted_cubes)
    np.testing.assert_allclose(again(x), 3.0 * WEIGHTS * x ** 2, rtol=1e-15)
    assert again._called.dispatcher is first._called.dispatcher


def test_a_global_array_changed_in_place_gives_a_new_compile_not_stale_code():
    # numba reads a global array once, when it compiles: a gradient made after the array
    # changed compiles again and reads the new values (the one made before keeps the old)
    import adjit
    x = np.array([0.5, -1.0, 2.0])
    before = adjit.grad(weighted_cubes)
    np.testing.assert_allclose(before(x), 3.0 * WEIGHTS * x ** 2, rtol=1e-15)
    saved = WEIGHTS.copy()
    try:
        WEIGHTS[:] = [-4.0, 0.5, 7.0]
        after = adjit.grad(weighted_cubes)
        np.testing.assert_allclose(after(x), 3.0 * np.array([-4.0, 0.5, 7.0]) * x ** 2,
                                   rtol=1e-15)
        assert after._called.dispatcher is not before._called.dispatcher
        np.testing.assert_allclose(before(x), 3.0 * saved * x ** 2, rtol=1e-15)
    finally:
        WEIGHTS[:] = saved


def test_a_gradient_made_again_after_the_cache_folder_changed_is_written_there(
        tmp_path, monkeypatch):
    # the in-process memo does not skip the disk cache of a new ADJIT_CACHE_DIR: a later
    # process looking there finds the gradient (the benchmarks give each case its own folder)
    import warnings
    import adjit
    x = np.array([0.5, -1.0, 2.0])
    for folder in ("first", "second"):
        monkeypatch.setenv("ADJIT_CACHE_DIR", str(tmp_path / folder))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # numba at NUMBA_OPT=0 caches no machine code
            g = adjit.grad(weighted_cubes, cache=True)
            np.testing.assert_allclose(g(x), 3.0 * WEIGHTS * x ** 2, rtol=1e-15)
        assert [p.name for p in (tmp_path / folder).glob("_adjit_*.py")], folder


def test_generated_code_shares_numbas_numpy_implementations_with_the_users_code(monkeypatch):
    # numba compiles its numpy functions once per set of compile flags: generated code typed
    # under numba's default flags (lowered with numpy's error model) reuses what the user's
    # @njit forward compiled instead of compiling them again
    import numba
    from numba.core.typing import templates
    import adjit

    @numba.njit
    def forward(a, b):
        x = np.linalg.solve(a, b)
        return np.sum(np.sort(x) * np.cumsum(x)) + np.sqrt(np.sum(b * b))

    a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    b = np.array([1.0, -2.0, 0.5])
    value = forward(a, b)
    built = []
    original = templates._OverloadFunctionTemplate._build_impl

    def recording(self, cache_key, args, kws):
        flags = cache_key[-1] if cache_key else None
        built.append(None if flags is None else flags.error_model)
        return original(self, cache_key, args, kws)

    monkeypatch.setattr(templates._OverloadFunctionTemplate, "_build_impl", recording)
    g = adjit.value_and_grad(forward.py_func, argnums=1, cache=False)
    got, grad = g(a, b)
    assert got == pytest.approx(value, rel=1e-14)
    assert "numpy" not in built, built
    # the derivative of sqrt at 0 is still numpy's inf (times 0: nan), not ZeroDivisionError
    assert np.isnan(adjit.grad(lambda_free_sqrt, cache=False)(np.zeros(2))).all()


def lambda_free_sqrt(b):
    return np.sqrt(np.sum(b * b))


RUNTIME_AT_LEVEL = textwrap.dedent("""
    import json
    import numpy as np
    from adjit.runtime import linalg
    l = np.linalg.cholesky(np.array([[4.0, 1.0], [1.0, 3.0]]))
    linalg.cholesky_a_bar(l, np.tril(np.ones((2, 2))))
    print(json.dumps(sum(linalg.cholesky_a_bar.stats.cache_hits.values())))
""")


def test_the_runtime_cached_at_one_optimization_level_is_not_loaded_at_another(tmp_path):
    # numba's cache key leaves NUMBA_OPT out: the test suite's unoptimized runtime (-O0) was
    # loaded by later processes at -O3 (the Cholesky adjoint 200x slower than compiled)
    path = tmp_path / "runtime.py"
    path.write_text(RUNTIME_AT_LEVEL)

    def hits(level):
        env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), NUMBA_OPT=level)
        out = subprocess.run([sys.executable, str(path)], env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    assert hits("0") == 0           # compiled, written at -O0
    assert hits("3") == 0           # not the -O0 code: compiled again at -O3
    assert hits("3") == 1           # the -O3 code, from the disk
    assert hits("0") == 1


def test_every_runtime_function_cached_on_disk_is_keyed_by_the_optimization_level():
    # each module defining numba functions with cache=True ends with key_by_level(globals());
    # a module that forgets it caches unoptimized code for optimized processes again
    import importlib
    import pkgutil
    import adjit
    from numba.core.caching import FunctionCache
    from numba.core.dispatcher import Dispatcher
    from adjit.runtime.jitcache import LevelCache
    plain, keyed = [], 0
    for info in pkgutil.walk_packages(adjit.__path__, "adjit."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:     # an optional dependency (mpi4py, dask) absent
            continue
        for name, value in vars(module).items():
            if isinstance(value, Dispatcher) and isinstance(value._cache, FunctionCache) and \
                    not isinstance(value._cache, LevelCache):
                plain.append(f"{info.name}.{name}")
            keyed += isinstance(value, Dispatcher) and isinstance(value._cache, LevelCache)
    assert not plain and keyed > 100, (plain, keyed)
    # the benchmarks' modules the suite imports too (their hand-written adjoints were loaded
    # unoptimized by `make bench` after a test run)
    for name in ("cases", "hand", "gmm_bench"):
        module = importlib.import_module(name)
        plain += [f"{name}.{k}" for k, v in vars(module).items()
                  if isinstance(v, Dispatcher) and isinstance(v._cache, FunctionCache) and
                  not isinstance(v._cache, LevelCache)]
    assert not plain, plain


CALLER = textwrap.dedent("""
    import json, sys
    import numba
    import numpy as np
    import adjit
""") + ENERGY + textwrap.dedent("""
    g = adjit.grad(energy, argnums=1)
    limited = adjit.grad(energy, argnums=1, tape_limit=10_000, checkpoint=False)

    @numba.njit(cache=True)
    def descend(x, k, steps, rate):
        for it in range(5):
            k -= rate * g(x.copy(), k, steps)
        return k

    @numba.njit(cache=True)
    def too_long(x, k):
        return limited(x.copy(), k, 2000)

    @numba.njit(cache=True)
    def descend_with(gradf, x, k, steps, rate):
        # the derivative as an argument: compiled again in every process, as numba does
        # for a jitted function passed as an argument
        for it in range(5):
            k -= rate * gradf(x.copy(), k, steps)
        return k

    x = np.linspace(0.1, 1.0, 7)
    k = descend(x, 1.5, 40, 0.1)
    passed = descend_with(g, x, 1.5, 40, 0.1)
    try:
        too_long(x, 1.5)
        raised = ""
    except Exception as exc:
        raised = type(exc).__name__ + ": " + str(exc)
    # the same derivative from Python afterwards, in the same process
    direct = g(x.copy(), 1.5, 40)
    print(json.dumps({"k": k, "passed": passed, "direct": direct, "raised": raised,
                      "hits": sum(descend.stats.cache_hits.values()) +
                      sum(too_long.stats.cache_hits.values())}))
""")


def test_an_njit_cache_true_caller_of_a_derivative_loads_in_a_later_process(tmp_path):
    """numba's cache of an @njit(cache=True) function that calls a derivative holds the
    derivative's environment, which a later process rebuilt by importing the derivative's
    generated module by name, before adjit had made it there: ModuleNotFoundError (a review
    found it). Values, a limit error raised inside the cached code and the same derivative
    called from Python afterwards, in three processes; a cached caller taking the
    derivative as an argument runs in each (its index once held a type numba could not
    pickle: TypeError)."""
    runs = _processes(tmp_path, "caller.py", CALLER, 3, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    assert [r["hits"] for r in runs] == [0, 2, 2]
    assert runs[0]["k"] == runs[1]["k"] == runs[2]["k"]
    assert [r["passed"] for r in runs] == [r["k"] for r in runs]
    assert runs[0]["direct"] == runs[1]["direct"] == runs[2]["direct"]
    for r in runs:
        assert r["raised"].startswith("TapeLimitError") or "tape_limit" in r["raised"], r
    # the derivative against central differences
    x = np.linspace(0.1, 1.0, 7)
    ns = {"np": np}
    exec(ENERGY, ns)     # noqa: S102 - the script's function
    h = 1e-6
    fd = (ns["energy"](x.copy(), 1.5 + h, 40) - ns["energy"](x.copy(), 1.5 - h, 40)) / (2 * h)
    assert runs[0]["direct"] == pytest.approx(fd, rel=1e-6)


MEMORY = textwrap.dedent("""
    import json, os
    pages = int(os.environ.get("FAKE_PAGES", "0"))
    if pages:       # a machine with less memory (the same cache folders)
        real = os.sysconf
        os.sysconf = lambda key: pages if key == "SC_PHYS_PAGES" else real(key)
    import numpy as np
    import adjit
    from adjit.runtime.tape import DEFAULT_TAPE_LIMIT

    def chain(x):
        s = 0.0
        for i in range(x.shape[0]):
            s = np.sin(s + x[i])
        return s

    g = adjit.grad(chain, cache=True, checkpoint=False)
    x = np.linspace(0.0, 1.0, 100_000)
    try:
        gx = g(x)
        raised, tape = "", g.last_tape.tape_bytes
    except adjit.AdjitError as exc:
        raised, tape = type(exc).__name__, 0
    print(json.dumps({"limit": DEFAULT_TAPE_LIMIT, "raised": raised, "tape": tape,
                      "hits": sum(g._called.dispatcher.stats.cache_hits.values())}))
""")


def test_a_gradient_cached_on_a_machine_of_another_memory_size_is_not_loaded(tmp_path):
    """The default tape limit (half the machine's memory) is compiled into a gradient's
    machine code, and tape_room, which reads it, is cached on disk: a cache folder shared by
    machines of different sizes (a cluster's home directory) served the first machine's
    limit to the others (a 512 kB machine recorded an 800 kB tape a larger one had cached).
    Both caches are keyed by the limit."""
    import subprocess as sp
    env = dict(os.environ, ADJIT_CACHE_DIR=str(tmp_path / "cache"), NUMBA_OPT="3",
               NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    path = tmp_path / "memory.py"
    path.write_text(MEMORY)

    def run(pages):
        out = sp.run([sys.executable, str(path)], env=dict(env, FAKE_PAGES=str(pages)),
                     capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    large, small, small_again, large_again = run(0), run(128), run(128), run(0)
    assert small["limit"] < 800_000 < large["limit"]
    assert large["raised"] == "" and large["tape"] >= 800_000 and large["hits"] == 0
    # compiled again with the small machine's limit: the 800 kB tape is refused
    assert small["raised"] == "TapeLimitError" and small_again["raised"] == "TapeLimitError"
    assert large_again["raised"] == "" and large_again["hits"] == 1


RUNTIME_ONCE = textwrap.dedent("""
    import json, time
    import numpy as np
    from numba.core import event
    import adjit

    def logsumexp_rows(x, w):
        # a loop that sums as it goes in blocks (vec.sum_slots), a buffer kept for every
        # iteration of an inner loop (vec.empty_as), a time loop checkpointed (snapshots)
        n, d = x.shape
        buf = np.empty(d)
        total = 0.0
        for i in range(n):
            for j in range(d):
                buf[j] = w[j] * x[i, j]
            s = 0.0
            for j in range(d):
                s += np.exp(buf[j])
            total += np.log(s)
        u = w.copy()
        for t in range(50):
            for j in range(d):
                u[j] = 0.9 * u[j] + 0.1 * np.sin(u[j])
        return total + np.sum(u * u)

    compiled = []

    class Listener(event.Listener):
        def on_start(self, ev):
            pass

        def on_end(self, ev):
            f = ev.data["dispatcher"].py_func
            compiled.append(f"{f.__module__}.{f.__qualname__}")

    x = np.random.default_rng(0).normal(size=(30, 4))
    w = np.linspace(0.5, 1.0, 4)
    g = adjit.grad(logsumexp_rows, argnums=(0, 1), checkpoint=5)
    with event.install_listener("numba:compile", Listener()):
        gx, gw = g(x, w)
    print(json.dumps({"compiled": compiled, "gw": gw.tolist(), "source": g.source}))
""")


def test_a_gradients_first_call_compiles_none_of_adjits_runtime_in_a_later_process(
        tmp_path):
    """adjit's runtime is compiled once per machine (numba's disk cache): a later process's
    first call compiles the gradient's own function and none of adjit's functions (the tape's
    room, the block sums' overload, allocations of an array's dtype were compiled in every
    process: 50-110 ms each of every first call). stop_gradient's overload, which CUDA
    device code shares, is left out."""
    runs = _processes(tmp_path, "runtime_once.py", RUNTIME_ONCE, 2, ADJIT_CACHE="0",
                      NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    source = runs[0]["source"]
    assert "vec.sum_slots(" in source and "vec.empty_as(" in source and "ckpt." in source
    later = [name for name in runs[1]["compiled"] if name.startswith("adjit.")]
    assert later == [], later
    assert runs[0]["gw"] == runs[1]["gw"]


LONG_NAME = textwrap.dedent("""
    import json
    import numba
    import adjit

    @numba.njit(cache=True)
    def convex_rational_cubic_control_parameter_to_fit_second_derivative_at_left_side(x, flag):
        return x * x if flag else x

    def {long}(x):
        return x * x * x

    v, g = adjit.value_and_grad(
        convex_rational_cubic_control_parameter_to_fit_second_derivative_at_left_side)(1.5, True)
    v2, g2 = adjit.value_and_grad({long})(1.5)
    print(json.dumps({{"v": v, "g": g, "v2": v2, "g2": g2}}))
""").format(long="f" + "_very_long" * 20)


def test_functions_with_long_names_are_cached_or_compiled(tmp_path):
    """numba names its cache's index file after the generated module and the function: an
    80-character function name took it past the file system's 255 bytes (an internal error
    from py_lets_be_rational's convex_rational_cubic_control_parameter_to_fit_second_
    derivative_at_left_side). Such names are cached under a shortened module name; a name
    too long even so (over 160 characters) is compiled in every process."""
    env = dict(os.environ, ADJIT_CACHE_DIR=str(tmp_path / "cache"), NUMBA_OPT="3")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    path = tmp_path / "long_names.py"
    path.write_text(LONG_NAME)
    out = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"v": 2.25, "g": 3.0, "v2": 3.375, "g2": 6.75}
    cached = [p.name for p in (tmp_path / "cache").glob("_adjit_*.py")]
    assert len(cached) == 1 and cached[0].startswith("_adjit_convex_rational_cubic_control_"), \
        cached
    assert max(len(p.name) for p in (tmp_path / "cache").rglob("*")) <= 255


PRICING = textwrap.dedent("""
    import math
    import numba

    @numba.njit
    def ncdf(x):
        return 0.5 * math.erfc(-x / math.sqrt(2.0))

    def strangle(s, k1, k2, v):
        d1 = (math.log(s / k1) + 0.5 * v * v) / v
        e1 = (math.log(s / k2) + 0.5 * v * v) / v
        return (s * ncdf(d1) - k1 * ncdf(d1 - v)) + (k2 * ncdf(v - e1) - s * ncdf(-e1))
""")

TWO_NAMES = textwrap.dedent("""
    import importlib, json, sys
    import adjit
    from adjit import outline
    outline.OUTLINE_PROGRAM, outline.OUTLINE_SIZE = 10, 10    # (ncdf called as itself)
    module = importlib.import_module(sys.argv[1])
    g = adjit.grad(module.strangle, argnums=(0, 3), cache=True)
    ds, dv = g(100.0, 95.0, 105.0, 0.25)
    assert "ncdf_outlined_cotangents(" in g.source
    hits = sum(g._called.dispatcher.stats.cache_hits.values())
    print(json.dumps({"ds": ds, "dv": dv, "hits": hits}))
""")


def test_the_same_code_under_two_module_names_is_cached_apart(tmp_path):
    # (one file copied to another name, or a script run as __main__ and imported: numba's
    # cached code of a helper called as itself names the module it comes from, which the
    # other process never imported)
    for name in ("pricing_a", "pricing_b"):
        (tmp_path / f"{name}.py").write_text(PRICING)
    script = tmp_path / "two_names.py"
    script.write_text(TWO_NAMES)
    env = dict(os.environ, ADJIT_CACHE_DIR=str(tmp_path / "cache"), NUMBA_OPT="3",
               NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root, str(tmp_path), env.get("PYTHONPATH", "")])
    runs = []
    for name in ("pricing_a", "pricing_b", "pricing_b"):
        out = subprocess.run([sys.executable, str(script), name], env=env,
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert [r["hits"] for r in runs] == [0, 0, 1]
    assert runs[0]["ds"] == runs[1]["ds"] == runs[2]["ds"]
    assert runs[0]["dv"] == runs[1]["dv"] == runs[2]["dv"]

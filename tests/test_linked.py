"""Runtime functions called through their machine code (runtime/linked.py): a gradient's
module declares the checkpoint schedule, the tape's growth and the block sums instead of
holding (and optimizing again) a copy of each; its cached machine code, and that of an
@njit(cache=True) caller, loads in later processes."""
import inspect
import textwrap

import numba
import numpy as np
import pytest

import adjit
from adjit.errors import AdjitError
from adjit.runtime import checkpoint, linked, sums

from test_cache import _processes
from programs import heat


def _central(f, x, h=1e-6):
    out = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out


def test_a_checkpointed_gradient_declares_the_runtime_instead_of_holding_it():
    g = adjit.grad(heat, argnums=(0, 1), checkpoint="auto", cache=False)
    u0 = np.linspace(0.0, 1.0, 12) ** 2
    gu, ga = g(u0, 0.25, 50)
    llvm = g._called.dispatcher.inspect_llvm()
    (text,) = llvm.values()
    for name in ("checkpoint.start", "checkpoint.next_action", "sums.copy_dot"):
        symbol = f"adjit.{linked.runtime_digest()}.adjit.runtime.{name}."
        assert 'declare ' in text and symbol in text, name
    # no copy of the schedule's functions or the sums' (numba mangles the module path)
    defined = [line for line in text.splitlines() if line.startswith("define ")]
    assert defined and not [line for line in defined
                            if "10checkpoint" in line or "4sums" in line or "4tape" in line]
    assert gu == pytest.approx(_central(lambda u: heat(u, 0.25, 50), u0), rel=1e-6,
                               abs=1e-9)
    h = 1e-6
    assert ga == pytest.approx((heat(u0, 0.25 + h, 50) - heat(u0, 0.25 - h, 50)) / (2 * h),
                               rel=1e-6)
    # the same gradient recorded: the schedule changes nothing but the memory
    gr = adjit.grad(heat, argnums=(0, 1), checkpoint=False, cache=False)(u0, 0.25, 50)
    assert np.array_equal(gr[0], gu) and gr[1] == ga


def test_a_linked_function_is_the_dispatcher_from_python_and_refuses_stale_code():
    start = linked.calls(checkpoint).start
    assert np.array_equal(start(20, 3, 2), checkpoint.start(20, 3, 2))
    assert linked.calls(checkpoint).STEP == checkpoint.STEP
    assert linked.linked(len) is len        # not a dispatcher (NUMBA_DISABLE_JIT): as it is
    tys = (numba.types.int64,) * 3
    current = linked._Symbol("adjit.runtime.checkpoint", "slots", tys, linked.runtime_digest())
    current()                               # defines the name: compiled or loaded
    assert current in linked._DEFINED
    stale = linked._Symbol("adjit.runtime.checkpoint", "slots", tys, "0" * 16)
    with pytest.raises(AdjitError, match="another adjit version"):
        stale()


def test_runtime_calls_raise_their_errors_through_the_declared_call():
    """A tape limit error raised inside reserve_tape (machine code of its own module)
    reaches the caller as numba raises it from linked code."""
    g = adjit.grad(heat, argnums=(0, 1), checkpoint=False, tape_limit=20_000, cache=False)
    with pytest.raises(AdjitError, match="tape_limit"):
        g(np.linspace(0.0, 1.0, 64), 0.25, 200)


def test_a_linked_call_from_njit_code_and_from_python_agree():
    dot = linked.linked(sums.copy_dot)

    @numba.njit
    def twice(dst, src, b):
        return dot(dst, src, 0, b, 0, src.shape[0]) + 1.0

    src, b = np.arange(5.0), np.linspace(1.0, 2.0, 5)
    dst = np.zeros(5)
    assert twice(dst, src, b) == pytest.approx(float(src @ b) + 1.0)
    assert np.array_equal(dst, src)


LATER = textwrap.dedent("""
    import json, os
    import numba
    import numpy as np
    import adjit
    if os.environ.get("FAKE_DIGEST"):       # another version of adjit's runtime
        from adjit.runtime import linked
        linked._DIGEST.append(os.environ["FAKE_DIGEST"])

""") + inspect.getsource(heat) + textwrap.dedent("""
    g = adjit.grad(heat, argnums=1, checkpoint="auto")

    @numba.njit(cache=True)
    def fit(u0, alpha, steps):
        for it in range(3):
            alpha -= 1e-3 * g(u0, alpha, steps)
        return alpha

    u0 = np.linspace(0.0, 1.0, 16) ** 2
    mode = os.environ.get("LATER_MODE", "")
    out = {"hits": 0}
    if mode != "caller-only":
        out["direct"] = g(u0, 0.2, 30)
        out["hits"] = sum(g._called.dispatcher.stats.cache_hits.values())
    try:
        out["fit"] = fit(u0, 0.2, 30)
    except adjit.AdjitError as exc:
        out["fit"] = str(exc)
    out["fit_hits"] = sum(fit.stats.cache_hits.values())
    print(json.dumps(out))
""")


def test_cached_gradients_and_cached_callers_load_in_later_processes(tmp_path):
    """Process 1 compiles the checkpointed gradient and an @njit(cache=True) caller; process
    2 loads both. Then the caller's cache alone is removed: process 3 loads the gradient and
    compiles the caller again, which must carry the names the gradient calls (a library
    numba loaded does not), so that process 4, calling only the caller, loads it (a name
    left undefined there would end the process inside LLVM: the names a library numba loaded
    ran in its reload_init are kept with it, linked._rebuild_keeping_names)."""
    numba_dir = tmp_path / "numba"
    runs = _processes(tmp_path, "later.py", LATER, 2, NUMBA_CACHE_DIR=str(numba_dir))
    assert [r["hits"] for r in runs] == [0, 1] and [r["fit_hits"] for r in runs] == [0, 1]
    assert runs[0]["direct"] == runs[1]["direct"] and runs[0]["fit"] == runs[1]["fit"]
    removed = [f for f in numba_dir.rglob("later.fit-*")]
    assert removed
    for f in removed:
        f.unlink()
    (third,) = _processes(tmp_path, "later.py", LATER, 1, NUMBA_CACHE_DIR=str(numba_dir))
    assert (third["hits"], third["fit_hits"]) == (1, 0) and third["fit"] == runs[0]["fit"]
    (fourth,) = _processes(tmp_path, "later.py", LATER, 1, NUMBA_CACHE_DIR=str(numba_dir),
                           LATER_MODE="caller-only")
    assert fourth["fit_hits"] == 1 and fourth["fit"] == runs[0]["fit"]
    # the derivative against central differences
    u0 = np.linspace(0.0, 1.0, 16) ** 2
    h = 1e-6
    fd = (heat(u0, 0.2 + h, 30) - heat(u0, 0.2 - h, 30)) / (2 * h)
    assert runs[0]["direct"] == pytest.approx(fd, rel=1e-6)


def test_a_cached_caller_compiled_against_another_runtime_refuses_to_load(tmp_path):
    """An @njit(cache=True) caller compiled with another version of adjit's runtime (faked:
    another digest) calls names this runtime does not define: loading it raises AdjitError
    saying what to do, instead of running it against other functions or ending the
    process in LLVM."""
    numba_dir = tmp_path / "numba"
    (old,) = _processes(tmp_path, "later.py", LATER, 1, NUMBA_CACHE_DIR=str(numba_dir),
                        FAKE_DIGEST="f" * 16, LATER_MODE="caller-only")
    assert isinstance(old["fit"], float)
    (new,) = _processes(tmp_path, "later.py", LATER, 1, NUMBA_CACHE_DIR=str(numba_dir),
                        LATER_MODE="caller-only")
    assert "another adjit version" in new["fit"] and "__pycache__" in new["fit"], new


CHAIN = textwrap.dedent("""
    import json, os
    import numba
    import numpy as np
    import adjit

""") + inspect.getsource(heat) + textwrap.dedent("""
    g = adjit.grad(heat, argnums=1, checkpoint="auto")

    @numba.njit(cache=True)
    def slope(u0, alpha, steps):
        return g(u0, alpha, steps)

    @numba.njit(cache=True)
    def shifted(u0, alpha, steps):
        return slope(u0, alpha, steps) + 1.0

    u0 = np.linspace(0.0, 1.0, 16) ** 2
    if os.environ["CHAIN"] == "slope":
        value = slope(u0, 0.2, 30)
    else:
        value = shifted(u0, 0.2, 30)
    print(json.dumps({"value": value, "slope": sum(slope.stats.cache_hits.values()),
                      "shifted": sum(shifted.stats.cache_hits.values())}))
""")


def test_a_cached_caller_of_a_cached_caller_of_a_gradient_loads_in_a_later_process(tmp_path):
    """Process 1 caches `slope` (which calls a gradient); process 2 loads it and compiles
    `shifted`, which calls it; process 3 loads `shifted` alone. numba's library of a
    loaded function started without the names its code calls, so `shifted` was cached
    without them and process 3 crashed (a review found it; linked._rebuild_keeping_names)."""
    numba_dir = str(tmp_path / "numba")
    (first,) = _processes(tmp_path, "chain.py", CHAIN, 1, NUMBA_CACHE_DIR=numba_dir,
                          CHAIN="slope")
    second, third = _processes(tmp_path, "chain.py", CHAIN, 2, NUMBA_CACHE_DIR=numba_dir,
                               CHAIN="shifted")
    assert (second["slope"], second["shifted"]) == (1, 0)
    assert (third["slope"], third["shifted"]) == (0, 1)
    assert second["value"] == third["value"] == first["value"] + 1.0
    u0 = np.linspace(0.0, 1.0, 16) ** 2
    h = 1e-6
    fd = (heat(u0, 0.2 + h, 30) - heat(u0, 0.2 - h, 30)) / (2 * h)
    assert first["value"] == pytest.approx(fd, rel=1e-6)

"""adjit.sparsity against the program fuzzer: the pattern read from a drawn program must hold
every nonzero of its true gradient (and of its Hessian) at several points. A missed entry
would be a silently wrong sparse Jacobian; extra entries are allowed.

For each drawn program (tests/fuzz/grammar.py; they return one number) and each float
parameter k: `adjit.sparsity(f, argnums=k)(*args)` must be a (1, args[k].size) pattern that
holds every entry of the gradient that is clearly nonzero - the fuzzer's reference AD
(tests/fuzz/refad.py, exact, with stop_gradient as adjit reads it), nonzero beyond the
rounding scale it reports (`gabs`) - at the program's own arguments and at 3 random points
(the float arguments drawn again, layouts kept; integers as they are). For a subset of the
programs the Hessian pattern (hessian=True) must hold every entry of central differences of
the reference gradient that is clearly nonzero and consistent between two steps. Programs of
grammar.FD_GROUPS (which refad cannot run) are judged by central differences of the program.

A clean refusal (AdjitError) by sparsity is counted by its message; one of a program that
adjit's gradient refuses too is a discard; anything else sparsity raises is a bug.

`check_sparsity(program)` is the check of one program; a campaign outside pytest imports it.
"""
import collections
import contextlib
import math
import re
import signal
import threading
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hseed

import adjit
from adjit import AdjitError

from fuzz import grammar, refad
from fuzz.check import REAL_NAMESPACE, copy_arg, load
from fuzz.grammar import programs

PROGRAMS = 40           # distinct programs drawn (deterministic: a fixed hypothesis seed)
SEED = 20261201
POINTS = 3              # random points besides the program's own arguments
HESSIAN_EVERY = 1       # the Hessian pattern of every program without stop_gradient

NZ_REL = 1e-9           # a reference partial is "clearly nonzero" above NZ_REL * its gabs
NZ_FLOOR = 1e-13        # ... plus NZ_FLOOR * the largest gabs (rounding of a cancellation)
FD_NZ = 1e-6            # differences: nonzero above FD_NZ * (1 + scale)
FD_AGREE = 1e-3         # differences at h and h/2 agree to this (no branch flip in the step)
MAX_VALUE = 1e6
MAX_SCALE = 1e8


# -- drawing ---------------------------------------------------------------------------------
def draw_programs(n, seed, only=()):
    """n distinct programs from hypothesis, the same ones for the same (n, seed). `only`:
    construct groups of grammar.GROUPS to draw (taken out of grammar.AVOID while drawing)."""
    drawn, seen = [], set()
    removed = set(only) & grammar.AVOID
    grammar.AVOID.difference_update(removed)

    class Enough(BaseException):
        pass

    def one(program):
        if len(drawn) >= n:
            raise Enough
        if program.source not in seen:
            seen.add(program.source)
            drawn.append(program)
    try:
        for round_ in range(20):
            if len(drawn) >= n:
                break
            run = settings(max_examples=(n - len(drawn)) * 2 + 10, database=None,
                           deadline=None, phases=[Phase.generate],
                           suppress_health_check=list(HealthCheck),
                           verbosity=Verbosity.quiet)(
                hseed(seed * 100 + round_)(given(programs())(one)))
            try:
                run()
            except Enough:
                break
    finally:
        grammar.AVOID.update(removed)
    return drawn


# -- points ----------------------------------------------------------------------------------
def _copy(args):
    return [copy_arg(a) for a in args]


def other_point(program, args, rng):
    """The arguments with every float parameter drawn again (in the same layout and dtype;
    the argument forms' domains kept); integers and index arrays as they are."""
    out = _copy(args)
    for k in program.float_params():
        kind = program.params[k][1]
        base = kind.split("/")[0]
        if base.startswith("form:"):
            fresh = grammar._form_arg(base[5:], rng)
        else:
            fresh = rng.uniform(-1.5, 1.5, np.shape(args[k]))
        if isinstance(out[k], np.ndarray):
            out[k][...] = fresh
        else:
            out[k] = float(fresh)
    return out


def _value(f, args):
    """f(*args) as a float, or None where it raises, is not finite or too large."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            v = f(*_copy(args))
        except Exception:   # noqa: BLE001 - the program's own failure: no point
            return None
    if np.ndim(v) != 0 or not np.isfinite(v) or abs(v) > MAX_VALUE:
        return None
    return float(v)


def _uses_refad(program):
    return not (set(program.groups) & set(grammar.FD_GROUPS))


def reference(program, args):
    """(gradient per parameter: arrays / floats or None, nonzero masks per float parameter)
    at `args`, or None where the point is not usable (raises, singular, ill-conditioned)."""
    floats = program.float_params()
    if _uses_refad(program):
        try:
            r = refad.value_and_grad(load(program.source, refad.NAMESPACE), _copy(args))
        except (ValueError, ZeroDivisionError, OverflowError, FloatingPointError):
            return None
        grads = [r.grads[k] for k in floats]
        gabs = [r.gabs[k] for k in floats]
        if r.singular or not all(np.all(np.isfinite(g)) for g in grads + gabs):
            return None
        top = max(float(np.max(g)) for g in gabs)
        if top > MAX_SCALE:
            return None
        masks = {}
        for k, g, s in zip(floats, grads, gabs):
            g, s = np.reshape(np.asarray(g, float), -1), np.reshape(np.asarray(s, float), -1)
            masks[k] = np.abs(g) > NZ_REL * s + NZ_FLOOR * top
        return {k: np.reshape(np.asarray(r.grads[k], float), -1) for k in floats}, masks
    f = load(program.source, REAL_NAMESPACE)
    grads, masks = {}, {}
    for k in floats:
        d, ok = differences(f, args, k)
        grads[k] = d
        masks[k] = ok & (np.abs(d) > FD_NZ * (1.0 + np.max(np.abs(d))))
    return grads, masks


def differences(fn, args, k, h_scale=1e-6):
    """Central differences of the number fn(*args) in every entry of args[k], at steps h
    and h/2: (d, consistent mask); an entry whose evaluations fail is inconsistent."""
    x = args[k]
    size = int(np.size(x))
    d = np.zeros(size)
    ok = np.zeros(size, bool)
    for i in range(size):
        idx = np.unravel_index(i, np.shape(x)) if np.ndim(x) else ()
        x0 = float(x[idx]) if np.ndim(x) else float(x)
        h = h_scale * (1.0 + abs(x0))

        def at(delta):
            a = _copy(args)
            if isinstance(a[k], np.ndarray):
                a[k][idx] += delta
            else:
                a[k] += delta
            v = _value(fn, a)
            return math.nan if v is None else v
        d1 = (at(h) - at(-h)) / (2 * h)
        d2 = (at(h / 2) - at(-h / 2)) / h
        d[i] = d1
        ok[i] = bool(math.isfinite(d1) and math.isfinite(d2) and
                     abs(d1 - d2) <= FD_AGREE * (1e-6 + abs(d1)))
    return d, ok


def _grad_fn(program, k):
    """x -> the reference gradient in args[k] (flat), at arguments where args[k] = x."""
    if _uses_refad(program):
        def g(args):
            try:
                r = refad.value_and_grad(load(program.source, refad.NAMESPACE), _copy(args))
            except (ValueError, ZeroDivisionError, OverflowError, FloatingPointError):
                return None
            if r.singular:
                return None
            return np.reshape(np.asarray(r.grads[k], float), -1)
        return g
    f = load(program.source, REAL_NAMESPACE)

    def g(args):
        d, ok = differences(f, args, k, 1e-5)
        return d if ok.all() else None
    return g


def hessian_nonzeros(program, args, k):
    """The entries (i, j) of the Hessian in args[k] that central differences of the
    reference gradient show clearly nonzero (consistent at two steps): a boolean matrix."""
    g = _grad_fn(program, k)
    x = args[k]
    size = int(np.size(x))
    H = np.zeros((size, size))
    ok = np.zeros((size, size), bool)
    steps = (1e-4, 5e-5) if _uses_refad(program) else (1e-3, 5e-4)
    for i in range(size):
        idx = np.unravel_index(i, np.shape(x)) if np.ndim(x) else ()
        x0 = float(x[idx]) if np.ndim(x) else float(x)
        cols = []
        for s in steps:
            h = s * (1.0 + abs(x0))
            pair = []
            for delta in (h, -h):
                a = _copy(args)
                if isinstance(a[k], np.ndarray):
                    a[k][idx] += delta
                else:
                    a[k] += delta
                pair.append(g(a))
            if pair[0] is None or pair[1] is None:
                break
            cols.append((pair[0] - pair[1]) / (2 * h))
        if len(cols) < 2:
            continue
        H[i], ok[i] = cols[0], np.abs(cols[0] - cols[1]) <= FD_AGREE * (1e-6 + np.abs(cols[0]))
    scale = 1.0 + np.max(np.abs(H[ok])) if ok.any() else 1.0
    tol = (1e-5 if _uses_refad(program) else 1e-2) * scale
    return ok & (np.abs(H) > tol), H


# -- the check -------------------------------------------------------------------------------
class Result:
    """status: "ok", "discard" (reason), "refused" (sparsity's AdjitError: reason the
    message's first sentence), "bug" (reason, detail)."""

    def __init__(self, status, reason="", detail="", checked=0, hessians=0):
        self.status, self.reason, self.detail = status, reason, detail
        self.checked, self.hessians = checked, hessians

    def __repr__(self):
        return f"Result({self.status}, {self.reason!r})"


def refusal_key(message):
    line = str(message).strip().split("\n", 1)[0]
    line = line.split("): ", 1)[-1]
    line = re.sub(r"\(line \d+\)", "", line)
    return re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'_'", line.split(". ", 1)[0])).strip()


def _adjit_refuses(f, k, args):
    """Whether adjit's own gradient in argument k refuses (or fails on) the program."""
    import numba
    from adjit.api import _Mode
    from adjit.transform import build
    from fuzz.check import _with_defaults
    types = tuple(numba.typeof(a) for a in _with_defaults(f, args))
    try:
        build(f, (k,), types, _Mode("value_and_grad", with_value=True, single=False),
              jit=False)
    except Exception:   # noqa: BLE001 - adjit refuses or crashes: not sparsity's business
        return True
    return False


def _pattern(f, k, args, hessian):
    """(the pattern as a dense boolean array, None) or (None, Result)."""
    try:
        P = adjit.sparsity(f, argnums=k, hessian=hessian)(*_copy(args))
    except AdjitError as exc:
        if _adjit_refuses(f, k, args):
            return None, Result("discard", "adjit's gradient refuses the program")
        return None, Result("refused", refusal_key(exc), str(exc))
    except Exception as exc:   # noqa: BLE001 - a crash of the pattern detection: a bug
        import traceback
        return None, Result("bug", f"sparsity raised {type(exc).__name__}",
                            f"argnums={k} hessian={hessian}: {type(exc).__name__}: {exc}\n"
                            + traceback.format_exc(limit=-4))
    n = int(np.size(args[k]))
    want = (n, n) if hessian else (1, n)
    if tuple(P.shape) != want or P.dtype != bool:
        return None, Result("bug", "pattern of the wrong shape or dtype",
                            f"argnums={k} hessian={hessian}: {P.shape} {P.dtype}, want {want}")
    return P.toarray(), None


def check_sparsity(program, points=POINTS, hessian=False, rng_seed=0):
    """Check adjit.sparsity on one program (module docstring): a Result."""
    args = program.args()
    f = load(program.source, REAL_NAMESPACE)
    if _value(f, args) is None:
        return Result("discard", "the program fails at its arguments")
    rng = np.random.default_rng([program.seed, rng_seed])
    pts = [args] + [other_point(program, args, rng) for _ in range(points)]
    refs = []
    for p in pts:
        if _value(f, p) is None:
            continue
        r = reference(program, p)
        if r is not None:
            refs.append((p, r))
    if not refs:
        return Result("discard", "no usable point")
    header = f"program (seed {program.seed}, params {program.params!r}):\n{program.source}"
    checked = hessians = 0
    for k in program.float_params():
        P, bad = _pattern(f, k, args, False)
        if bad is not None:
            if bad.status == "bug":
                bad.detail = f"{header}\n{bad.detail}"
            return bad
        for p, (grads, masks) in refs:
            miss = masks[k] & ~P[0]
            if miss.any():
                return Result("bug", "missed entry", (
                    f"{header}\nargnums={k} ({program.params[k][0]}), at "
                    f"{[np.asarray(a).tolist() for a in p]}\n"
                    f"pattern  {np.flatnonzero(P[0]).tolist()}\n"
                    f"gradient {grads[k].tolist()}\nmissed   {np.flatnonzero(miss).tolist()}"))
            checked += 1
        if not hessian or "stop_gradient" in program.source:
            # adjit's Hessian gives stop_gradient's value no tangent either, while the
            # differences of the reference gradient see the value move: no reference there
            continue
        H, bad = _pattern(f, k, args, True)
        if bad is not None:
            if bad.status == "bug":
                bad.detail = f"{header}\n{bad.detail}"
                return bad
            continue            # a refused Hessian: the Jacobian was checked
        if not (H == H.T).all():
            return Result("bug", "Hessian pattern not symmetric",
                          f"{header}\nargnums={k}\n{H.astype(int)}")
        for p, _ in refs[:2]:
            nz, vals = hessian_nonzeros(program, p, k)
            miss = nz & ~H
            if miss.any():
                return Result("bug", "missed Hessian entry", (
                    f"{header}\nargnums={k} ({program.params[k][0]}), at "
                    f"{[np.asarray(a).tolist() for a in p]}\n"
                    f"pattern\n{H.astype(int)}\ndifferences\n{np.round(vals, 6)}\n"
                    f"missed {np.argwhere(miss).tolist()}"))
            hessians += 1
    return Result("ok", checked=checked, hessians=hessians)


def run_programs(progs, hessian_every=HESSIAN_EVERY, points=POINTS):
    """Check each program: (Counter of statuses, Counter of refusal reasons, bugs)."""
    counts, refusals, discards, bugs = (collections.Counter(), collections.Counter(),
                                        collections.Counter(), [])
    for i, program in enumerate(progs):
        res = check_sparsity(program, points=points,
                             hessian=hessian_every > 0 and i % hessian_every == 0)
        counts[res.status] += 1
        counts["points checked"] += res.checked
        counts["Hessian points checked"] += res.hessians
        if res.status == "refused":
            refusals[res.reason] += 1
        elif res.status == "discard":
            discards[res.reason] += 1
        elif res.status == "bug":
            bugs.append((program, res))
    return counts, refusals, discards, bugs


# -- the tests -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def drawn():
    return draw_programs(PROGRAMS, SEED)


def test_drawn_programs_are_distinct_and_fixed(drawn):
    assert len(drawn) == PROGRAMS
    assert len({p.source for p in drawn}) == PROGRAMS


def test_sparsity_holds_every_nonzero_of_drawn_programs(drawn):
    """Every clearly nonzero entry of the reference gradient (and, for programs without
    stop_gradient, of
    the Hessian by differences of the reference gradient) at the program's arguments and
    at 3 random points lies in adjit.sparsity's pattern; sparsity raises nothing but
    AdjitError (counted as refusals, printed with -s)."""
    counts, refusals, discards, bugs = run_programs(drawn)
    print(f"\nsparsity fuzz: {dict(counts)}\nrefused: {dict(refusals)}\n"
          f"discarded: {dict(discards)}")
    assert counts["ok"] >= PROGRAMS // 2, (counts, refusals, discards)
    assert not bugs, "\n\n".join(f"{r.reason}\n{r.detail}" for _, r in bugs)


def test_the_check_catches_a_missed_entry():
    """A pattern that leaves out an entry the gradient has is reported: the check itself
    can fail (the pattern is replaced by one that drops the last input)."""
    program = grammar.Program(
        "def f(x, y):\n    s = 0.0\n    for i in range(x.shape[0]):\n"
        "        s = s + x[i] * x[i] * y\n    return s\n",
        (("x", "array1"), ("y", "float")), 3)
    assert check_sparsity(program, points=1, hessian=True).status == "ok"
    real = adjit.sparsity

    def dropping(fn, argnums=0, hessian=False):
        inner = real(fn, argnums=argnums, hessian=hessian)

        def call(*args):
            P = inner(*args).tolil()
            P[:, P.shape[1] - 1] = False
            return P.tocsr()
        return call
    adjit.sparsity = dropping
    try:
        res = check_sparsity(program, points=1)
    finally:
        adjit.sparsity = real
    assert res.status == "bug" and res.reason == "missed entry", res


# -- what the campaigns found (tests/test_patterns_fuzz.py's check, 2,000 default programs and
# 200 of each construct group), reduced by hand to user programs ----------------------------------
def early_return_then_branch(x, y):
    """The rewrite's own names (_c2, the test of its second `if`) are the normalized
    program's names too: the `_c2 = <x[0] > 0>` of the inner branch overwrites the outer
    test, so the join after it is skipped and y's `return y` is lost (pattern [[False]],
    gradient 1)."""
    if y > 0.0:
        return y
    if x[0] > 0.0:
        y = 2.0
    return 1.0


def array_temporary_in_branch(x):
    """The normalized program's array `_a1` (np.array([...])) is the rewrite's `_a1` (the
    values a branch leaves): AttributeError '_Undefined' object has no attribute 'get'."""
    if x[0] > 1.0:
        s = np.sum(np.array([x[1], 2.0]))     # noqa: F841 - as drawn
    return x[2]


def while_after_shapes(x, y):
    """The rewrite's `_n1 = -1` (a while loop's count of changes) overwrites the normalized
    program's `_n1` (a shape), so a2[1, -2] reads index -3: IndexError."""
    v1 = np.sum(x[::2])                    # noqa: F841 - as drawn
    a2 = np.full((2, 2), y)
    k3 = 0
    while k3 < 3:
        k3 += 1
        v4 = 1.5                           # noqa: F841 - as drawn
    return a2[1, -2] * 3.0


def store_at_counter_in_while(x, y):
    """A while loop on float data that stores at its counter: once the counter is unknown,
    every store reaches the whole array and counts as a change whether or not an element
    grew, so the loop never reaches its fixed point (10,000,000 abstract iterations)."""
    a = np.ones(4)
    k = 0
    while k < 1 and x[0] > y:
        k += 1
        a[k] = 2.0
    return y


def arange_span(x):
    """np.arange(x0, x0 + 2, 0.5) has 4 elements whatever x0 is; the stand-ins of the
    shape probe give start and stop the same value (0.75, then 1.25), so it is taken for
    an empty array on both tries: pattern [[False, False]], gradient [4, 0]."""
    return np.sum(np.arange(x[0], x[0] + 2.0, 0.5))


FOUND = [
    # (function, args, argnums, entries (row, column) the pattern must hold)
    (early_return_then_branch, (np.array([1.0, 2.0]), 0.5), 1, [(0, 0)]),
    (array_temporary_in_branch, (np.array([2.0, 0.5, 0.3, 0.1]),), 0, [(0, 2)]),
    (while_after_shapes, (np.array([2.0, 0.5, 0.3, 0.1]), 0.3), 1, [(0, 0)]),
    (store_at_counter_in_while, (np.array([1.0, 2.0, 3.0, 4.0]), 0.5), 1, [(0, 0)]),
    (arange_span, (np.array([0.3, 2.0]),), 0, [(0, 0)]),
]


class _TooLong(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds):
    """Raise _TooLong after `seconds` (where SIGALRM is available, in the main thread)."""
    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not \
            threading.main_thread():
        yield
        return

    def ring(*_):
        raise _TooLong(f"no pattern after {seconds} s")
    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("fn, args, argnums, must", FOUND, ids=[c[0].__name__ for c in FOUND])
def test_found_programs(fn, args, argnums, must):
    """Each program the fuzz campaigns found, reduced: sparsity gives a pattern (in 10 s)
    that holds the entries its gradient has at these arguments (the reference gradient's
    nonzeros, checked here too), or refuses with an AdjitError only where the construct is
    one it may refuse (arange with bounds from float data)."""
    g = np.reshape(np.asarray(adjit_free_gradient(fn, args, argnums)), -1)
    assert all(g[c] != 0.0 for _, c in must), g
    try:
        with _deadline(10):
            P = adjit.sparsity(fn, argnums=argnums)(*args).toarray()
    except AdjitError:
        if fn is arange_span:
            return
        raise
    missed = [rc for rc in must if not P[rc]]
    assert not missed, f"pattern {P.astype(int).tolist()} misses {missed}"


def adjit_free_gradient(fn, args, argnums):
    """Central differences of fn in args[argnums] (smooth at the FOUND arguments)."""
    x = np.atleast_1d(np.asarray(args[argnums], float))
    out = np.zeros(x.size)
    for i in range(x.size):
        h = 1e-6 * (1.0 + abs(x.flat[i]))
        vals = []
        for d in (h, -h):
            xx = x.copy()
            xx.flat[i] += d
            a = list(args)
            a[argnums] = xx.reshape(np.shape(args[argnums])) if np.ndim(args[argnums]) \
                else float(xx[0])
            vals.append(float(fn(*a)))
        out[i] = (vals[0] - vals[1]) / (2 * h)
    return out

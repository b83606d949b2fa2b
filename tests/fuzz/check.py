"""Check one generated program: adjit against the reference AD and finite differences.

`check(program, jit)` returns an Outcome:
- "discard": the program is not a fair test at its arguments (it raised, hit NaN/inf, or is
  ill-conditioned: |value| > 1e6 or a gradient scale > 1e8). Decided from the program and its
  seed alone, so the same program is always discarded.
- "mismatch": adjit disagrees with the reference AD, refused a valid program, raised while
  running its generated code, or mutated an argument; or the reference disagrees with finite
  differences at a smooth point (a bug in the oracle or the fuzzer).
- "ok".

Programs that draw a construct group of grammar.GROUPS (`program.groups`, only with
`--only`/`--all-constructs`) are judged the same way, except that a clean refusal
(AdjitError) is a discard whose reason, "adjit refused: <message>", the campaign counts per
group; an adjit.errors.InternalError (an unexpected exception inside adjit, or numba
failing to compile the generated code) is a crash. Float32 arguments (group "float32") are compared with float32 tolerances:
the program runs in float32 in numpy, the reference in float64 on the same (exact) values,
and the gradient must come back float32.

Programs of the groups refad cannot run (grammar.FD_GROUPS: random draws in a program that
seeds itself, the numpy functions of adjit's argument forms) are judged by central finite
differences of the program itself instead (`_check_by_differences`): the program must give
the same value twice (it seeds its generator); the interpreted runs are compared with
differences of the program in Python (numpy's generator) and its value, the numba runs with
differences of the program compiled by numba (numba's generator) and its value. An entry is
compared only where differences at two steps agree and so do its two one-sided ones (no
branch flip or kink within the step), to FD_TOL; a program with no such entry is discarded.

adjit runs for every non-empty argnums subset of the float parameters. Those runs execute the
generated source in the Python interpreter (`transform.build(..., jit=False)`): the code numba
would compile, at a fortieth of the cost. With `jit=True` the public API also compiles
`value_and_grad` (all float parameters) and `grad` (one int argnums) with numba and checks
those too.
"""
import ast
import cmath
import copy
import ctypes
import hashlib
import inspect
import itertools
import linecache
import math
import re
import warnings

import numba
from numba.extending import get_cython_function_address
import numpy as np

import adjit
from adjit import AdjitError
from adjit.api import _Mode
from adjit.errors import InternalError
from adjit.transform import build

from . import grammar, refad

GRAD_TOL = 1e-10      # |adjit - reference| <= GRAD_TOL * gabs, gabs the |partial| gradient
# plus a floor of GRAD_FLOOR times the largest |partial| of any argument: where the
# reference's arithmetic makes an intermediate exactly 0 (np.linspace(-1, 1, 3) summed), its
# gabs there is 0, while numba's (BLAS with fused multiply-adds) leaves a rounding residue
GRAD_FLOOR = 1e-14
VALUE_TOL = 1e-12     # relative, for the value
# float32 arguments: float32 rounding (eps 1.2e-7) in the program's forward values moves
# every partial; relative to the |partial| scale, plus a floor of the largest scale
F32_GRAD_TOL = 1e-3
F32_VALUE_TOL = 1e-4
F32_TINY = float(np.finfo(np.float32).tiny)
MAX_VALUE = 1e6
MAX_SCALE = 1e8
FD_AGREE = 1e-5       # FD vs reference, relative to 1 + |gradient|, where FD is consistent

REAL_NAMESPACE = {"math": math, "cmath": cmath, "np": np, "numba": numba, "ctypes": ctypes,
                  "get_cython_function_address": get_cython_function_address,
                  "stop_gradient": adjit.stop_gradient}
_ALL_SUBSETS = "all"
# refusals of valid programs that are known adjit bugs (grammar.AVOID names them): such a
# program is discarded, not reported, while its name is in grammar.AVOID
KNOWN_REFUSALS = {}     # none at present ("alloc in loop" was one: fixed)
# adjit's refusal of an argument that reaches the result only through conditions a loop
# decides (the program is a step function of it): right where the reference's gradient for
# that argument is exactly zero, a finding where it is not
DECIDED_REFUSAL = re.compile(r"the result depends on the argument '(\w+)' only through "
                             r"conditions")
# adjit's refusal of checkpoint=<int> for a loop that draws (_checkpoint_check)
ONCE_REFUSAL = "checkpointing a loop that makes a call which must run once"
# programs judged by finite differences (grammar.FD_GROUPS): a gradient entry disagrees when
# |adjit - d| > FD_TOL * (1 + |d|), d the central difference (where it is consistent)
FD_TOL = 1e-5
FD_CONSISTENT = 1e-6    # |d(h) - d(h/2)| <= FD_CONSISTENT * (1 + |d|): no flip in the step
FD_KINK = 1e-3          # |forward - backward difference| <= FD_KINK * (1 + |d|): no kink
_PY_MODE = _Mode("value_and_grad", with_value=True, single=False)


class Outcome:
    def __init__(self, status, reason="", detail="", err=0.0, fd="none", argnums=None,
                 numba=False):
        self.status = status
        self.argnums = argnums  # the failing run's argnums, and whether numba compiled it
        self.numba = numba
        self.reason = reason
        self.detail = detail
        self.err = err          # largest |adjit - reference| / the tolerance's scale
        self.fd = fd            # "checked", "skipped" (kinks, stop_gradient, inconsistent)

    @property
    def signature(self):
        """What a reduced program must still show: the reason, and for a refusal or crash
        the message without names, numbers and location."""
        if not self.reason.startswith("adjit"):
            return self.reason
        message = self.detail.rsplit("\n", 1)[-1].rsplit("): ", 1)[-1]
        message = re.sub(r"'[^']*'|\d+", "", message.split(". ", 1)[0])
        return f"{self.reason}: {message}"

    def __repr__(self):
        return f"Outcome({self.status}, {self.reason!r})"


def load(source, namespace):
    """Exec program source as a module (readable by inspect); returns its function `f`."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    filename = f"<fuzz-{digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    ns = dict(namespace)
    with warnings.catch_warnings():     # a reduction candidate may index a tuple literal
        warnings.simplefilter("ignore", SyntaxWarning)
        code = compile(source, filename, "exec")
    exec(code, ns)  # noqa: S102
    for obj in ns.values():
        if type(obj).__name__ == "StencilFunc":
            _compile_once_per_types(obj)
    return ns["f"]


def _compile_once_per_types(stencil):
    """numba's StencilFunc, called from Python, types its kernel and compiles a new wrapper at
    every call (StencilFunc.__call__): the finite differences call a program hundreds of
    times, a quarter of a second each. The stencil keeps what it compiled per argument types
    (calls with `out=` compile as before)."""
    typed, compiled = {}, {}
    get_return_type, wrapper = stencil.get_return_type, stencil._stencil_wrapper

    def get_return_type_once(argtys):
        if argtys not in typed:
            typed[argtys] = get_return_type(argtys)
        return typed[argtys]

    def wrapper_once(result, sigret, return_type, typemap, calltypes, *args):
        if result is not None:
            return wrapper(result, sigret, return_type, typemap, calltypes, *args)
        key = (sigret, return_type, args)
        if key not in compiled:
            compiled[key] = wrapper(result, sigret, return_type, typemap, calltypes, *args)
        return compiled[key]

    stencil.get_return_type = get_return_type_once
    stencil._stencil_wrapper = wrapper_once


def copy_arg(a, dtype=None):
    """A copy of an argument (in `dtype` if given) with the same memory layout (C order,
    Fortran order, or the same strides in elements, negative ones included), so that numba
    types it the same and numpy decides view or copy (a reshape) for it as for the original."""
    if not isinstance(a, np.ndarray):
        return a
    dtype = np.dtype(dtype or a.dtype)
    if a.flags.c_contiguous:
        return a.astype(dtype, order="C", copy=True)
    if a.flags.f_contiguous:
        return a.astype(dtype, order="F", copy=True)
    steps = [t // a.itemsize for t in a.strides]
    low = sum(min(0, t * (n - 1)) for t, n in zip(steps, a.shape))
    span = sum(abs(t) * (n - 1) for t, n in zip(steps, a.shape)) + 1
    buf = np.zeros(span, dtype=dtype)
    out = np.lib.stride_tricks.as_strided(buf[-low:], a.shape,
                                          [t * dtype.itemsize for t in steps])
    out[...] = a
    return out


def _copy(args):
    return [copy_arg(a) for a in args]


def _is_f32(a):
    return isinstance(a, np.ndarray) and a.dtype == np.float32


def _moved_by_f32_rounding(source, args, ref, p, where, bound, seed, ulps=2, tries=3):
    """Whether the reference's partials in argument p, where adjit's differ by more than
    `bound`, move by more than `bound` themselves when the float32 arrays are moved a few
    roundings (ulps, random signs): a program whose gradient float32's rounding moves that
    far (cos of an intermediate in the thousands) is ill-conditioned in float32, and the
    generated code, rounding where numba rounds, is compared with a reference that does not
    round. adjit's gradient of such a program equals the float32 program's own derivative
    (the reduced fuzz_8e882d7658, worked out by hand: 9119.382 both)."""
    rng = np.random.default_rng(seed)
    fn = load(source, refad.NAMESPACE)
    for _try in range(tries):
        moved = []
        for a in args:
            if _is_f32(a):
                b = a.copy()
                for _step in range(ulps):
                    b = np.nextafter(b, np.where(rng.random(b.shape) < 0.5, -np.inf, np.inf)
                                     .astype(np.float32))
                a = b
            moved.append(copy_arg(a))
        try:
            other = refad.value_and_grad(fn, moved)
        except (ValueError, ZeroDivisionError, OverflowError):
            return True
        shift = np.abs(np.asarray(other.grads[p], dtype=float) - ref.grads[p])
        if np.any(np.broadcast_to(shift > bound, np.shape(where))[where]):
            return True
    return False


def _crash_kind(exc):
    """What an InternalError wraps: the original exception's class (as a raw exception
    inside adjit was reported before adjit wrapped them), or numba's failure to compile."""
    if exc.__cause__ is not None:
        return type(exc.__cause__).__name__
    return "numba could not compile" if "(an adjit bug" in str(exc) else "InternalError"


def refusal_key(message):
    """A refusal's message without its location, names and numbers: its first sentence."""
    line = message.strip().split("\n", 1)[0]
    line = line.split("): ", 1)[-1]
    return re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'_'", line.split(". ", 1)[0])).strip()


def _mutated(args, before):
    """The first argument whose contents differ from `before` beyond rounding: values the
    program writes into an argument go through numpy's vectorized functions there and
    through math's in the generated code, which may differ in the last bit. Where any
    argument is float32, values written into a float64 argument may come from float32 data:
    numpy (NEP 50) keeps `x32 + 0.25` in float32 while numba and the generated code widen
    it to float64, so they are compared to float32's precision too."""
    f32 = any(_is_f32(b) for b in before)
    for k, (a, b) in enumerate(zip(args, before)):
        if isinstance(a, np.ndarray):
            tol = F32_VALUE_TOL if f32 else VALUE_TOL    # float32 roundings differ
            if a.shape != b.shape or not np.all(np.isclose(a, b, rtol=tol, atol=tol,
                                                           equal_nan=True)):
                return k
        elif a != b:
            return k
    return None


def _value_close(value, primal, tol=VALUE_TOL):
    return abs(value - primal) <= tol * (1.0 + abs(primal))


def _finite(*values):
    return all(v is None or np.all(np.isfinite(v)) for v in values)


def check(program, jit=False, fd=True, subsets=_ALL_SUBSETS, oracle_only=False):
    """The outcome of one program (module docstring). With oracle_only, adjit does not run:
    only the program, the reference and finite differences (a test of the oracle)."""
    if set(getattr(program, "groups", ())) & set(grammar.FD_GROUPS):
        return _check_by_differences(program, jit, subsets, oracle_only)
    args = program.args()
    source = program.source
    header = f"program (seed {program.seed}):\n{source}"
    f = load(source, REAL_NAMESPACE)
    after = _copy(args)         # the arguments as the program itself leaves them
    with np.errstate(all="ignore"):
        try:
            primal = f(*after)
        except Exception as exc:   # noqa: BLE001 - any failure of the program itself
            return Outcome("discard", f"program raised {type(exc).__name__}")
    if not _finite(primal) or abs(primal) > MAX_VALUE:
        return Outcome("discard", "value not finite or too large")
    try:
        ref = refad.value_and_grad(load(source, refad.NAMESPACE), _copy(args))
    except (ValueError, ZeroDivisionError, OverflowError) as exc:
        return Outcome("discard", f"reference raised {type(exc).__name__}")
    if not _finite(ref.value, *ref.grads, *ref.gabs):
        return Outcome("discard", "reference gradient not finite")
    if ref.singular:
        # a partial is inf or NaN (atan2(0, 0), sqrt at 0): a reverse sweep multiplies it by
        # a zero adjoint where the path was not taken, and IEEE says 0 * inf is NaN
        return Outcome("discard", "singular point (a partial derivative is inf or NaN)")
    if max(float(np.max(g)) for g in ref.gabs if g is not None) > MAX_SCALE:
        return Outcome("discard", "ill-conditioned (gradient scale > 1e8)")
    f32 = any(_is_f32(a) for a in args)
    value_tol = F32_VALUE_TOL if f32 else VALUE_TOL
    if not _value_close(ref.value, primal, value_tol):
        if f32:     # float32 rounding in numpy moved the value (or a branch) too far
            return Outcome("discard", "float32 value too far from the float64 reference")
        return Outcome("mismatch", "reference value differs from the program's",
                       f"{header}\nprogram {primal!r}, reference {ref.value!r}")
    groups = tuple(getattr(program, "groups", ()))

    worst = 0.0
    floats = program.float_params()
    if oracle_only:
        subsets, jit = [], False
    if subsets == _ALL_SUBSETS:
        subsets = [c for r in range(1, len(floats) + 1)
                   for c in itertools.combinations(floats, r)]
    types = tuple(numba.typeof(a) for a in _with_defaults(f, args))
    runs = []
    for argnums in subsets:
        runs.append((f"argnums={argnums} (python)", argnums, False,
                     lambda a=argnums: _binding(f, build(f, a, types, _PY_MODE,
                                                         jit=False).pyfunc),
                     lambda a=argnums: _binding(f, build(f, a, types, _PY_MODE).pyfunc)))
    if jit:
        runs.append((f"value_and_grad argnums={floats} (numba)", floats, True,
                     lambda: adjit.value_and_grad(f, argnums=floats), None))
        one = floats[program.seed % len(floats)]
        runs.append((f"grad argnums={one} (numba)", (one,), True,
                     lambda: _single(adjit.grad(f, argnums=one)), None))
    zero = {program.params[p][0] for p in floats if not np.any(ref.grads[p])}
    for label, argnums, numba_run, make, compiled in runs:
        where = {"argnums": argnums, "numba": numba_run}
        bad, grads = _run_adjit(program, label, where, make, args, after, primal, value_tol,
                                header, groups, compiled, zero)
        if bad is not None:
            return bad
        if grads is None:
            continue        # rightly refused: the result is a step function of an argument
        for p, gp in zip(argnums, grads):
            want, scale = ref.grads[p], ref.gabs[p]
            shape = np.shape(gp)
            dtype = getattr(gp, "dtype", np.dtype(type(gp)))
            if shape != np.shape(want) or dtype.kind != "f" or \
                    _is_f32(args[p]) and dtype != np.float32:
                return Outcome("mismatch", "gradient has the wrong shape or type",
                               f"{header}\n{label}: d/d{program.params[p][0]} is "
                               f"{type(gp).__name__} {dtype} of shape {shape}, want "
                               f"{np.shape(want)}{' float32' if _is_f32(args[p]) else ''}",
                               **where)
            diff = np.abs(np.asarray(gp, dtype=float) - want)
            bound = GRAD_TOL * scale + GRAD_FLOOR * max(
                float(np.max(g)) for g in ref.gabs if g is not None)
            if f32:
                # plus float32's smallest normal number: a partial below it underflows
                # where the program's float32 data carries it (a float64 reference keeps it)
                bound = F32_GRAD_TOL * (scale + 1e-3 * max(
                    float(np.max(g)) for g in ref.gabs if g is not None)) + F32_TINY
            if not np.all(diff <= bound) and f32 and \
                    _moved_by_f32_rounding(source, args, ref, p, diff > bound, bound,
                                           program.seed):
                return Outcome("discard", "ill-conditioned in float32 (the reference's "
                                          "gradient moves as far at inputs a few roundings "
                                          "away)")
            if not np.all(diff <= bound):
                return Outcome("mismatch", "gradient differs",
                               f"{header}\n{label}: d/d{program.params[p][0]}\n"
                               f"adjit     {_fmt(gp)}\nreference {_fmt(want)}\n"
                               f"scale     {_fmt(scale)}", **where)
            # the error against the scale the tolerance uses (float32: with its floors, so
            # that a partial that underflows to 0 does not read as an error of 100 %)
            denom = bound / (F32_GRAD_TOL if f32 else GRAD_TOL)
            ratio = np.where(denom > 0, diff / np.where(denom > 0, denom, 1.0), 0.0)
            worst = max(worst, float(np.max(ratio)))

    if _top_level_for(source) and not oracle_only:
        bad = _checkpoint_check(f, floats, types, args, after, header, zero)
        if bad is not None:
            return bad

    fd_status = "skipped"
    if fd and ref.kinks == 0 and "stop_gradient" not in source:
        # float32 arguments: differences of the program in float64 at the same values (the
        # reference's arithmetic), a check on the reference, as for the others
        fd_args = [copy_arg(a, np.float64) if _is_f32(a) else a for a in args]
        fd_status, bad = _fd_check(f, fd_args, ref, floats)
        if bad:
            return Outcome("mismatch", "reference disagrees with finite differences",
                           f"{header}\n{bad}", worst, fd_status)
    return Outcome("ok", err=worst, fd=fd_status)


def _run_adjit(program, label, where, make, args, after, primal, value_tol, header, groups,
               compiled=None, zero=()):
    """Make one gradient (make()) and call it on copies of the arguments: (a failing
    Outcome or None, its gradients; None, None for the refusal of a parameter in `zero`, whose
    reference gradient is exactly zero, as one the result depends on only through
    conditions: DECIDED_REFUSAL). A refusal is a discard in a construct-group program;
    the value must be the program's (`primal`), the arguments left as `after`. `compiled`
    makes the same gradient compiled by numba: where the interpreted one divides a float by
    zero (Python raises; numba's generated code gives inf or NaN, as numpy does, which a zero
    adjoint or an untaken branch may then drop), that one is judged instead."""
    argnums = where["argnums"]

    def refused(exc):
        """The outcome of adjit's refusal (when it builds the gradient: at make() or, for
        adjit.grad and value_and_grad, which build on their first call, at that call)."""
        decided = DECIDED_REFUSAL.search(str(exc))
        if decided and decided.group(1) in zero:
            return None, None
        for name, message in KNOWN_REFUSALS.items():
            if name in grammar.AVOID and message in str(exc):
                return Outcome("discard", f"known adjit bug ({name})"), None
        if "(an adjit bug" in str(exc):
            return Outcome("mismatch", "adjit crashed (numba could not compile)",
                           f"{header}\n{label}: {exc}", **where), None
        if groups:
            return Outcome("discard", f"adjit refused: {refusal_key(str(exc))}",
                           f"{header}\n{label}: {exc}", **where), None
        return Outcome("mismatch", "adjit refused a valid program",
                       f"{header}\n{label}: {exc}", **where), None

    try:
        g = make()
    except InternalError as exc:    # a bug inside adjit: never a refusal
        return Outcome("mismatch", f"adjit crashed ({_crash_kind(exc)})",
                       f"{header}\n{label}: {exc}", **where), None
    except AdjitError as exc:
        return refused(exc)
    except Exception as exc:   # noqa: BLE001 - a crash inside adjit is a finding
        return Outcome("mismatch", f"adjit crashed ({type(exc).__name__})",
                       f"{header}\n{label}: {type(exc).__name__}: {exc}", **where), None
    inputs = _copy(args)
    with np.errstate(all="ignore"):
        try:
            value, grads = g(*inputs)
        except InternalError as exc:
            return Outcome("mismatch", f"adjit crashed ({_crash_kind(exc)})",
                           f"{header}\n{label}: {exc}", **where), None
        except AdjitError as exc:       # (refused where the first call builds it)
            return refused(exc)
        except ZeroDivisionError as exc:
            if not where["numba"] and compiled is not None and \
                    str(exc) == "float division by zero":
                return _run_adjit(program, f"{label}, compiled (interpreted, it divided a "
                                  "float by zero)", dict(where, numba=True), compiled, args,
                                  after, primal, value_tol, header, groups, zero=zero)
            if where["numba"] or "negative power" not in str(exc):
                return Outcome("mismatch", "generated code raised",
                               f"{header}\n{label}: {type(exc).__name__}: {exc}",
                               **where), None
            # 0.0 ** -0.5 in an adjoint (sqrt at 0): numba's power gives inf there, Python's
            # float power raises; the point is singular, as the reference path discards
            return Outcome("discard", "singular point (0.0 to a negative power in an "
                                      "adjoint, interpreted)"), None
        except ValueError as exc:
            if where["numba"] or str(exc) != "math domain error":
                return Outcome("mismatch", "generated code raised",
                               f"{header}\n{label}: {type(exc).__name__}: {exc}",
                               **where), None
            # np.sqrt of a negative number (written math.sqrt per element): NaN in numpy and
            # in numba, ValueError in Python's math; interpreted, the point is one where the
            # program computes NaN (--seed 15: sqrt(1 + a b) of two arrays of other draws)
            return Outcome("discard", "NaN point (a math function outside its domain, "
                                      "interpreted)"), None
        except Exception as exc:   # noqa: BLE001 - generated code must not raise
            return Outcome("mismatch", "generated code raised",
                           f"{header}\n{label}: {type(exc).__name__}: {exc}", **where), None
    k = _mutated(inputs, after)
    if k is not None:
        return Outcome("mismatch", "argument mutated",
                       f"{header}\n{label}: argument {program.params[k][0]} differs "
                       f"from what the program itself leaves in it", **where), None
    if value is not None and np.ndim(value) != 0:
        return Outcome("mismatch", "value has the wrong shape",
                       f"{header}\n{label}: adjit {value!r}, program {primal!r}",
                       **where), None
    if value is not None and not _value_close(value, primal, value_tol):
        return Outcome("mismatch", "value differs",
                       f"{header}\n{label}: adjit {value!r}, program {primal!r}",
                       **where), None
    if len(grads) != len(argnums):
        return Outcome("mismatch", "wrong number of gradients",
                       f"{header}\n{label}: {len(grads)} for argnums {argnums}", **where), None
    return None, grads



def load_numba(source):
    """The program compiled by numba: f and its helpers njit-compiled in a module namespace
    of their own (module-level arrays are numba's constants there); compiled at its first
    call."""
    f = load(source, REAL_NAMESPACE)
    ns = f.__globals__
    for name, obj in list(ns.items()):
        if inspect.isfunction(obj) and obj.__code__.co_filename == f.__code__.co_filename:
            ns[name] = numba.njit(obj)
    return ns["f"]


def _evaluate(fn, args):
    """fn(*args) as a float, or the reason to discard the program."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = fn(*args)
        except Exception as exc:   # noqa: BLE001 - any failure of the program itself
            return None, f"raised {type(exc).__name__}"
    if np.ndim(value) != 0 or not _finite(value) or abs(value) > MAX_VALUE:
        return None, "value not finite or too large"
    return float(value), None


def _value_at(fn, args, k, idx, delta):
    """fn at a copy of args with entry idx of argument k (a number: k itself) moved by
    delta; NaN where the evaluation raises or is not finite."""
    a = _copy(args)
    if isinstance(a[k], np.ndarray):
        a[k][idx] += delta
    else:
        a[k] += delta
    value, _ = _evaluate(fn, a)
    return math.nan if value is None else value


def _differences(fn, args, floats, base):
    """Central differences of fn at args for every entry of the float arguments, at steps h
    and h/2, and the one-sided ones at h/2 (base = fn(*args)): {k: (d, d_half, consistent)}.
    An entry is consistent where the central ones agree (no branch flip within the step)
    and the one-sided ones do (no kink: a tie of max or abs at 0, where differences give
    the mean of the two sides and adjit one side); an evaluation that raises or is not
    finite makes it inconsistent."""
    def at(k, idx, delta):
        return _value_at(fn, args, k, idx, delta)

    out = {}
    for k in floats:
        shape = np.shape(args[k])
        d, d_half, ok = np.zeros(shape), np.zeros(shape), np.zeros(shape, dtype=bool)
        for idx in np.ndindex(shape):
            x0 = args[k][idx] if shape else args[k]
            h = 1e-6 * (1.0 + abs(float(x0)))
            up, down = at(k, idx, h), at(k, idx, -h)
            up2, down2 = at(k, idx, h / 2), at(k, idx, -h / 2)
            d1, d2 = (up - down) / (2 * h), (up2 - down2) / h
            forward, backward = (up2 - base) / (h / 2), (base - down2) / (h / 2)
            d[idx], d_half[idx] = d1, d2
            ok[idx] = bool(abs(d1 - d2) <= FD_CONSISTENT * (1.0 + abs(d1)) and
                           abs(forward - backward) <= FD_KINK * (1.0 + abs(d1)))
        out[k] = (d, d_half, ok)
    return out


def _fd_subsets(floats):
    """The argnums of the interpreted runs: every subset of up to 4 float parameters, else
    each alone and all of them (a forms program has up to 10)."""
    if len(floats) <= 4:
        return [c for r in range(1, len(floats) + 1)
                for c in itertools.combinations(floats, r)]
    return [(k,) for k in floats] + [floats]


def _check_by_differences(program, jit, subsets, oracle_only):
    """A program of grammar.FD_GROUPS (draws, the numpy functions of adjit's FORMS): refad
    cannot run it, so its oracle is central differences of the program itself, which seeds
    its own generator (every evaluation draws the same numbers). The interpreted runs are
    judged against differences of the program in Python (numpy's generator), their values
    against its value; the numba runs against differences of the program compiled by numba
    (numba's generator, which may draw other numbers for the same seed) and its value.
    Differences that disagree between two steps, or whose two sides disagree, are skipped
    (a branch flip or kink within the step); a program with none consistent is discarded."""
    args = program.args()
    source = program.source
    header = f"program (seed {program.seed}):\n{source}"
    groups = tuple(program.groups)
    floats = program.float_params()
    f = load(source, REAL_NAMESPACE)
    after = _copy(args)         # the arguments as the program itself leaves them
    primal, why = _evaluate(f, after)
    if why is not None:
        return Outcome("discard", f"program {why}" if why[0] == "r" else why)
    again, _ = _evaluate(f, _copy(args))
    if again != primal:
        return Outcome("mismatch", "the program draws differently each run",
                       f"{header}\nvalues {primal!r} and {again!r}")
    diffs = _differences(f, args, floats, primal)
    bad = _unusable(diffs)
    if bad is not None:
        return bad
    if oracle_only:
        return Outcome("ok", fd="checked")
    if subsets == _ALL_SUBSETS:
        subsets = _fd_subsets(floats)
    types = tuple(numba.typeof(a) for a in _with_defaults(f, args))
    for argnums in subsets:
        where = {"argnums": argnums, "numba": False}
        label = f"argnums={argnums} (python)"
        bad, grads = _run_adjit(
            program, label, where,
            lambda a=argnums: _binding(f, build(f, a, types, _PY_MODE, jit=False).pyfunc),
            args, after, primal, VALUE_TOL, header, groups,
            compiled=lambda a=argnums: _binding(f, build(f, a, types, _PY_MODE).pyfunc))
        if bad is None:
            bad = _judge_by_differences(program, label, where, grads, args, diffs, header,
                                        f)
        if bad is not None:
            return bad
    if jit:
        bad = _numba_runs(program, f, floats, args, header, groups)
        if bad is not None:
            return bad
    if _top_level_for(source):
        bad = _checkpoint_check(f, floats, types, args, after, header)
        if bad is not None:
            return bad
    return Outcome("ok", fd="checked")


def _unusable(diffs):
    """A discard where no difference is consistent, or they are too large to compare."""
    ok = [d[o] for d, _, o in diffs.values() if np.any(o)]
    if not ok:
        return Outcome("discard", "finite differences inconsistent everywhere (a branch "
                                  "flip or kink within the step)")
    if max(float(np.max(np.abs(d))) for d in ok) > MAX_SCALE:
        return Outcome("discard", "ill-conditioned (differences > 1e8)")
    return None


def _nested_def_and_draws(source):
    """Whether a function with a nested def or a lambda also draws random numbers. numba
    inlines the closure with a pass that ends in its dead-code elimination, which treats
    every np.random call but seed and shuffle as free of effects (numba/core/ir_utils.py,
    remove_dead_random_call): a draw whose value is unused is dropped, so the draws after it
    differ from the program's (found by the fuzzer, seed 19; with a lambda, seed 23). adjit
    refuses a draw whose value is unused there (normalize/check.py check_dead_draws); one
    used only by dead code it still makes, so numba's compile is no oracle for these
    programs: they are judged in the interpreter, where adjit draws what the program draws."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and any(
                isinstance(n, (ast.FunctionDef, ast.Lambda)) for n in ast.walk(node)
                if n is not node):
            if "np.random." in ast.unparse(node):
                return True
    return False


def _numba_runs(program, f, floats, args, header, groups):
    """value_and_grad (every float parameter) and grad (one) compiled by numba, against the
    program compiled by numba: its value, its arguments, its differences."""
    if any(isinstance(node, ast.FunctionDef) and node.args.kwonlyargs
           for node in ast.walk(ast.parse(program.source))):
        # numba binds keyword-only parameters wrongly (numba issue 5903: a call gets a
        # default instead of the argument given, or does not compile): its compile is no
        # oracle for such a program (adjit refuses numba dispatchers with them), which is
        # judged in the interpreter only
        return None
    if _nested_def_and_draws(program.source):
        return None
    nf = load_numba(program.source)
    nafter = _copy(args)
    nprimal, why = _evaluate(nf, nafter)
    if why is not None:
        return Outcome("discard", f"the program compiled by numba {why}")
    again, _ = _evaluate(nf, _copy(args))
    if again != nprimal:
        return Outcome("mismatch", "the program draws differently each run",
                       f"{header}\nnumba's values {nprimal!r} and {again!r}")
    diffs = _differences(nf, args, floats, nprimal)
    if _unusable(diffs) is not None:
        return None         # (judged in the interpreter only)
    one = floats[program.seed % len(floats)]
    runs = [(f"value_and_grad argnums={floats} (numba)", floats,
             lambda: adjit.value_and_grad(f, argnums=floats)),
            (f"grad argnums={one} (numba)", (one,),
             lambda: _single(adjit.grad(f, argnums=one)))]
    for label, argnums, make in runs:
        where = {"argnums": argnums, "numba": True}
        bad, grads = _run_adjit(program, label, where, make, args, nafter, nprimal,
                                VALUE_TOL, header, groups)
        if bad is None:
            bad = _judge_by_differences(program, label, where, grads, args, diffs, header,
                                        nf)
        if bad is not None:
            return bad
    return None


def _judge_by_differences(program, label, where, grads, args, diffs, header, fn):
    """Each gradient against the consistent differences (FD_TOL); an entry that differs is
    looked at again with wider steps (_resolved_wider) before it is called a mismatch."""
    for p, gp in zip(where["argnums"], grads):
        d, d_half, ok = diffs[p]
        name = program.params[p][0]
        shape = np.shape(gp)
        dtype = getattr(gp, "dtype", np.dtype(type(gp)))
        if shape != np.shape(args[p]) or dtype.kind != "f":
            return Outcome("mismatch", "gradient has the wrong shape or type",
                           f"{header}\n{label}: d/d{name} is {type(gp).__name__} {dtype} of "
                           f"shape {shape}, want {np.shape(args[p])}", **where)
        g = np.asarray(gp, dtype=float)
        if not np.all(np.isfinite(g[ok])):
            # a partial that is inf or NaN times a zero adjoint (atan2(0, 0)): refad's
            # singular points, which differences cannot tell
            return Outcome("discard", "singular point (the gradient is inf or NaN where "
                                      "finite differences are finite)")
        off = np.array(ok & ~(np.abs(g - d) <= FD_TOL * (1.0 + np.abs(d))))
        for idx in zip(*np.nonzero(off)) if off.ndim else [()] if off else []:
            off[idx] = not _resolved_wider(fn, args, p, idx, float(g[idx]))
        if np.any(off):
            return Outcome("mismatch", "gradient differs from finite differences",
                           f"{header}\n{label}: d/d{name}\nadjit       {_fmt(g)}\n"
                           f"differences {_fmt(d)}\nhalf step   {_fmt(d_half)}\n"
                           f"compared    {[bool(o) for o in np.ravel(ok)]}", **where)
    return None

def _resolved_wider(fn, args, k, idx, want):
    """Whether central differences at a wider step, consistent with the step half as wide,
    give the gradient `want`. Differences at the usual step see nothing of a derivative that
    a larger intermediate drowns: in `-(z + y)` with y near 3e8, a change of z by 1e-11 is
    below y's last bit, so the differences in z are exactly 0 while the derivative is -1
    (a fuzzer finding, --seed 14). Where a wider step resolves it and agrees, that is no
    mismatch; a wrong gradient agrees with no step."""
    def at(delta):
        return _value_at(fn, args, k, idx, delta)

    x0 = float(args[k][idx] if np.ndim(args[k]) else args[k])
    for scale in (1e-4, 1e-2, 1e-1, 1.0):
        h = scale * (1.0 + abs(x0))
        d1 = (at(h) - at(-h)) / (2 * h)
        d2 = (at(h / 2) - at(-h / 2)) / h
        if abs(d1 - d2) <= FD_TOL * (1.0 + abs(d1)) and \
                abs(want - d2) <= FD_TOL * (1.0 + abs(d2)):
            return True
    return False


def _with_defaults(f, args):
    """The arguments of a call f(*args), in the generated function's order (positional
    parameters, then keyword-only ones), defaults filled in: what the API passes on."""
    bound = inspect.signature(f).bind(*args)
    bound.apply_defaults()
    return [bound.arguments[p] for p in inspect.signature(f).parameters]


def _binding(f, pyfunc):
    """The generated function `build` made (all parameters positional), called like f."""
    return lambda *args: pyfunc(*_with_defaults(f, args))


def _top_level_for(source):
    fn = [d for d in ast.parse(source).body if isinstance(d, ast.FunctionDef)][-1]
    return any(isinstance(s, ast.For) for s in fn.body)


def _checkpoint_check(f, floats, types, args, after, header, zero=()):
    """checkpoint=2 on the program's top-level loops: value and gradient identical to the
    bit to the recorded ones (interpreter runs of both generated functions); with a
    numba.prange loop, to rounding: its backward sweep adds up the threads' partial
    adjoints, where the checkpointed one adds in order. Not checked where a parameter in
    `zero` is rightly refused (DECIDED_REFUSAL)."""
    where = {"argnums": floats, "numba": False}
    try:
        plain = _binding(f, build(f, floats, types, _PY_MODE, jit=False).pyfunc)
        checkpointed = _binding(f, build(f, floats, types, _PY_MODE, jit=False,
                                         checkpoint=2).pyfunc)
    except InternalError as exc:        # a bug inside adjit: never a refusal
        return Outcome("mismatch", f"adjit crashed checkpointing ({_crash_kind(exc)})",
                       f"{header}\ncheckpoint=2: {exc}", **where)
    except AdjitError as exc:
        decided = DECIDED_REFUSAL.search(str(exc))
        if decided and decided.group(1) in zero:
            return None
        if ONCE_REFUSAL in str(exc):
            # a loop making a draw (or another call with an effect) is never checkpointed;
            # checkpoint="auto" then records it: identical to the recorded gradient
            return _checkpoint_auto(f, floats, types, args, after, header, plain)
        if "checkpointing a" in str(exc):
            return None     # a top-level while loop or early exit that records: refused
        return Outcome("mismatch", "adjit refused to checkpoint a valid program",
                       f"{header}\ncheckpoint=2: {exc}", **where)
    except Exception as exc:   # noqa: BLE001 - a crash inside adjit is a finding
        return Outcome("mismatch", f"adjit crashed checkpointing ({type(exc).__name__})",
                       f"{header}\ncheckpoint=2: {type(exc).__name__}: {exc}", **where)
    bad, (value, grads), (cvalue, cgrads) = _run_both(plain, checkpointed, args, after,
                                                      header, "checkpoint=2", where)
    if bad is not None:
        return bad
    if "prange" in header and not any(_is_f32(a) for a in args):
        same = _equal_to_rounding(value, cvalue, grads, cgrads)
    elif any(_is_f32(a) for a in args):
        # in the interpreter numpy's promotion (NEP 50) gives float32 for a Python float
        # times a float32 and float64 for float64 operands, so the two generated functions'
        # scalars may end in different precisions; numba types them alike. Compare to
        # float32's precision here (the numba runs of the same program check the rest).
        same = np.allclose(value, cvalue, rtol=1e-6, equal_nan=True) and all(
            np.allclose(a, b, rtol=1e-6, atol=1e-7, equal_nan=True)
            for a, b in zip(grads, cgrads))
    else:
        same = np.array_equal(value, cvalue, equal_nan=True) and all(
            np.array_equal(a, b, equal_nan=True) for a, b in zip(grads, cgrads))
    if not same:
        return Outcome("mismatch", "checkpointed gradient differs",
                       f"{header}\ncheckpoint=2: value {cvalue!r} vs {value!r}\n"
                       f"gradients {[_fmt(g) for g in cgrads]}\n"
                       f"recorded  {[_fmt(g) for g in grads]}", **where)
    return None


def _equal_to_rounding(value, cvalue, grads, cgrads):
    return np.allclose(value, cvalue, rtol=1e-13, atol=1e-15, equal_nan=True) and all(
        np.allclose(a, b, rtol=1e-12, atol=1e-14, equal_nan=True)
        for a, b in zip(grads, cgrads))


def _run_both(plain, checkpointed, args, after, header, label, where):
    """The recorded and the checkpointed gradient on copies of the arguments: (a failing
    Outcome or None, (value, gradients) recorded, (value, gradients) checkpointed); the
    checkpointed run must raise nothing and leave its arguments as the program does."""
    with np.errstate(all="ignore"):
        try:
            recorded = plain(*_copy(args))
        except (ZeroDivisionError, ValueError) as exc:
            if not any(m in str(exc) for m in ("float division by zero", "negative power",
                                               "math domain error")):
                raise
            # interpreted, atan2's partial at (0, 0) divides by zero, 0.0 ** -0.5 and a math
            # domain error raise where numba gives inf or NaN: a singular point, discarded as
            # _run_adjit discards it (seed 31, chunk 2: math.atan2(z, z) at z = 0)
            return (Outcome("discard", f"singular point (the interpreted gradient raised "
                                       f"{type(exc).__name__}: {exc})"),
                    (None, None), (None, None))
        inputs = _copy(args)
        try:
            ours = checkpointed(*inputs)
        except Exception as exc:   # noqa: BLE001 - generated code must not raise
            return (Outcome("mismatch", "checkpointed code raised",
                            f"{header}\n{label}: {type(exc).__name__}: {exc}", **where),
                    (None, None), (None, None))
    if _mutated(inputs, after) is not None:
        return (Outcome("mismatch", "argument mutated", f"{header}\n{label}", **where),
                (None, None), (None, None))
    return None, recorded, ours


def _checkpoint_auto(f, floats, types, args, after, header, plain):
    """checkpoint="auto" where checkpoint=2 is refused for a call that must run once: the
    value and gradient identical to the bit to the recorded ones (the program seeds its
    generator, so both draw the same numbers)."""
    where = {"argnums": floats, "numba": False}
    label = 'checkpoint="auto"'
    try:
        auto = _binding(f, build(f, floats, types, _PY_MODE, jit=False,
                                 checkpoint="auto").pyfunc)
    except InternalError as exc:
        return Outcome("mismatch", f"adjit crashed checkpointing ({_crash_kind(exc)})",
                       f"{header}\n{label}: {exc}", **where)
    except AdjitError as exc:
        return Outcome("mismatch", "adjit refused to checkpoint a valid program",
                       f"{header}\n{label}: {exc}", **where)
    bad, (value, grads), (cvalue, cgrads) = _run_both(plain, auto, args, after, header,
                                                      label, where)
    if bad is not None:
        return bad
    if not (np.array_equal(value, cvalue, equal_nan=True) and all(
            np.array_equal(a, b, equal_nan=True) for a, b in zip(grads, cgrads))):
        return Outcome("mismatch", "checkpointed gradient differs",
                       f"{header}\n{label}: value {cvalue!r} vs {value!r}\n"
                       f"gradients {[_fmt(g) for g in cgrads]}\n"
                       f"recorded  {[_fmt(g) for g in grads]}", **where)
    return None


def _fmt(v):
    """Every digit of a float or array (repr of an array rounds to 8 digits)."""
    return repr([float(t) for t in np.ravel(v)]) if np.ndim(v) else repr(float(v))


def _single(g):
    """Adapt grad(f, argnums=int) to the (value, grads) shape of the other runs; its value
    is None (grad returns none to check)."""
    return lambda *args: (None, (g(*args),))


def _fd_check(f, args, ref, floats):
    """Central differences at two steps; compared with the reference only where they agree
    with each other (no branch flip or kink within the step)."""
    def at(k, idx, delta):
        a = _copy(args)
        if isinstance(a[k], np.ndarray):
            a[k][idx] += delta
        else:
            a[k] += delta
        with np.errstate(all="ignore"):
            return f(*a)

    consistent = True
    for k in floats:
        shape = np.shape(args[k])
        for idx in (np.ndindex(shape) if shape else [()]):
            x0 = args[k][idx] if shape else args[k]
            h = 1e-6 * (1.0 + abs(x0))
            d1 = (at(k, idx, h) - at(k, idx, -h)) / (2 * h)
            d2 = (at(k, idx, h / 2) - at(k, idx, -h / 2)) / h
            if not abs(d1 - d2) <= 1e-6 * (1.0 + abs(d1)):
                consistent = False
                continue
            want = ref.grads[k][idx] if shape else ref.grads[k]
            if not abs(d1 - want) <= FD_AGREE * (1.0 + abs(want)):
                return "checked", (f"d/d(argument {k})[{idx}]: finite differences {d1!r} "
                                   f"(half step {d2!r}), reference {want!r}")
    return ("checked" if consistent else "skipped"), None


def reduce(program, jit, budget=3000):
    """A smaller program that fails the same way: greedy deletion of statements, hoisting of
    block bodies, and replacement of expressions by their operands or a constant, repeated
    until no candidate fails. Only the failing run is repeated for each candidate."""
    from .grammar import Program

    first = check(program, jit)
    if first.status != "mismatch":
        return program      # it no longer fails (fixed meanwhile): nothing to reduce
    focus = {"jit": first.numba, "fd": first.reason.startswith("reference"),
             "subsets": [] if first.numba or first.argnums is None else [first.argnums]}

    seeds = "np.random.seed(" in program.source

    def fails(p):
        # a program that seeds its generator keeps doing so: without it the interpreted and
        # the compiled runs draw different numbers, another failure of the same signature
        if seeds and "np.random.seed(" not in p.source:
            return False
        try:
            out = check(p, **focus)
        except Exception:   # noqa: BLE001 - a candidate that breaks the checker is rejected
            return False
        return out.status == "mismatch" and out.signature == first.signature

    tree = ast.parse(program.source)
    tried = 0
    k = 0
    while tried < budget:
        edits = _edits(tree)
        if k >= len(edits):
            break
        cand = edits[k](tree)
        tried += 1
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                src = ast.unparse(cand) + "\n"
                compile(src, "<candidate>", "exec")
        except (SyntaxError, ValueError):
            k += 1
            continue
        p = Program(src, program.params, program.seed, program.groups)
        if len(src) < len(ast.unparse(tree)) + 1 and fails(p):
            tree = cand          # the k-th edit of the smaller tree is a new one: keep k
        else:
            k += 1
    return Program(ast.unparse(tree) + "\n", program.params, program.seed, program.groups)


def _edits(tree):
    """Functions tree -> smaller copy, largest cuts first: drop a statement, replace a
    compound statement by its body, replace an expression by an operand or 1.0."""
    nodes = list(ast.walk(tree))
    pos = {id(n): k for k, n in enumerate(nodes)}
    edits = []
    # every while loop must still terminate: keep its test and its counter's increment
    frozen = {id(n) for w in nodes if isinstance(w, ast.While) for n in ast.walk(w.test)}
    counters = {n.id for w in nodes if isinstance(w, ast.While) for n in ast.walk(w.test)
                if isinstance(n, ast.Name)}

    def at(copy_tree, k):
        return list(ast.walk(copy_tree))[k]

    def replace_stmt(k, field, i, body_of):
        def edit(t):
            t = copy.deepcopy(t)
            seq = getattr(at(t, k), field)
            inner = [] if body_of is None else \
                [s for f in ("body", "orelse") for s in getattr(seq[i], f, None) or []]
            new = seq[:i] + inner + seq[i + 1:]
            setattr(at(t, k), field, new or [ast.Pass()])
            return ast.fix_missing_locations(t)
        return edit

    def replace_expr(k, field, i, child):
        def edit(t):
            t = copy.deepcopy(t)
            owner = at(t, k)
            old = getattr(owner, field) if i is None else getattr(owner, field)[i]
            new = ast.Constant(1.0) if child is None else \
                [c for c in ast.iter_child_nodes(old) if isinstance(c, ast.expr)][child]
            if i is None:
                setattr(owner, field, new)
            else:
                getattr(owner, field)[i] = new
            return ast.fix_missing_locations(t)
        return edit

    for node in nodes:
        for field in ("body", "orelse"):
            seq = getattr(node, field, None)
            if isinstance(seq, list) and seq and isinstance(seq[0], ast.stmt):
                for i, stmt in enumerate(seq):
                    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) \
                            and stmt.target.id in counters:
                        continue
                    edits.append(replace_stmt(pos[id(node)], field, i, None))
                    if getattr(stmt, "body", None):
                        edits.append(replace_stmt(pos[id(node)], field, i, "body"))
    for node in nodes:
        if id(node) in frozen:
            continue
        for field, val in ast.iter_fields(node):
            if field == "func" or isinstance(node, ast.While) and field == "test":
                continue
            items = [(None, val)] if isinstance(val, ast.expr) else \
                list(enumerate(val)) if isinstance(val, list) else []
            for i, item in items:
                if isinstance(item, ast.expr) and not isinstance(item, (ast.Name, ast.Constant)):
                    n_children = sum(isinstance(c, ast.expr) for c in ast.iter_child_nodes(item))
                    for child in list(range(n_children)) + [None]:
                        edits.append(replace_expr(pos[id(node)], field, i, child))
    return edits

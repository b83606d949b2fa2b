"""Check one drawn kernel: adjit's adjoint kernel against the sequential oracle.

`check(kernel)` returns an Outcome with `status`:
- "ok": race-free, accepted, and the adjoint kernel's shadows agree with central finite
  differences of the sequential run (to FD_TOL of the gradient's scale), and the primal
  outputs it writes equal the sequential run's;
- "refused": adjit raised an AdjitError (fine for any kernel; `reason` is the message
  without names and numbers, for the campaign's breakdown);
- "discard": not a fair test (the sequential oracle cannot run it, or it is not smooth or
  not finite at its arguments);
- "mismatch", with `kind`:
  - "wrong": race-free, accepted, and a shadow or a primal output is wrong;
  - "racy-accepted": the oracle found a race and adjit accepted the kernel;
  - "crash": an exception that is not an AdjitError, or an adjit.errors.InternalError
    (an unexpected exception inside adjit), building or launching the adjoint;
  - "oracle": numba's simulator and the sequential run disagree on a race-free kernel's
    outputs (a bug in the oracle or the grammar, not in adjit).

The adjoint kernel is launched on fresh copies of the primal arguments, then one shadow per
argnums array (a random base for arrays the kernel only reads: the gradient accumulates onto
it; the cotangent for arrays it also writes), then the cotangents of the other arrays it
writes. The objective is L = sum over written arrays W of <cot_W, W after the launch>; the
gradient of an argnums array is d L / d (its value before the launch): what its shadow
holds after the adjoint (minus the base for arrays the kernel only reads).

`known_bugs(kernel, outcome)` names the entries of KNOWN_BUGS a mismatch falls under;
`unexpected(outcomes)` is what the bounded test in `make test` fails on.
"""
import ast
import hashlib
import linecache
import math
import re

import numpy as np

from . import oracle

FD_TOL = 1e-6          # |adjoint - finite differences| <= FD_TOL * max(1, max |fd|)
FD_AGREE = 1e-7        # the two step sizes must agree this well (else: not smooth)
PRIMAL_TOL = 1e-12     # relative: outputs the adjoint kernel writes vs the sequential run
MAX_SCALE = 1e6

# Known adjit bugs: mismatches of these kinds are reported by campaigns (and saved) but do
# not fail the bounded run in `make test`. Remove an entry once adjit is fixed, and the
# bounded run checks that category from then on.
# - "racy accepted": adjit has no race analysis: a kernel in which two threads write one
#   element without atomics, or a thread reads an element another thread writes (in-place
#   stencils `u[i] = u[i] + c * (u[i - 1] - 2 * u[i] + u[i + 1])`, `acc[0] += x[i]`,
#   `hist[bins[i]] += y[i]`, reading an accumulator it adds to atomically, `out[i // 2] =`)
#   gets an adjoint kernel instead of an AdjitError;
# - "in-place write at non-grid index": a race-free kernel that writes an element other
#   than `a[i]` for `i = cuda.grid(1)` (offset `u[i + 1]`, reversed `u[n - 1 - i]`,
#   permutation `u[perm[i]]`, red-black `u[2 * t + 1 + color]`, grid-stride loops, two-level
#   `state[1 - cur, i]`) of an array whose shadow carries a cotangent gets a wrong
#   shadow: `_atomic_shadow_updates` drops the zeroing `u_bar[j] = 0.0` of an element the
#   thread does not own, so the overwritten value's cotangent survives in u_bar[j] and the
#   adjoint adds to it (d u[j]_final / d u[j]_initial = 0 is taken as 1).
KNOWN_BUGS = set()


class Outcome:
    def __init__(self, status, kind="", reason="", detail="", err=0.0, races=()):
        self.status = status
        self.kind = kind
        self.reason = reason
        self.detail = detail
        self.err = err
        self.races = tuple(races)

    @property
    def label(self):
        return f"MISMATCH-{self.kind}" if self.status == "mismatch" else self.status

    @property
    def signature(self):
        """What a reduced kernel must still show: the kind and the reason."""
        return (self.status, self.kind, self.reason)

    def __repr__(self):
        return f"Outcome({self.label}, {self.reason!r})"


def load(source):
    """Exec kernel source as a module (readable by inspect); returns the kernel `k`."""
    from numba import cuda
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    filename = f"<fuzz-cuda-{digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    ns = {"cuda": cuda, "math": math, "__name__": f"fuzz_cuda_{digest}"}
    exec(compile(source, filename, "exec"), ns)  # noqa: S102
    return ns["k"]


def written_params(source, params):
    """Parameters the kernel writes (element stores, augmented stores, cuda.atomic.add), in
    parameter order."""
    tree = ast.parse(source)
    fn = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "k"][0]
    out = set()
    for node in ast.walk(fn):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AugAssign) else []
        for t in targets:
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                out.add(t.value.id)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "add" and node.args and isinstance(node.args[0], ast.Name):
            out.add(node.args[0].id)
    return [p for p in params if p in out]


def message_of(exc):
    """An AdjitError's message without location, names and numbers: its first sentence."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = text.rsplit("): ", 1)[-1]
    text = re.sub(r"'[^']*'", "'_'", text)
    text = re.sub(r"\b\d+\b", "#", text)
    return text.split(". ", 1)[0][:120]


def _internal_kind(exc):
    """An InternalError's original exception class (its __cause__), else InternalError."""
    return type(exc.__cause__).__name__ if exc.__cause__ is not None else "InternalError"


def _launch(kern, launch, args):
    blocks, threads = launch
    kern[blocks, threads](*args)


def check(kernel, adjoint=None):
    """The Outcome of one Kernel (see the module docstring). `adjoint` replaces
    adjit.cuda.adjoint_kernel (the tests plant wrong adjoints with it)."""
    import adjit.cuda
    from adjit import AdjitError
    from adjit.errors import InternalError
    adjoint = adjoint or adjit.cuda.adjoint_kernel

    names = [p for p, _ in kernel.params]
    try:
        kern = load(kernel.source)
    except Exception as exc:  # noqa: BLE001
        return Outcome("discard", reason=f"does not load: {type(exc).__name__}")
    args = kernel.args()
    try:
        seq = oracle.run(kern, kernel.launch, args, track=True)
    except oracle.Unsupported as exc:
        return Outcome("discard", reason=f"oracle: {exc}")
    except Exception as exc:  # noqa: BLE001 - an invalid kernel: a grammar bug
        return Outcome("discard", reason=f"the kernel raises: {type(exc).__name__}: {exc}")
    written = written_params(kernel.source, names)
    want_shadows = [f"{names[k]}_bar" for k in kernel.argnums] + \
        [f"{p}_bar" for p in written if names.index(p) not in kernel.argnums]
    rng = np.random.default_rng(kernel.seed ^ 0x5EED)
    cots = {names.index(p): rng.normal(size=args[names.index(p)].shape) for p in written}
    bases = {k: rng.normal(size=args[k].shape) for k in kernel.argnums if k not in cots}

    def build():
        """(adjoint kernel, shadow arrays) or an Outcome (refused / crash)."""
        try:
            adj = adjoint(kern, kernel.argnums)
            shadows = adj.shadows_for(*args)
        except InternalError as exc:    # a bug inside adjit: never a refusal
            return Outcome("mismatch", "crash", f"building: {_internal_kind(exc)}",
                           f"{type(exc).__name__}: {exc}", races=seq.races)
        except AdjitError as exc:
            return Outcome("refused", reason=message_of(exc), detail=str(exc),
                           races=seq.races)
        except Exception as exc:  # noqa: BLE001
            return Outcome("mismatch", "crash", f"building: {type(exc).__name__}",
                           f"{type(exc).__name__}: {exc}", races=seq.races)
        return adj, list(shadows)

    def shadow_arrays(shadows):
        out = []
        for s in shadows:
            k = names.index(s[:-4]) if s.endswith("_bar") and s[:-4] in names else None
            if k is None:
                out.append(None)
            elif k in cots:
                out.append(cots[k].copy())
            else:
                out.append(bases[k].copy() if k in bases else np.zeros_like(args[k]))
        return out

    def launch_adjoint(adj, shadows):
        """The arguments after the adjoint's launch, or an Outcome."""
        primal = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        arrays = shadow_arrays(shadows)
        if any(a is None for a in arrays):
            return Outcome("mismatch", "wrong", "shadow list",
                           f"adjit's shadows {shadows}, expected {want_shadows}",
                           races=seq.races)
        try:
            _launch(adj, kernel.launch, primal + arrays)
        except InternalError as exc:    # a bug inside adjit: never a refusal
            return Outcome("mismatch", "crash", f"launching: {_internal_kind(exc)}",
                           f"{type(exc).__name__}: {exc}", races=seq.races)
        except AdjitError as exc:
            return Outcome("refused", reason=message_of(exc), detail=str(exc),
                           races=seq.races)
        except Exception as exc:  # noqa: BLE001
            return Outcome("mismatch", "crash", f"launching: {type(exc).__name__}",
                           f"{type(exc).__name__}: {exc}", races=seq.races)
        return primal, arrays

    if seq.races:
        built = build()
        if isinstance(built, Outcome):
            return built
        ran = launch_adjoint(*built)
        if isinstance(ran, Outcome) and (ran.status != "mismatch" or ran.kind == "crash"):
            return ran                      # refused at launch, or crashed
        kinds = sorted({r[0] for r in seq.races})
        first = seq.races[0]
        return Outcome("mismatch", "racy-accepted", ", ".join(kinds),
                       f"race: {first[0]} on {first[1]}[{first[2]}] by threads "
                       f"{list(first[3])[:4]} ({len(seq.races)} racy elements); "
                       f"adjit accepted the kernel", races=seq.races)

    # race-free: numba's simulator must agree with the sequential run (oracle self-check)
    sim = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    try:
        _launch(kern, kernel.launch, sim)
    except Exception as exc:  # noqa: BLE001
        return Outcome("mismatch", "oracle", "the simulator raises",
                       f"{type(exc).__name__}: {exc}")
    for p in written:
        k = names.index(p)
        if not _close(sim[k], seq.args[k], PRIMAL_TOL):
            return Outcome("mismatch", "oracle", "simulator and sequential run differ",
                           f"{p}: simulator {sim[k]}, sequential {seq.args[k]}")
    fd1, fd2 = oracle.fd_gradients(kern, kernel.launch, args, cots, kernel.argnums)
    if not all(np.all(np.isfinite(g)) for g in list(fd1.values()) + list(fd2.values())) or \
            not all(np.all(np.isfinite(seq.args[k])) for k in cots):
        return Outcome("discard", reason="not finite")
    scale = max([1.0] + [float(np.max(np.abs(g))) for g in fd1.values()])
    if scale > MAX_SCALE:
        return Outcome("discard", reason="ill-conditioned")
    if any(np.max(np.abs(fd1[k] - fd2[k])) > FD_AGREE * scale for k in fd1):
        return Outcome("discard", reason="not smooth at its arguments (FD steps disagree)")

    built = build()
    if isinstance(built, Outcome):
        return built
    adj, shadows = built
    if shadows != want_shadows:
        return Outcome("mismatch", "wrong", "shadow list",
                       f"adjit's shadows {shadows}, expected {want_shadows}")
    ran = launch_adjoint(adj, shadows)
    if isinstance(ran, Outcome):
        return ran
    primal, arrays = ran
    for p in written:
        k = names.index(p)
        if not _close(primal[k], seq.args[k], PRIMAL_TOL):
            return Outcome("mismatch", "wrong", "primal",
                           f"{p} after the adjoint kernel: {_fmt(primal[k])}\n"
                           f"{p} after the kernel (sequential): {_fmt(seq.args[k])}")
    worst, lines = 0.0, []
    for j, k in enumerate(kernel.argnums):
        got = arrays[j] - bases[k] if k in bases else arrays[j]
        err = float(np.max(np.abs(got - fd1[k]))) / scale
        worst = max(worst, err)
        if err > FD_TOL:
            role = "read and written" if k in cots else "read only"
            lines.append(f"d L / d {names[k]} ({role}):\n  adjit  {_fmt(got)}\n"
                         f"  FD     {_fmt(fd1[k])}")
    if lines:
        return Outcome("mismatch", "wrong", "shadow", "\n".join(lines), err=worst)
    return Outcome("ok", err=worst)


def _close(a, b, tol):
    return np.all(np.abs(a - b) <= tol * max(1.0, float(np.max(np.abs(b)))))


def _fmt(a):
    return np.array2string(np.asarray(a), precision=6, max_line_width=200, separator=", ")


# known bugs -------------------------------------------------------------------------------

def _owned(fn):
    """The variable holding cuda.grid(1) if assigned exactly once (a thread's own index)."""
    sites = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            sites.setdefault(node.targets[0].id, []).append(node.value)
    for name, values in sites.items():
        v = values[0]
        if len(values) == 1 and isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) \
                and v.func.attr == "grid" and v.args and isinstance(v.args[0], ast.Constant) \
                and v.args[0].value == 1:
            return name
    return None


def nongrid_writes(kernel):
    """Arrays the kernel overwrites (plain or augmented stores; cuda.atomic.add is no
    overwrite) at an element other than `a[i]`, i = cuda.grid(1), where the cotangent left in
    the overwritten element matters: the array is differentiated (argnums), or read by the
    kernel, or stored at more than one place (cuda.atomic.add included) or in a loop at an
    index that does not depend on the loop's variable (a later store's cotangent reaches an
    earlier one)."""
    tree = ast.parse(kernel.source)
    fn = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "k"][0]
    own = _owned(fn)
    names = [p for p, _ in kernel.params]
    sites, nongrid, looped, read = {}, set(), set(), set()

    def visit(node, loops):
        for child in ast.iter_child_nodes(node):
            inner = loops
            if isinstance(node, (ast.For, ast.While)) and child in node.body:
                inner = loops + [{n.id for n in ast.walk(node.target if isinstance(
                    node, ast.For) else node.test) if isinstance(n, ast.Name)}]
            targets = child.targets if isinstance(child, ast.Assign) else \
                [child.target] if isinstance(child, ast.AugAssign) else []
            for t in targets:
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                    a = t.value.id
                    sites[a] = sites.get(a, 0) + 1
                    index = {n.id for n in ast.walk(t.slice) if isinstance(n, ast.Name)}
                    if any(not index & names for names in inner):
                        looped.add(a)       # the same element again at each iteration
                    if isinstance(child, ast.AugAssign):
                        read.add(a)
                    if not (own is not None and isinstance(t.slice, ast.Name)
                            and t.slice.id == own):
                        nongrid.add(a)
            if isinstance(child, ast.Subscript) and isinstance(child.value, ast.Name) and \
                    isinstance(child.ctx, ast.Load):
                read.add(child.value.id)
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and \
                    child.func.attr == "add" and child.args and \
                    isinstance(child.args[0], ast.Name):     # cuda.atomic.add: a store site
                sites[child.args[0].id] = sites.get(child.args[0].id, 0) + 1
            visit(child, inner)

    visit(fn, [])
    wrt = {names[k] for k in kernel.argnums}
    return {a for a in nongrid if a in wrt or a in read or a in looped or sites[a] > 1}


def known_bugs(kernel, outcome):
    """The KNOWN_BUGS entries this mismatch falls under (empty: a new bug)."""
    if outcome.status != "mismatch":
        return set()
    if outcome.kind == "racy-accepted":
        return {"racy accepted"}
    if outcome.kind == "wrong" and nongrid_writes(kernel):
        return {"in-place write at non-grid index"}
    return set()


def unexpected(results):
    """(kernel, outcome) pairs the bounded test fails on: crashes, oracle disagreements, and
    mismatches outside KNOWN_BUGS."""
    return [(k, o) for k, o in results if o.status == "mismatch" and
            (o.kind in ("crash", "oracle") or not known_bugs(k, o) & KNOWN_BUGS)]

"""`make fuzz-cuda N=1000` (python -m fuzz_cuda): N drawn numba.cuda kernels through
adjit.cuda.adjoint_kernel, against the sequential oracle.

    PYTHONPATH=tests python -m fuzz_cuda -n 1000 [--workers 2] [--seed 0] [--no-save]

Prints kernels tried, outcomes (ok, refused with a breakdown by message, discarded,
MISMATCH-wrong, MISMATCH-racy-accepted, MISMATCH-crash, MISMATCH-oracle), mismatch
categories, the known adjit bugs they fall under (check.KNOWN_BUGS), and the time taken.
For each mismatch category the shortest kernels are reduced to small ones that fail the
same way and saved as tests/fuzz_cuda/found/<hash>.py: standalone scripts for whoever
fixes adjit (`make test` does not run them). Exit status 1 when anything mismatched.
"""
import argparse
import ast
import collections
import copy
import hashlib
import multiprocessing
import os
import pathlib
import time

FOUND = pathlib.Path(__file__).resolve().parent / "found"


class _Done(BaseException):
    """Ends a worker's hypothesis run early (a BaseException: not a test failure)."""


ROLES = {"acc": "an accumulator", "hist": "an accumulator", "u": "an in-place array",
         "state": "an in-place array", "out": "an output", "out2": "an output"}
RACE_ORDER = ("write-write", "write-atomic", "read-write", "atomic-read")


def category(kernel, outcome):
    """How a mismatch is grouped in the report (and what a reduced kernel must keep)."""
    from .check import known_bugs
    text = f"{outcome.label}: {outcome.reason}"
    if outcome.kind == "racy-accepted":
        race = min(outcome.races, key=lambda r: RACE_ORDER.index(r[0]))
        text = f"{outcome.label}: {race[0]} on {ROLES.get(race[1], race[1])}"
    if outcome.kind == "wrong" and outcome.reason == "shadow":
        roles = sorted({"read-and-written array" if "(read and written)" in line
                        else "read-only array" for line in outcome.detail.splitlines()
                        if line.startswith("d L / d")})
        text += f" of a {' and a '.join(roles)}"
    known = sorted(known_bugs(kernel, outcome))
    return text + (f"  [known: {', '.join(known)}]" if known else "  [NEW]")


def worker(n, seed, deadline=None, adjoint=None):
    """Check n distinct kernels drawn by hypothesis from `seed`; returns a stats dict with
    every (kernel, outcome) in `results`. Hypothesis draws some kernels more than once; a
    repeat is counted and skipped, and drawing goes on until n distinct kernels ran, or
    until `deadline` (time.time())."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hseed

    from .check import check
    from .grammar import kernels

    stats = {"repeats": 0, "results": [], "time": 0.0}
    seen = set()
    start = time.perf_counter()

    def expired():
        return deadline is not None and time.time() > deadline

    def one(kernel):
        if len(seen) >= n or expired():
            raise _Done
        key = (kernel.source, kernel.argnums, kernel.launch, kernel.seed)
        if key in seen:
            stats["repeats"] += 1
            return
        seen.add(key)
        stats["results"].append((kernel, check(kernel, adjoint=adjoint)))

    for round_ in range(20):
        missing = n - len(seen)
        if missing <= 0 or expired():
            break
        settings_ = settings(max_examples=missing * 2 + 10, database=None, deadline=None,
                             phases=[Phase.generate], suppress_health_check=list(HealthCheck),
                             verbosity=Verbosity.quiet)
        try:
            settings_(hseed(seed * 100 + round_)(given(kernels())(one)))()
        except _Done:
            break
    stats["time"] = time.perf_counter() - start
    return stats


# reduction --------------------------------------------------------------------------------

def reduce(kernel, budget=400, adjoint=None):
    """A smaller kernel with the same category: greedy deletion of statements, hoisting of
    block bodies, replacement of expressions by an operand or 1.0, fewer argnums, the
    parameters it no longer uses dropped. (`adjoint` as for check.check.)"""
    from .check import check

    first = check(kernel, adjoint=adjoint)
    if first.status != "mismatch":
        return kernel
    want = category(kernel, first)

    def fails(k):
        try:
            out = check(k, adjoint=adjoint)
        except Exception:   # noqa: BLE001 - a candidate that breaks the checker is rejected
            return False
        return out.status == "mismatch" and category(k, out) == want

    tries = [0]

    def improve(k, candidates):
        for cand in candidates:
            if tries[0] >= budget:
                return None
            tries[0] += 1
            if fails(cand):
                return cand
        return None

    current = kernel
    while tries[0] < budget:
        dropped = _drop_unused(current)
        better = (dropped if dropped != current and fails(dropped) else None) or \
            improve(current, _argnums_cuts(current)) or \
            improve(current, _source_cuts(current))
        if better is None:
            break
        current = better
    return current


def _argnums_cuts(kernel):
    return [kernel.replace(argnums=kernel.argnums[:j] + kernel.argnums[j + 1:])
            for j in range(len(kernel.argnums)) if len(kernel.argnums) > 1]


def _source_cuts(kernel):
    """Smaller sources, largest cuts first (each a Kernel)."""
    tree = ast.parse(kernel.source)
    nodes = list(ast.walk(tree))
    pos = {id(n): k for k, n in enumerate(nodes)}
    out = []

    def emit(t):
        try:
            src = ast.unparse(ast.fix_missing_locations(t)) + "\n"
            compile(src, "<candidate>", "exec")
        except (SyntaxError, ValueError):
            return
        if len(src) < len(kernel.source) + 1 and src != kernel.source:
            out.append(kernel.replace(source=src))

    kernel_fn = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "k"][0]
    for node in nodes:
        for field in ("body", "orelse"):
            seq = getattr(node, field, None)
            if not (isinstance(seq, list) and seq and isinstance(seq[0], ast.stmt)):
                continue
            if node is tree:        # the module: keep the kernel (a device function may go)
                continue
            for i, stmt in enumerate(seq):
                for hoist in (False, True):
                    if hoist and not getattr(stmt, "body", None):
                        continue
                    t = copy.deepcopy(tree)
                    owner = list(ast.walk(t))[pos[id(node)]]
                    s = getattr(owner, field)
                    inner = [x for f in ("body", "orelse") for x in getattr(s[i], f, None) or []] \
                        if hoist else []
                    setattr(owner, field, (s[:i] + inner + s[i + 1:]) or [ast.Pass()])
                    emit(t)
    frozen = {id(x) for node in ast.walk(kernel_fn) if _idiom(node) is not None
              for x in ast.walk(_idiom(node))}
    for node in ast.walk(kernel_fn):
        for field, val in ast.iter_fields(node):
            if field in ("func", "decorator_list") or id(node) in frozen:
                continue
            items = [(None, val)] if isinstance(val, ast.expr) else \
                list(enumerate(val)) if isinstance(val, list) else []
            for i, item in items:
                if not isinstance(item, ast.expr) or isinstance(item, (ast.Name, ast.Constant)) \
                        or id(item) in frozen:
                    continue
                children = [c for c in ast.iter_child_nodes(item) if isinstance(c, ast.expr)]
                for c in list(range(len(children))) + [None]:
                    t = copy.deepcopy(tree)
                    owner = list(ast.walk(t))[pos[id(node)]]
                    old = getattr(owner, field) if i is None else getattr(owner, field)[i]
                    new = ast.Constant(1.0) if c is None else \
                        [x for x in ast.iter_child_nodes(old) if isinstance(x, ast.expr)][c]
                    if i is None:
                        setattr(owner, field, new)
                    else:
                        getattr(owner, field)[i] = new
                    emit(t)
    return out


def _idiom(node):
    """The part of `node` the reducer keeps, so that reduced kernels stay the kind users
    write, or None: calls to cuda.* (grid, gridsize, atomic.add's array) and bounds guards
    (an `if` test or a `range` with int constants only)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            isinstance(node.func.value, ast.Name) and node.func.value.id == "cuda":
        return node
    if isinstance(node, (ast.If, ast.For)):
        part = node.test if isinstance(node, ast.If) else node.iter
        consts = [c.value for c in ast.walk(part) if isinstance(c, ast.Constant)]
        return part if all(isinstance(c, int) for c in consts) else None
    return None


def _drop_unused(kernel):
    """The kernel without parameters its body does not mention (argnums renumbered), and
    without the device function if the kernel no longer calls it."""
    tree = ast.parse(kernel.source)
    fn = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "k"][0]
    used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
    keep = [j for j, (p, _) in enumerate(kernel.params) if p in used]
    if len(keep) == len(kernel.params) and not (len(tree.body) > 1 and "g" not in used):
        return kernel
    picked = [j for j in keep if j in kernel.argnums]
    if not picked:          # differentiate an array the kernel still uses, if it has one
        from .grammar import FLOAT_KINDS
        picked = [j for j in keep if kernel.params[j][1] in FLOAT_KINDS][:1]
        if not picked:
            return kernel
        kernel = kernel.replace(argnums=tuple(picked))
    fn.args.args = [a for a in fn.args.args if a.arg in used]
    tree.body = [n for n in tree.body if not (isinstance(n, ast.FunctionDef) and n.name == "g"
                                              and "g" not in used)]
    argnums = tuple(keep.index(j) for j in kernel.argnums if j in keep)
    return kernel.replace(source=ast.unparse(tree) + "\n",
                          params=tuple(kernel.params[j] for j in keep), argnums=argnums)


def save(kernel, outcome, cat):
    """Write a standalone reproducer script under tests/fuzz_cuda/found/; returns its path."""
    digest = hashlib.sha1(repr((kernel.source, kernel.params, kernel.argnums,
                                kernel.launch)).encode()).hexdigest()[:10]
    FOUND.mkdir(exist_ok=True)
    path = FOUND / f"{digest}.py"
    detail = "\n".join("    " + line for line in outcome.detail.splitlines()[:12])
    described = []
    for (p, _), a in zip(kernel.params, kernel.args()):
        described.append(f"{p}: {a.dtype} {a.shape}" if hasattr(a, "shape") else f"{p}={a!r}")
    names = [p for p, _ in kernel.params]
    launch = (f"adjit.cuda.adjoint_kernel(k, argnums={kernel.argnums!r})"
              f"[{kernel.launch[0]!r}, {kernel.launch[1]!r}]({', '.join(names)}, <shadows>)")
    path.write_text(
        f'"""Found by the kernel fuzzer ({time.strftime("%Y-%m-%d")}): {cat}\n\n'
        f"{detail}\n\n"
        f"Arguments ({', '.join(described)}; values from seed {kernel.seed}):\n"
        f"    {launch}\n\n"
        f"Run: .venv/bin/python tests/fuzz_cuda/found/{digest}.py  (exit status 1 while it\n"
        f"still mismatches). Not part of `make test`.\n"
        f'"""\n'
        f"import pathlib\nimport sys\n\n"
        f"sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))   # tests/\n\n"
        f"from fuzz_cuda.check import check  # noqa: E402\n"
        f"from fuzz_cuda.grammar import Kernel  # noqa: E402\n\n"
        f"SOURCE = '''\\\n{kernel.source}'''\n"
        f"KERNEL = Kernel(SOURCE, params={kernel.params!r},\n"
        f"                argnums={kernel.argnums!r}, launch={kernel.launch!r}, "
        f"seed={kernel.seed!r})\n\n"
        f'if __name__ == "__main__":\n'
        f"    out = check(KERNEL)\n"
        f"    print(out.label, out.reason)\n"
        f"    print(out.detail)\n"
        f'    sys.exit(out.status == "mismatch")\n', encoding="utf-8")
    return path


# the report -------------------------------------------------------------------------------

def summarize(results, elapsed, workers, repeats):
    """Print the counts; returns the mismatches grouped by category."""
    labels = collections.Counter(o.label for _, o in results)
    refused = collections.Counter(o.reason for _, o in results if o.status == "refused")
    racy_refused = sum(1 for _, o in results if o.status == "refused" and o.races)
    discards = collections.Counter(o.reason for _, o in results if o.status == "discard")
    groups = collections.defaultdict(list)
    for k, o in results:
        if o.status == "mismatch":
            groups[category(k, o)].append((k, o))
    n = len(results)
    racy = sum(1 for _, o in results if o.races)
    print(f"kernels tried:        {n} distinct ({repeats} repeated draws skipped); "
          f"{racy} racy by the oracle, {n - racy} race-free")
    print(f"ok:                   {labels['ok']}")
    print(f"refused:              {labels['refused']} ({racy_refused} of them racy)")
    for reason, count in refused.most_common():
        print(f"    {count:5d}  {reason}")
    print(f"discarded:            {labels['discard']}")
    for reason, count in discards.most_common():
        print(f"    {count:5d}  {reason}")
    for kind in ("wrong", "racy-accepted", "crash", "oracle"):
        print(f"MISMATCH-{kind + ':':14s}{labels['MISMATCH-' + kind]}")
    if groups:
        print("mismatch categories:")
        for cat, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            print(f"    {len(items):5d}  {cat}")
    worst = max([o.err for _, o in results if o.status == "ok"] + [0.0])
    print(f"largest |adjoint - FD| / scale among ok kernels: {worst:.1e}")
    print(f"time:                 {elapsed:.0f} s on {workers} worker(s)")
    return groups


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fuzz_cuda",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=1000, help="kernels to try (default 1000)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=None,
                        help="stop drawing kernels after this many seconds")
    parser.add_argument("--no-save", action="store_true",
                        help="do not write reproducers to tests/fuzz_cuda/found/")
    parser.add_argument("--reduce", type=int, default=1, metavar="K",
                        help="reduce and save the K shortest kernels of each mismatch "
                             "category (default 1; 0: none)")
    opts = parser.parse_args(argv)

    start = time.perf_counter()
    workers = max(1, min(opts.workers, opts.n))
    shares = [opts.n // workers + (k < opts.n % workers) for k in range(workers)]
    deadline = None if opts.time_limit is None else time.time() + opts.time_limit
    jobs = [(share, opts.seed * 1000 + k, deadline) for k, share in enumerate(shares)]
    if workers == 1:
        stats = [worker(*jobs[0])]
    else:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            stats = pool.starmap(worker, jobs)
    results, keys = [], set()
    for s in stats:                     # kernels two workers both drew count once
        for k, o in s["results"]:
            key = (k.source, k.argnums, k.launch, k.seed)
            if key not in keys:
                keys.add(key)
                results.append((k, o))
    elapsed = time.perf_counter() - start
    groups = summarize(results, elapsed, workers, sum(s["repeats"] for s in stats))

    if groups and opts.reduce > 0:
        print(f"\nreproducers (the {opts.reduce} shortest kernel(s) of each category, reduced):")
        from .check import check
        for cat, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            items = sorted(items, key=lambda ko: (len(ko[0].source), ko[0].source))
            for kernel, _ in items[:opts.reduce]:
                t0 = time.perf_counter()
                small = reduce(kernel)
                out = check(small)
                print(f"\n== {cat}  ({len(items)} kernels; reduced in "
                      f"{time.perf_counter() - t0:.0f} s)")
                print(small.source.rstrip())
                print(f"   params {[p for p, _ in small.params]}, argnums {small.argnums}, "
                      f"launch {small.launch}")
                print("\n".join("   " + line for line in out.detail.splitlines()[:8]))
                if out.status != "mismatch":
                    print(f"-- not saved: it is now {out.label}")
                elif not opts.no_save:
                    print(f"-- saved {save(small, out, category(small, out))}")
    return 1 if groups else 0

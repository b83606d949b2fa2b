"""`make fuzz N=10000` (python -m fuzz): run N generated programs through adjit and the reference AD.

    PYTHONPATH=tests python -m fuzz -n 10000 [--workers 2] [--seed 0] [--numba-every 5]
                                   [--groups | --all-constructs | --only GROUP ...] [--save]
                                   [--reduce-per-signature K] [--progress K]

Prints programs tried, discarded (and why), mismatches, and the time taken. Each mismatch is
reduced to a small program that fails the same way and saved as
tests/regressions/fuzz_<hash>.py, which `make test` runs from then on (write down the cause
in its docstring when you fix it). Exit status 1 when anything mismatched.

Known adjit bugs (grammar.AVOID) are steered around, or their programs discarded, so that a
campaign reports new ones; --all-constructs draws and reports them too. `--groups` (what
`make fuzz` passes) draws every construct group as well, as an ordinary campaign. `--only GROUP`
(repeatable) draws one construct group of grammar.GROUPS (index arrays, masks, views, ...)
in nearly every program, the other groups still avoided. Both print, per group, how many
programs drew it and their outcomes (ok, refused with the refusal messages counted, mismatch,
crash, discarded); they reduce one program per failure signature (--reduce-per-signature)
and save no reproducer unless --save is given (a reproducer of a known bug in
tests/regressions/ would fail `make test` until adjit is fixed).
"""
import argparse
import collections
import gc
import hashlib
import multiprocessing
import os
import pathlib
import sys
import time

REGRESSIONS = pathlib.Path(__file__).resolve().parent.parent / "regressions"


def numba_sampled(program, every):
    """Whether this program is also compiled by numba: 1 in `every`, fixed by its source."""
    if every <= 0:
        return False
    digest = hashlib.sha1(program.source.encode()).digest()
    return int.from_bytes(digest[:4], "big") % every == 0


class _Done(BaseException):
    """Ends a worker's hypothesis run early (a BaseException: not a test failure)."""


def category(out):
    """ok, refused (a clean AdjitError in a construct-group program), discard, crash or
    mismatch."""
    if out.status == "ok":
        return "ok"
    if out.status == "discard":
        return "refused" if out.reason.startswith("adjit refused") else "discarded"
    if out.reason.startswith(("adjit crashed", "generated code raised",
                              "checkpointed code raised")):
        return "crash"
    return "mismatch"


def worker(n, seed, numba_every, deadline=None, all_constructs=False, only=(), progress=0):
    """Check n distinct programs drawn by hypothesis from `seed`; returns a stats dict.

    Hypothesis draws some programs more than once (a third of them, mostly small ones); a
    repeat is counted and skipped, and drawing goes on until n distinct programs ran, or
    until `deadline` (time.time()). Workers draw from different seeds; the few programs two
    workers both draw are counted once in the summary's distinct count."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hseed

    from . import grammar
    from .check import Outcome, check
    from .grammar import programs

    if all_constructs:
        grammar.AVOID.clear()
    grammar.AVOID.difference_update(only)

    stats = {"tried": 0, "repeats": 0, "discards": collections.Counter(),
             "mismatches": [], "numba": 0, "fd_checked": 0, "worst": 0.0,
             "groups": collections.defaultdict(collections.Counter),     # group -> category
             "refusals": collections.defaultdict(collections.Counter),   # group -> message
             "reasons": collections.defaultdict(collections.Counter),    # group -> mismatch
             "refusal_text": {}}      # message key -> (length of the program, full message)
    seen = set()
    started = time.perf_counter()

    def expired():
        return deadline is not None and time.time() > deadline

    def one(program):
        if len(seen) >= n or expired():
            raise _Done
        if program.source in seen:
            stats["repeats"] += 1
            return
        seen.add(program.source)
        jit = numba_sampled(program, numba_every)
        try:
            out = check(program, jit=jit)
        except Exception as exc:   # noqa: BLE001 - reported, the campaign goes on
            out = Outcome("mismatch", f"the checker raised {type(exc).__name__}",
                          f"program (seed {program.seed}):\n{program.source}\n{exc!r}")
        stats["tried"] += 1
        # the program's garbage collected and the rest frozen, so that Python's cyclic
        # collector walks no earlier program's compiled code again (as tests/conftest.py
        # does after each test)
        gc.collect()
        gc.freeze()
        if progress and stats["tried"] % progress == 0:
            print(f"[worker seed {seed}] {stats['tried']} of {n} programs, "
                  f"{len(stats['mismatches'])} mismatches, "
                  f"{time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        stats["numba"] += jit
        stats["fd_checked"] += out.fd == "checked"
        stats["worst"] = max(stats["worst"], out.err)
        if out.status == "discard":
            stats["discards"][out.reason] += 1
        elif out.status == "mismatch":
            stats["mismatches"].append((out.reason, out.detail, program, jit, out.signature))
            if progress:    # at once, as a reproducer, so a long campaign is useful as it runs
                print(f"[worker seed {seed}] MISMATCH {out.reason}\n{out.detail}\n"
                      f"PARAMS = {tuple(program.params)!r}\nSEED = {program.seed}\n",
                      file=sys.stderr, flush=True)
        cat = category(out)
        for g in program.groups:
            stats["groups"][g][cat] += 1
            if cat == "refused":
                stats["refusals"][g][out.reason] += 1
            elif cat in ("mismatch", "crash"):
                stats["reasons"][g][out.signature] += 1
        if cat == "refused":
            old = stats["refusal_text"].get(out.reason)
            if old is None or len(program.source) < old[0]:
                stats["refusal_text"][out.reason] = (len(program.source),
                                                     out.detail.rsplit("\n", 1)[-1][:400])

    for round_ in range(20):
        missing = n - len(seen)
        if missing <= 0 or expired():
            break
        settings_ = settings(max_examples=missing * 3 // 2 + 10, database=None, deadline=None,
                             phases=[Phase.generate], suppress_health_check=list(HealthCheck),
                             verbosity=Verbosity.quiet)
        try:
            settings_(hseed(seed * 100 + round_)(given(programs())(one)))()
        except _Done:
            break
    stats["sources"] = {hashlib.sha1(s.encode()).hexdigest() for s in seen}
    return stats


def save_case(program, reason, detail):
    """Write a reproducer module under tests/regressions/; returns its path."""
    digest = hashlib.sha1(program.source.encode()).hexdigest()[:10]
    REGRESSIONS.mkdir(exist_ok=True)
    path = REGRESSIONS / f"fuzz_{digest}.py"
    where = "\n".join(line for line in detail.splitlines() if "argnums" in line or "adjit" in line
                      or "reference" in line or "differences" in line)[:600]
    path.write_text(
        f'"""Found by the program fuzzer ({time.strftime("%Y-%m-%d")}): {reason}.\n\n'
        f"{where}\n\nCause and fix: (write them here when fixing the bug)\n\"\"\"\n"
        f"PARAMS = {program.params!r}\n"
        f"SEED = {program.seed}\n"
        + (f"GROUPS = {tuple(program.groups)!r}\n" if program.groups else "") +
        f"SOURCE = '''\\\n{program.source}'''\n", encoding="utf-8")
    return path


def _run_job(job):
    return worker(*job)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=1000, help="programs to try (default 1000)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--numba-every", type=int, default=5,
                        help="also compile 1 program in K with numba (default 5; 0: never)")
    parser.add_argument("--time-limit", type=float, default=None,
                        help="stop drawing programs after this many seconds")
    parser.add_argument("--no-save", action="store_true",
                        help="do not write reproducers to tests/regressions/")
    parser.add_argument("--all-constructs", action="store_true",
                        help="also draw the programs that meet known adjit bugs "
                             "(grammar.AVOID) and report them")
    from . import grammar
    parser.add_argument("--only", action="append", default=[], choices=sorted(grammar.GROUPS),
                        metavar="GROUP", help="draw this construct group (grammar.GROUPS) in "
                        "nearly every program; repeatable. Groups: "
                        + ", ".join(grammar.GROUPS))
    parser.add_argument("--groups", action="store_true",
                        help="draw every construct group (grammar.GROUPS) too, reporting and "
                             "saving as an ordinary campaign (make fuzz)")
    parser.add_argument("--progress", type=int, default=250, metavar="K",
                        help="each worker prints a line to stderr every K programs, and "
                             "each mismatch (with its program) as it is found (default "
                             "250; 0: neither)")
    parser.add_argument("--chunk", type=int, default=0, metavar="K",
                        help="run each worker's programs K at a time, each K in a fresh "
                             "process (a long campaign's worker otherwise keeps every "
                             "compiled program: gigabytes after a thousand); each chunk "
                             "draws from its own seed. Default 0: one process per worker")
    parser.add_argument("--first-chunk", type=int, default=0, metavar="C",
                        help="with --chunk: start at each worker's chunk C, continuing a "
                             "campaign that stopped (chunks 0..C-1 ran before; the same "
                             "seed and -n draw the same programs as one whole run)")
    parser.add_argument("--save", action="store_true",
                        help="save reproducers even with --all-constructs or --only")
    parser.add_argument("--reduce-per-signature", type=int, default=None, metavar="K",
                        help="reduce only the K smallest mismatching programs of each failure "
                             "signature (default: all; 1 with --all-constructs or --only)")
    opts = parser.parse_args(argv)
    explore = opts.all_constructs or bool(opts.only)
    if opts.groups:
        opts.only = sorted(set(opts.only) | set(grammar.GROUPS))
    save = not opts.no_save and (opts.save or not explore)
    per_signature = opts.reduce_per_signature
    if per_signature is None:
        per_signature = 1 if explore else 0

    start = time.perf_counter()
    workers = max(1, min(opts.workers, opts.n))
    shares = [opts.n // workers + (k < opts.n % workers) for k in range(workers)]
    deadline = None if opts.time_limit is None else time.time() + opts.time_limit
    jobs = [(share, opts.seed * 1000 + k, opts.numba_every, deadline, opts.all_constructs,
             tuple(opts.only), opts.progress) for k, share in enumerate(shares)]
    if opts.chunk > 0:      # worker k's chunk c draws from seed (seed * 1000 + k) * 1000 + c
        jobs = [(min(opts.chunk, share - c * opts.chunk), (opts.seed * 1000 + k) * 1000 + c)
                + job[2:] for k, (share, job) in enumerate(zip(shares, jobs))
                for c in range(opts.first_chunk, -(-share // opts.chunk))]
        if not jobs:
            parser.error(f"--first-chunk {opts.first_chunk}: no chunk left")
    if opts.all_constructs:
        grammar.AVOID.clear()       # for the reductions below, in this process
    grammar.AVOID.difference_update(opts.only)
    if workers == 1 and not opts.chunk:
        results = [worker(*jobs[0])]
    else:
        with multiprocessing.get_context("spawn").Pool(
                workers, maxtasksperchild=1 if opts.chunk else None) as pool:
            results = []
            for job, r in zip(jobs, pool.imap(_run_job, jobs, chunksize=1)):
                results.append(r)
                if opts.chunk:      # a line per finished chunk: a stopped campaign's record
                    print(f"chunk seed {job[1]}: {r['tried']} programs, "
                          f"{sum(r['discards'].values())} discarded, "
                          f"{len(r['mismatches'])} mismatches "
                          f"({time.perf_counter() - start:.0f} s)", flush=True)
    elapsed = time.perf_counter() - start

    tried = sum(r["tried"] for r in results)
    repeats = sum(r["repeats"] for r in results)
    distinct = len(set().union(*(r["sources"] for r in results)))
    discards = sum((r["discards"] for r in results), collections.Counter())
    mismatches = [m for r in results for m in r["mismatches"]]
    n_discard = sum(discards.values())
    print(f"programs tried:     {tried} ({distinct} distinct across workers; "
          f"{repeats} repeated draws skipped)")
    print(f"discarded:          {n_discard} ({100.0 * n_discard / max(tried, 1):.1f}%)")
    for reason, count in discards.most_common():
        print(f"    {count:6d}  {reason}")
    print(f"mismatches:         {len(mismatches)}")
    print(f"numba-compiled:     {sum(r['numba'] for r in results)} programs "
          f"(value_and_grad and grad each; every program runs all argnums subsets)")
    print(f"finite differences: agreed on {sum(r['fd_checked'] for r in results)} programs "
          f"(skipped where stop_gradient, a tie or a branch flip makes them meaningless)")
    print(f"largest |adjit - reference| / scale (float32: with its floors): "
          f"{max(r['worst'] for r in results):.2e}")
    print(f"time:               {elapsed:.0f} s on {workers} worker(s)"
          + (" (stopped at the time limit)" if opts.time_limit and tried < opts.n else ""))
    print_groups(results)

    if mismatches:
        from .check import reduce
        seen = set()
        by_signature = collections.defaultdict(list)
        for m in sorted(mismatches, key=lambda m: len(m[2].source)):
            if m[2].source not in seen:
                seen.add(m[2].source)
                by_signature[m[4]].append(m)
        chosen = []
        for signature, ms in by_signature.items():
            if per_signature:
                print(f"\n{len(ms)} distinct program(s) fail as: {signature}")
            chosen += ms[:per_signature] if per_signature else ms
        for reason, detail, program, jit, _ in chosen:
            print(f"\n== {reason}\n{detail}")
            small = reduce(program, jit)
            print(f"-- reduced to:\n{small.source}")
            from .check import check
            out = check(small, jit)
            if out.status != "mismatch":
                print(f"-- not saved: it is now {out.status} ({out.reason})")
            elif save:
                print(f"-- saved {save_case(small, out.reason, out.detail)}")
        return 1
    return 0


def print_groups(results):
    """Per construct group: programs drawing it, outcomes, refusal and failure messages."""
    groups = collections.defaultdict(collections.Counter)
    refusals = collections.defaultdict(collections.Counter)
    reasons = collections.defaultdict(collections.Counter)
    texts = {}
    for r in results:
        for g, c in r["groups"].items():
            groups[g].update(c)
        for g, c in r["refusals"].items():
            refusals[g].update(c)
        for g, c in r["reasons"].items():
            reasons[g].update(c)
        for k, v in r["refusal_text"].items():
            if k not in texts or v[0] < texts[k][0]:
                texts[k] = v
    if not groups:
        return
    print("construct groups (programs that drew each; a program may draw several):")
    for g in sorted(groups):
        c = groups[g]
        print(f"  {g}: {sum(c.values())} programs: " + ", ".join(
            f"{k} {c[k]}" for k in ("ok", "refused", "mismatch", "crash", "discarded")))
        for msg, n in refusals[g].most_common(8):
            print(f"      refused  {n:5d}  {msg[len('adjit refused: '):]}")
            print(f"                     e.g. {texts[msg][1]}")
        for sig, n in reasons[g].most_common(8):
            print(f"      failed   {n:5d}  {sig[:200]}")

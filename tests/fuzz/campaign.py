"""`make fuzz N=10000` (python -m fuzz): run N generated programs through adjit and the reference AD.

    PYTHONPATH=tests python -m fuzz -n 10000 [--workers 2] [--seed 0] [--numba-every 5]

Prints programs tried, discarded (and why), mismatches, and the time taken. Each mismatch is
reduced to a small program that fails the same way and saved as
tests/regressions/fuzz_<hash>.py, which `make test` runs from then on (write down the cause
in its docstring when you fix it). Exit status 1 when anything mismatched.
"""
import argparse
import collections
import hashlib
import multiprocessing
import os
import pathlib
import time

REGRESSIONS = pathlib.Path(__file__).resolve().parent.parent / "regressions"


def numba_sampled(program, every):
    """Whether this program is also compiled by numba: 1 in `every`, fixed by its source."""
    if every <= 0:
        return False
    digest = hashlib.sha1(program.source.encode()).digest()
    return int.from_bytes(digest[:4], "big") % every == 0


def _digest(program):
    return int.from_bytes(hashlib.sha1(program.source.encode()).digest()[4:8], "big")


def worker(n, seed, numba_every, part=0, parts=1):
    """Check n distinct programs drawn by hypothesis from `seed`; returns a stats dict.

    Hypothesis draws some programs more than once (a third of them, mostly small ones); a
    repeat is counted and skipped, and drawing goes on until n distinct programs ran. Worker
    `part` of `parts` takes only the programs whose hash falls in its part, so no two
    workers check the same program."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from .check import check
    from .grammar import programs

    stats = {"tried": 0, "repeats": 0, "ok": 0, "discards": collections.Counter(),
             "mismatches": [], "numba": 0, "fd_checked": 0, "worst": 0.0}
    seen = set()

    def one(program):
        if len(seen) >= n:
            return
        if program.source in seen:
            stats["repeats"] += 1
            return
        if _digest(program) % parts != part:
            return
        seen.add(program.source)
        jit = numba_sampled(program, numba_every)
        out = check(program, jit=jit)
        stats["tried"] += 1
        stats["numba"] += jit
        stats["fd_checked"] += out.fd == "checked"
        stats["worst"] = max(stats["worst"], out.err)
        if out.status == "ok":
            stats["ok"] += 1
        elif out.status == "discard":
            stats["discards"][out.reason] += 1
        else:
            stats["mismatches"].append((out.reason, out.detail, program, jit))

    for round_ in range(20):
        missing = n - len(seen)
        if missing <= 0:
            break
        settings_ = settings(max_examples=(missing * 3 // 2 + 10) * parts, database=None, deadline=None,
                             phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        settings_(hseed(seed * 100 + round_)(given(programs())(one)))()
    stats["sources"] = {hashlib.sha1(s.encode()).hexdigest() for s in seen}
    return stats


def save(program, reason, detail):
    """Write a reproducer module under tests/regressions/; returns its path."""
    digest = hashlib.sha1(program.source.encode()).hexdigest()[:10]
    REGRESSIONS.mkdir(exist_ok=True)
    path = REGRESSIONS / f"fuzz_{digest}.py"
    first = detail.splitlines()
    where = "\n".join(line for line in first if "argnums" in line or "adjit" in line
                      or "reference" in line)[:600]
    path.write_text(
        f'"""Found by the program fuzzer ({time.strftime("%Y-%m-%d")}): {reason}.\n\n'
        f"{where}\n\nCause and fix: (write them here when fixing the bug)\n\"\"\"\n"
        f"PARAMS = {program.params!r}\n"
        f"SEED = {program.seed}\n"
        f"SOURCE = '''\\\n{program.source}'''\n", encoding="utf-8")
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=1000, help="programs to try (default 1000)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--numba-every", type=int, default=5,
                        help="also compile 1 program in K with numba (default 5; 0: never)")
    parser.add_argument("--no-save", action="store_true",
                        help="do not write reproducers to tests/regressions/")
    opts = parser.parse_args(argv)

    start = time.perf_counter()
    workers = max(1, min(opts.workers, opts.n))
    shares = [opts.n // workers + (k < opts.n % workers) for k in range(workers)]
    jobs = [(share, opts.seed * 1000 + k, opts.numba_every, k, workers)
            for k, share in enumerate(shares)]
    if workers == 1:
        results = [worker(*jobs[0])]
    else:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            results = pool.starmap(worker, jobs)
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
    print(f"largest |adjit - reference| / scale: {max(r['worst'] for r in results):.2e}")
    print(f"time:               {elapsed:.0f} s on {workers} worker(s)")

    if mismatches:
        from .check import reduce
        seen = set()
        for reason, detail, program, jit in mismatches:
            if program.source in seen:
                continue
            seen.add(program.source)
            print(f"\n== {reason}\n{detail}")
            small = reduce(program, jit)
            print(f"-- reduced to:\n{small.source}")
            if not opts.no_save:
                from .check import check
                out = check(small, jit)
                print(f"-- saved {save(small, out.reason, out.detail)}")
        return 1
    return 0


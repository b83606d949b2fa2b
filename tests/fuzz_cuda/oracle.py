"""The kernel fuzzer's oracle, in plain Python and numpy (nothing from adjit).

`run(kernel, launch, args)` runs a numba.cuda kernel's Python function (`kernel.py_func`)
sequentially over every thread of the launch, in thread order, with a small fake `cuda`
module (grid, gridsize, threadIdx/blockIdx/blockDim/gridDim, atomic.add) in place of
numba's. With `track=True` every array argument is wrapped so that each element remembers
which threads read it, wrote it, and added to it with cuda.atomic.add; `races()` lists the
conflicts:

- two different threads write one element without atomics ("write-write");
- a thread reads an element another thread writes without atomics ("read-write");
- a thread writes an element without atomics that another thread adds to atomically
  ("write-atomic");
- a thread reads an element another thread adds to atomically: an accumulator read in the
  launch that adds to it ("atomic-read").

A kernel without races computes the same in every order of its threads (up to the rounding
of atomic sums), so the sequential run is its meaning, and finite differences of it are
its derivatives: `fd_gradients` takes central differences of the scalar objective
L = sum over written arrays W of <cot_W, W after the launch> with respect to the initial
values of the differentiated arrays, at two step sizes that must agree.
"""
import types

import numpy as np


class Unsupported(Exception):
    """The kernel uses something the sequential oracle cannot run (e.g. syncthreads)."""


class _Dim3:
    def __init__(self, x=0, y=0, z=0):
        self.x, self.y, self.z = x, y, z


def _dim3(v):
    if isinstance(v, int):
        return (v, 1, 1)
    v = tuple(v) + (1,) * (3 - len(v))
    return v


class FakeCuda:
    """The parts of numba.cuda a kernel calls, for one thread at a time (set by `at`)."""

    def __init__(self, blocks, threads):
        self.grid_dim = _dim3(blocks)
        self.block_dim = _dim3(threads)
        self.blockDim = _Dim3(*self.block_dim)
        self.gridDim = _Dim3(*self.grid_dim)
        self.threadIdx = _Dim3()
        self.blockIdx = _Dim3()
        self.atomic = _Atomic()
        self.tid = 0

    def threads(self):
        """(block, thread) index triples in launch order: blocks, then threads, x fastest."""
        gx, gy, gz = self.grid_dim
        bx, by, bz = self.block_dim
        for cz in range(gz):
            for cy in range(gy):
                for cx in range(gx):
                    for tz in range(bz):
                        for ty in range(by):
                            for tx in range(bx):
                                yield (cx, cy, cz), (tx, ty, tz)

    def at(self, tid, block, thread):
        self.tid = tid
        self.blockIdx = _Dim3(*block)
        self.threadIdx = _Dim3(*thread)

    def grid(self, ndim):
        g = tuple(self.blockIdx.__dict__[a] * self.block_dim[k] + self.threadIdx.__dict__[a]
                  for k, a in enumerate("xyz"))
        return g[0] if ndim == 1 else g[:ndim]

    def gridsize(self, ndim):
        g = tuple(self.grid_dim[k] * self.block_dim[k] for k in range(3))
        return g[0] if ndim == 1 else g[:ndim]

    def syncthreads(self):
        raise Unsupported("cuda.syncthreads: threads cannot run one after another")

    def jit(self, *args, **kwargs):          # a decorator inside a rebound function
        if args and callable(args[0]):
            return args[0]
        return lambda f: f


class _Atomic:
    @staticmethod
    def add(ary, idx, val):
        if isinstance(ary, Tracked):
            return ary.atomic_add(idx, val)
        old = ary[idx]
        ary[idx] = old + val
        return old


class Log:
    """Per element of every tracked array: the threads that read, wrote, added atomically."""

    def __init__(self):
        self.tid = 0
        self.reads, self.writes, self.atomics = {}, {}, {}

    @staticmethod
    def _note(table, key, tid):
        table.setdefault(key, set()).add(tid)

    def races(self, names):
        """Conflicts between threads, one per element and kind: (kind, array, index,
        threads). `names` maps array id -> (name, shape)."""
        out = []
        keys = set(self.reads) | set(self.writes) | set(self.atomics)
        for key in sorted(keys):
            name, shape = names[key[0]]
            index = np.unravel_index(key[1], shape)
            index = tuple(int(k) for k in index)
            index = index[0] if len(index) == 1 else index
            w = self.writes.get(key, set())
            a = self.atomics.get(key, set())
            r = self.reads.get(key, set())
            if len(w) > 1:
                out.append(("write-write", name, index, tuple(sorted(w))))
            elif w and a - w:
                out.append(("write-atomic", name, index, tuple(sorted(w | a))))
            elif w and r - w:
                out.append(("read-write", name, index, tuple(sorted(w | r))))
            elif a and any(a - {t} for t in r):
                out.append(("atomic-read", name, index, tuple(sorted(a | r))))
        return out


class Tracked:
    """A numpy array that logs which thread reads, writes or atomically adds each element."""

    def __init__(self, array, log):
        self.array = array
        self.log = log
        self.shape = array.shape
        self.ndim = array.ndim
        self.size = array.size
        self.dtype = array.dtype

    def __len__(self):
        return len(self.array)

    def _flat(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        if len(idx) != self.ndim or not all(isinstance(k, (int, np.integer)) for k in idx):
            raise Unsupported(f"index {idx!r}: the oracle tracks single elements only")
        norm = []
        for k, n in zip(idx, self.shape):
            k = int(k)
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for axis with size {n}")
            norm.append(k % n)
        return (id(self), int(np.ravel_multi_index(norm, self.shape)))

    def __getitem__(self, idx):
        key = self._flat(idx)
        Log._note(self.log.reads, key, self.log.tid)
        return self.array[idx]

    def __setitem__(self, idx, value):
        key = self._flat(idx)
        Log._note(self.log.writes, key, self.log.tid)
        self.array[idx] = value

    def atomic_add(self, idx, value):
        key = self._flat(idx)
        Log._note(self.log.atomics, key, self.log.tid)
        old = self.array[idx]
        self.array[idx] = old + value
        return old


def rebind(fn, fake, cache=None):
    """`fn` with the name `cuda` bound to `fake` and the device functions it calls (objects
    with a py_func) rebound the same way."""
    cache = {} if cache is None else cache
    if id(fn) in cache:
        return cache[id(fn)]
    g = dict(fn.__globals__)
    out = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
    cache[id(fn)] = out
    for name in fn.__code__.co_names:
        v = g.get(name)
        if name == "cuda":
            g[name] = fake
        elif v is not None and callable(getattr(v, "py_func", None)):
            g[name] = rebind(v.py_func, fake, cache)
    return out


class Run:
    """The result of a sequential run: the arguments after it (copies) and, when tracked, the
    races and which arguments were read / written."""

    def __init__(self, args, races=None, read=(), written=()):
        self.args = args
        self.races = races
        self.read = set(read)
        self.written = set(written)


def run(kernel, launch, args, track=False):
    """Run `kernel` (a numba.cuda kernel or its Python function) sequentially over all threads
    of `launch` = (blocks, threads) on copies of `args`."""
    fn = getattr(kernel, "py_func", None) or kernel
    blocks, threads = launch
    fake = FakeCuda(blocks, threads)
    f = rebind(fn, fake)
    arrays = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    log = Log() if track else None
    call = [Tracked(a, log) if track and isinstance(a, np.ndarray) else a for a in arrays]
    for tid, (block, thread) in enumerate(fake.threads()):
        fake.at(tid, block, thread)
        if log is not None:
            log.tid = tid
        f(*call)
    if not track:
        return Run(arrays)
    names = {id(c): (p, c.shape) for p, c in zip(fn.__code__.co_varnames, call)
             if isinstance(c, Tracked)}
    by_id = {id(c): p for p, c in zip(fn.__code__.co_varnames, call) if isinstance(c, Tracked)}
    read = {by_id[k[0]] for k in log.reads}
    written = {by_id[k[0]] for k in list(log.writes) + list(log.atomics)}
    return Run(arrays, log.races(names), read, written)


def objective(kernel, launch, args, cots):
    """L = sum over k in cots of <cots[k], args[k] after the launch> (sequential run)."""
    after = run(kernel, launch, args).args
    return sum(float(np.sum(c * after[k])) for k, c in cots.items())


def fd_gradients(kernel, launch, args, cots, wrt, h=1e-5):
    """Central differences of `objective` w.r.t. the arrays args[k], k in wrt, at steps h and
    h/2: returns ({k: gradient at h}, {k: gradient at h/2})."""
    out = ({}, {})
    for k in wrt:
        for which, step in enumerate((h, h / 2)):
            g = np.zeros_like(args[k], dtype=np.float64)
            for idx in np.ndindex(args[k].shape):
                hi = list(args)
                lo = list(args)
                hi[k] = args[k].copy()
                lo[k] = args[k].copy()
                hi[k][idx] += step
                lo[k][idx] -= step
                g[idx] = (objective(kernel, launch, hi, cots)
                          - objective(kernel, launch, lo, cots)) / (2 * step)
            out[which][k] = g
    return out

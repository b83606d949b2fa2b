"""Gradients through a time loop of CUDA kernel launches, with checkpointed device snapshots.

A simulation on the GPU is often a host loop that launches one step kernel per time step,
reading the state from one buffer and writing the next state into another, then swapping:

    @cuda.jit
    def heat_step(u, alpha, u_new):          # one explicit step of the 2-D heat equation
        i, j = cuda.grid(2)
        n, m = u.shape
        if i < n and j < m:
            if i == 0 or j == 0 or i == n - 1 or j == m - 1:
                u_new[i, j] = u[i, j]
            else:
                u_new[i, j] = u[i, j] + alpha[0] * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1]
                                                    + u[i, j + 1] - 4.0 * u[i, j])

    for step in range(steps):
        heat_step[blocks, threads](u, alpha, u_new)
        u, u_new = u_new, u

`time_loop(kernel, state=(i, o), params=(...))` describes such a loop: `i` and `o` are the
positions of the kernel's state argument and of the argument it writes the next state
into, `params` the positions of the arguments to differentiate besides the state (arrays:
a scalar coefficient is a one-element array `alpha[0]`). The loop is launched with a grid,
like the kernel, and takes the kernel's arguments without the output state, then the
number of steps:

    loop = adjit.cuda.time_loop(heat_step, state=(0, 2), params=(1,))
    u_T = loop.run[blocks, threads](u0, alpha, steps)          # the final state
    u0_bar, alpha_bar = loop.vjp[blocks, threads](u0, alpha, steps, u_T_bar, snapshots=8)

    fwd = loop.forward[blocks, threads](u0, alpha, steps, snapshots=8)
    loss = f(fwd.state)                                        # the final state, then
    u0_bar, alpha_bar = fwd.backward(f_bar(fwd.state))         # a cotangent that needs it

`vjp` returns the gradient of <u_T_bar, u_T> (u_T_bar an array of the state's shape, or a
number for every element) with respect to the initial state and each parameter, in that
order, as device arrays. It runs the steps forward keeping at most `snapshots` copies of the
state on the device, then reverses the steps last to first with the kernel's adjoint
(adjit.cuda.adjoint_kernel), recomputing the states between snapshots from the nearest one
on a binomial ("Revolve") schedule: with s snapshots and T steps each step runs forward
again at most r times, for the least r with C(s + r, s) >= T. `snapshots=None` takes about
sqrt(T) (about 2.4 forward launches per step for 1000 steps); `snapshots >= steps` keeps
every state and recomputes nothing. `fwd.stats` counts the launches (docs/cuda_time_loops.md).

Semantics, as the host loop above: the buffer the first step writes starts as a copy of the
initial state (`u_new = u0.copy()`). Elements of the output state the kernel does not write
keep what that buffer held (the state of two steps before); the kernel must then leave the
same elements unwritten at every step (a boundary it never writes keeps its initial values).
A kernel that reads its output-state argument (a scheme with two time levels, such as
leapfrog `u_prev[i] = 2 * u[i] - u_prev[i] + ...`) is recognised from its source, and each
snapshot then holds both buffers. Nothing passed is mutated: the initial state and the
cotangent are copied into the loop's own buffers, NumPy arrays are copied to the device once
per call, and every buffer is allocated once per call, not per step. Other arguments (numbers, arrays the kernel only
reads) are passed to every launch unchanged; the kernel must not write any array but its
output state.
"""
import ast
import numbers

import numpy as np

from .kernel import AdjointKernel
from ..errors import AdjitError
from ..frontend.source import read_function, unwrap
from ..runtime import checkpoint as schedule
from .. import ir

_SHAPE_ATTRS = ("shape", "size", "ndim", "dtype")


def time_loop(kernel, state, params=()):
    """A time loop of launches of `kernel` (a numba.cuda.jit kernel or its Python function).

    state: (position of the state argument, position of the argument the kernel writes the
    next state into). params: the position (int) or positions (tuple) of the arguments to
    differentiate besides the state: arrays, a scalar as a one-element array. Returns a
    TimeLoop; see the module docstring for `run`, `vjp` and `forward`.

    Example (the 2-D heat step of the module docstring):

        loop = adjit.cuda.time_loop(heat_step, state=(0, 2), params=(1,))
        u_T = loop.run[(4, 4), (16, 16)](u0, alpha, 100)
        u0_bar, alpha_bar = loop.vjp[(4, 4), (16, 16)](u0, alpha, 100, w, snapshots=10)
        alpha_bar.copy_to_host()[0]        # d sum(w * u_T) / d alpha
    """
    return TimeLoop(kernel, state, params)


class TimeLoop:
    """A time loop of kernel launches with swapped state buffers (see the module docstring).

    loop.run[grid](*args, steps) -> the final state (a device array)
    loop.vjp[grid](*args, steps, state_bar, snapshots=None) -> (state0_bar, *params_bar)
    loop.forward[grid](*args, steps, snapshots=None) -> LoopForward (.state, .backward(bar))

    `args` are the kernel's arguments without its output state, in its order."""

    def __init__(self, kernel, state, params=()):
        fn = unwrap(kernel)
        src = read_function(fn)
        self.fn = fn
        self.name = src.loc.name
        self._where = f"time_loop of kernel '{src.loc.name}' ({src.loc.filename}, line " \
                      f"{src.loc.firstlineno})"
        self.kernel_params = list(src.params)
        n = len(self.kernel_params)
        sig = f"{src.loc.name}({', '.join(self.kernel_params)})"
        if not (isinstance(state, (tuple, list)) and len(state) == 2
                and all(_is_int(k) for k in state)):
            raise self._error(f"state={state!r} is not a pair of argument positions",
                              f"Pass state=(position of the state the kernel reads, position "
                              f"of the array it writes the next state into), e.g. state=(0, "
                              f"{n - 1}) for {sig}")
        for k in state:
            if not -n <= k < n:
                raise self._error(f"state position {k} is out of range for {sig}",
                                  f"Use positions 0 to {n - 1}")
        s_in, s_out = (k % n for k in state)
        if s_in == s_out:
            raise self._error(f"state={state!r} names argument '{self.kernel_params[s_in]}' "
                              f"as both the state read and the state written",
                              "A time loop reads the state from one array and writes the next "
                              "state into another (swapped after each step): pass the two "
                              "positions, e.g. state=(0, 2) for kernel(u, alpha, u_new)")
        items = (params,) if _is_int(params) else tuple(params) \
            if isinstance(params, (tuple, list)) else None
        if items is None or not all(_is_int(k) for k in items):
            raise self._error(f"params={params!r} is not an int or a tuple of ints",
                              f"Pass the positions of the arguments to differentiate "
                              f"besides the state, e.g. params=(1,) for {sig}")
        plist = []
        for k in items:
            if not -n <= k < n:
                raise self._error(f"params position {k} is out of range for {sig}",
                                  f"Use positions 0 to {n - 1}")
            k %= n
            if k in (s_in, s_out):
                raise self._error(f"params names argument '{self.kernel_params[k]}', which "
                                  f"is part of state={state!r}",
                                  "The gradient with respect to the initial state is always "
                                  "returned (first); list only the other arguments in params")
            if k in plist:
                raise self._error(f"params={params!r} names argument "
                                  f"'{self.kernel_params[k]}' twice", "List each position once")
            plist.append(k)
        self.state = (s_in, s_out)
        self.params = tuple(plist)
        self.arg_positions = [k for k in range(n) if k != s_out]
        """The kernel positions of the arguments run/vjp/forward take (before `steps`)."""
        self.levels = 2 if _reads(src.tree, self.kernel_params[s_out]) else 1
        """State buffers per snapshot: 2 when the kernel reads its output-state argument."""
        self.adjoint = AdjointKernel(kernel, (s_in,) + self.params)
        self._writes = AdjointKernel(kernel, (s_out,))     # its shadows: every written array
        self._kernel = kernel if hasattr(kernel, "__getitem__") else None
        self.run = _Configurable(self, "run", "*args, steps")
        self.vjp = _Configurable(self, "vjp", "*args, steps, state_bar")
        self.forward = _Configurable(self, "forward", "*args, steps")

    def __repr__(self):
        return (f"<adjit time_loop of {self.name} state={self.state} params={self.params}>")

    # ---------------------------------------------------------------------------------------

    def _error(self, problem, advice):
        return AdjitError(f"{self._where}: {problem}. {advice}.")

    def _launchable(self):
        if self._kernel is None:
            from numba import cuda
            self._kernel = cuda.jit(self.fn)
        return self._kernel

    def _prepare(self, args, steps):
        """(steps, kernel argument list with the state buffers left None, initial state, the
        parameters' device arrays), after checking what the user passed."""
        from numba import cuda
        names = self.kernel_params
        expect = ", ".join(names[k] for k in self.arg_positions)
        if steps is None:
            if len(args) != len(self.arg_positions) + 1:
                raise self._error(
                    f"it takes {len(self.arg_positions) + 1} arguments ({expect}, steps); got "
                    f"{len(args)}", "Pass the kernel's arguments without its output state "
                    f"'{names[self.state[1]]}' (the loop allocates it), then the number of steps")
            args, steps = args[:-1], args[-1]
        elif len(args) != len(self.arg_positions):
            raise self._error(f"it takes the arguments {expect} before steps; got {len(args)}",
                              f"Pass the kernel's arguments without its output state "
                              f"'{names[self.state[1]]}'")
        if not _is_int(steps) or steps < 0:
            raise self._error(f"steps={steps!r} is not a number of steps",
                              "Pass an int >= 0 (0 steps: the final state is the initial one)")
        kargs = [None] * len(names)
        for k, a in zip(self.arg_positions, args):
            kargs[k] = a
        s_in = self.state[0]
        u0 = kargs[s_in]
        if not _is_array(u0) or len(u0.shape) == 0:
            raise self._error(f"the state '{names[s_in]}' is a {type(u0).__name__}, not an "
                              f"array", "Pass the initial state as a NumPy or device array")
        if not np.issubdtype(np.dtype(u0.dtype), np.floating):
            raise self._error(f"the state '{names[s_in]}' has dtype {u0.dtype}",
                              "Pass a float32 or float64 array (astype(np.float64))")
        devparams = []
        for k in self.params:
            p = kargs[k]
            if not _is_array(p) or len(p.shape) == 0:
                raise self._error(
                    f"the parameter '{names[k]}' (argument {k}) is a {type(p).__name__}, not an "
                    f"array", f"A differentiated parameter is an array: pass a scalar as a "
                    f"one-element array (np.array([{names[k]}])) and read {names[k]}[0] in the "
                    f"kernel, or leave it out of params")
            if not np.issubdtype(np.dtype(p.dtype), np.floating):
                raise self._error(f"the parameter '{names[k]}' has dtype {p.dtype}",
                                  "Pass a float array (astype(np.float64)) or leave it out of "
                                  "params")
            devparams.append(p if _is_device(p) else cuda.to_device(np.ascontiguousarray(p)))
            kargs[k] = devparams[-1]
        for k, a in enumerate(kargs):
            if k not in self.params and k != s_in and isinstance(a, np.ndarray):
                kargs[k] = cuda.to_device(a)         # once per call, not at every launch
        return steps, kargs, u0, devparams

    def _buffers(self, kargs, u0):
        """Two device buffers holding the initial state (the kernel's state in and out)."""
        from numba import cuda
        dtype = np.dtype(u0.dtype)
        a = cuda.device_array(tuple(u0.shape), dtype)
        b = cuda.device_array(tuple(u0.shape), dtype)
        a.copy_to_device(u0 if _is_device(u0) else np.ascontiguousarray(u0, dtype))
        b.copy_to_device(a)
        kargs[self.state[0]], kargs[self.state[1]] = a, b
        self._check_writes(kargs)
        return a, b

    def _check_writes(self, kargs):
        names = self.kernel_params
        s_in, s_out = self.state
        written = [s[:-4] for s in self._writes.shadows_for(*kargs)[1:]]
        diffed = {names[k] for k in (s_in,) + self.params}
        others = [w for w in written if w not in diffed]      # shadows the adjoint adds
        writes_out = len(self.adjoint.shadows_for(*kargs)) == len(diffed) + 1 + len(others)
        if not writes_out and names[s_in] in written:
            raise self._error(f"state={(s_in, s_out)} looks swapped: the kernel writes "
                              f"'{names[s_in]}', not '{names[s_out]}'",
                              f"Pass state=(position of the state it reads, position of the "
                              f"array it writes), here state={(s_out, s_in)}")
        if written:
            raise self._error(
                f"the kernel writes {', '.join(repr(w) for w in written)} besides its output "
                f"state '{names[s_out]}'", "A time loop's state is one array: write the other "
                "fields into it too (one array u[2, n] for two fields), or launch that kernel "
                "outside the loop")
        if not writes_out:
            raise self._error(f"the kernel does not write its output state '{names[s_out]}'",
                              f"Check state={(s_in, s_out)}: its second position is the array "
                              f"the kernel writes the next state into")

    def _step(self, config, kargs, a, b):
        kargs[self.state[0]], kargs[self.state[1]] = a, b
        self._launchable()[config](*kargs)
        return b, a

    # ---------------------------------------------------------------------------------------

    def _run(self, config, *args, steps=None):
        steps, kargs, u0, _ = self._prepare(args, steps)
        a, b = self._buffers(kargs, u0)
        for _ in range(steps):
            a, b = self._step(config, kargs, a, b)
        return a

    def _forward(self, config, *args, steps=None, snapshots=None):
        steps, kargs, u0, devparams = self._prepare(args, steps)
        if snapshots is None:
            snapshots = int(schedule.auto_snapshots(steps))
        if not _is_int(snapshots) or snapshots < 1:
            raise self._error(f"snapshots={snapshots!r} is not a number of snapshots",
                              "Pass an int >= 1 (the most copies of the state kept on the "
                              "device), or None for about sqrt(steps)")
        a, b = self._buffers(kargs, u0)
        return LoopForward(self, config, kargs, a, b, devparams, steps, int(snapshots))

    def _vjp(self, config, *args, steps=None, snapshots=None):
        want = len(self.arg_positions) + (2 if steps is None else 1)
        if len(args) != want:
            names = [self.kernel_params[k] for k in self.arg_positions]
            names += (["steps"] if steps is None else []) + ["state_bar"]
            raise self._error(f"vjp takes {want} arguments ({', '.join(names)}); got "
                              f"{len(args)}", "Pass the kernel's arguments without its output "
                              "state, the number of steps, then the cotangent of the final "
                              "state (an array of its shape, or a number)")
        state_bar = args[-1]
        state = args[self.arg_positions.index(self.state[0])]
        if _is_array(state_bar) and _is_array(state):      # (a wrong shape: before the run)
            _check_cotangent(self, state_bar, tuple(state.shape), None)
        fwd = self._forward(config, *args[:-1], steps=steps, snapshots=snapshots)
        return fwd.backward(state_bar)


class LoopForward:
    """The forward pass of a time loop, with its snapshots kept on the device.

    `.state`: the final state (a device array of its own). `.backward(state_bar)`: the
    gradient of <state_bar, final state> with respect to the initial state and the loop's
    params, in that order, as device arrays; it may be called again with another cotangent
    (the forward pass then runs once more to lay the snapshots down again). `.stats`: steps,
    snapshots (slots used), levels (buffers per snapshot), forward_launches (the first pass
    and the recomputation), adjoint_launches, of the latest forward and backward passes."""

    def __init__(self, loop, config, kargs, a, b, devparams, steps, snapshots):
        from numba import cuda
        self._loop, self._config, self._kargs = loop, config, kargs
        self._a, self._b = a, b
        self._params = devparams
        self.steps = steps
        self._nslots = int(schedule.slots(steps, snapshots))
        self._snapshots = snapshots
        shape, dtype = tuple(a.shape), a.dtype
        self._slots = [[cuda.device_array(shape, dtype) for _ in range(loop.levels)]
                       for _ in range(self._nslots)]
        self.stats = {"steps": steps, "snapshots": self._nslots, "levels": loop.levels,
                      "forward_launches": 0, "adjoint_launches": 0}
        self._descend()
        self.state = cuda.device_array(shape, dtype)
        self.state.copy_to_device(self._a)
        self._fresh = True

    def _save(self, k):
        self._slots[k][0].copy_to_device(self._a)
        if self._loop.levels == 2:
            self._slots[k][1].copy_to_device(self._b)

    def _restore(self, k):
        self._a.copy_to_device(self._slots[k][0])
        if self._loop.levels == 2:
            self._b.copy_to_device(self._slots[k][1])

    def _advance(self, count):
        for _ in range(count):
            self._a, self._b = self._loop._step(self._config, self._kargs, self._a, self._b)
        self.stats["forward_launches"] += count

    def _descend(self):
        """Run every step from the state in the buffers (the initial one), saving the
        snapshots the schedule starts from."""
        at = schedule.descent(self.steps, self._snapshots)
        k = 0
        for j in range(self.steps):
            if k < len(at) and at[k] == j:
                self._save(k)
                k += 1
            self._advance(1)

    def backward(self, state_bar):
        """(state0_bar, *params_bar): device arrays, the gradient of <state_bar, final
        state>. state_bar: an array of the state's shape (NumPy or device) or a number."""
        from numba import cuda
        loop = self._loop
        shape, dtype = tuple(self._a.shape), self._a.dtype
        bar_out = cuda.device_array(shape, dtype)
        if isinstance(state_bar, numbers.Real) and not isinstance(state_bar, bool):
            _fill(bar_out, float(state_bar))
        else:
            _check_cotangent(loop, state_bar, shape, dtype)
            bar_out.copy_to_device(state_bar if _is_device(state_bar)
                                   else np.ascontiguousarray(state_bar, dtype))
        if not self._fresh:              # a second backward: lay the snapshots down again
            self.stats.update(forward_launches=0, adjoint_launches=0)
            self._restore(0)
            self._descend()
        self._fresh = False
        bar_in = cuda.device_array(shape, dtype)
        _fill(bar_in, 0.0)
        params_bar = []
        for p in self._params:
            params_bar.append(cuda.device_array(tuple(p.shape), p.dtype))
            _fill(params_bar[-1], 0.0)
        st = schedule.start(self.steps, self._snapshots)
        kargs, (s_in, s_out), adjoint = self._kargs, loop.state, loop.adjoint
        while True:
            action = schedule.next_action(st)
            if action == schedule.DONE:
                break
            if action == schedule.RESTORE:
                self._restore(int(st[1]))
            elif action == schedule.ADVANCE:
                self._advance(int(st[2] - st[1]))
            elif action == schedule.SAVE:
                self._save(int(st[1]))
            else:                        # STEP j: the buffers hold state j
                # bar_out holds the cotangent of state j+1, bar_in what reached state j from
                # step j+1 (elements that step did not write). After the launch bar_in is
                # the cotangent of state j and bar_out what reaches state j-1 (the buffer's
                # content before this step): swapped, as the state buffers are.
                kargs[s_in], kargs[s_out] = self._a, self._b
                adjoint[self._config](*kargs, bar_in, *params_bar, bar_out)
                self.stats["adjoint_launches"] += 1
                self._a, self._b = self._b, self._a
                bar_in, bar_out = bar_out, bar_in
        # before step 0 both buffers held the initial state
        _add(bar_out, bar_in)
        return (bar_out, *params_bar)


class _Configurable:
    """`loop.run[grid]` (and vjp, forward): a function launching with that grid, as a kernel
    is launched."""

    def __init__(self, loop, name, args):
        self._loop, self._name, self._args = loop, name, args

    def __getitem__(self, config):
        fn = getattr(self._loop, "_" + self._name)

        def launch(*args, **kwargs):
            return fn(config, *args, **kwargs)
        return launch

    def __call__(self, *args, **kwargs):
        raise self._loop._error("it is launched with a grid, as its kernel",
                                f"Write loop.{self._name}[blocks, threads]({self._args})")


def _check_cotangent(loop, bar, shape, dtype):
    if not _is_array(bar):
        raise loop._error(f"the cotangent is a {type(bar).__name__}",
                          "Pass an array of the state's shape, or a number")
    if tuple(bar.shape) != shape:
        raise loop._error(f"the cotangent has shape {tuple(bar.shape)}, the state {shape}",
                          "Pass an array of the state's shape, or a number")
    if dtype is not None and _is_device(bar) and np.dtype(bar.dtype) != dtype:
        raise loop._error(f"the cotangent has dtype {bar.dtype}, the state {dtype}",
                          "Pass it in the state's dtype (a NumPy array is converted)")


def _is_int(k):
    return isinstance(k, numbers.Integral) and not isinstance(k, bool)


def _is_device(x):
    return hasattr(x, "copy_to_host") and hasattr(x, "shape")


def _is_array(x):
    return isinstance(x, np.ndarray) or _is_device(x)


def _reads(fn_tree, name):
    """Whether a kernel's source may read array `name`: any use but `name[...] = v` and
    `name.shape` (and size, ndim, dtype) counts (passing it to a device function too)."""
    stores, plain = set(), set()
    for node in ir.walk(fn_tree):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                for sub in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name):
                        stores.add(id(sub.value))
        elif isinstance(node, ast.Attribute) and node.attr in _SHAPE_ATTRS \
                and isinstance(node.value, ast.Name):
            plain.add(id(node.value))
    return any(isinstance(node, ast.Name) and node.id == name and id(node) not in stores
               and id(node) not in plain for node in ir.walk(fn_tree))


# elementwise helpers on our own (C-contiguous) buffers -------------------------------------

_HELPERS = {}
_THREADS = 128
_HELPER_SOURCE = """
def fill(x, v):
    i = cuda.grid(1)
    if i < x.shape[0]:
        x[i] = v


def add(x, y):
    i = cuda.grid(1)
    if i < x.shape[0]:
        x[i] += y[i]
"""


def _helpers():
    """Two elementwise kernels, compiled at their first launch. They are built in a namespace
    of their own whose global `cuda` is numba.cuda (numba's simulator swaps that global)."""
    if not _HELPERS:
        from numba import cuda
        ns = {"cuda": cuda}
        exec(compile(_HELPER_SOURCE, "<adjit.cuda_loop helpers>", "exec"), ns)
        _HELPERS.update(fill=cuda.jit(ns["fill"]), add=cuda.jit(ns["add"]))
    return _HELPERS


def _flat(x):
    return x.reshape(int(np.prod(x.shape)))


def _fill(x, value):
    flat = _flat(x)
    n = flat.shape[0]
    _helpers()["fill"][(n + _THREADS - 1) // _THREADS, _THREADS](flat, x.dtype.type(value))


def _add(x, y):
    """x += y, elementwise."""
    fx, fy = _flat(x), _flat(y)
    n = fx.shape[0]
    _helpers()["add"][(n + _THREADS - 1) // _THREADS, _THREADS](fx, fy)


__all__ = ["time_loop", "TimeLoop", "LoopForward"]

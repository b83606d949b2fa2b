"""Finite differences: the independent oracle every gradient test compares against.

One home for them: gradients (`fd_grad`, central differences of second or fourth order),
cotangent-weighted gradients of array results (`fd_weighted`), vector-Jacobian and
Jacobian-vector products (`fd_vjp`, `fd_jvp`), Jacobians and Hessians (`fd_jacobian`,
`fd_hessian`). Every evaluation gets copies of the array arguments: a function that writes
its inputs sees the same values each time."""
import numpy as np


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else _tuple_like(a, _copies(a))
            if isinstance(a, tuple) else a for a in args]


def _tuple_like(t, items):
    """A tuple of `items` of t's own type (a collections.namedtuple stays one)."""
    return type(t)(*items) if hasattr(t, "_fields") else tuple(items)


def _with(args, k, value):
    out = _copies(args)
    out[k] = value
    return out


def stencil(phi, h, order=2):
    """phi'(0) by central differences: second order (truncation ~h^2) or fourth order
    (truncation ~h^4, two more evaluations)."""
    if order == 4:
        return (-phi(2 * h) + 8 * phi(h) - 8 * phi(-h) + phi(-2 * h)) / (12 * h)
    return (phi(h) - phi(-h)) / (2 * h)


def fd_grad(f, args, k, h=1e-6, order=2, dtype=None):
    """d f / d args[k] by central differences (a float, or an array of args[k]'s shape).
    With `dtype`, args[k] is varied as an array of that type (float64 for a float32 one)."""
    x = args[k]
    if isinstance(x, tuple):
        # a tuple: each element varied on its own (integers and booleans: 0)
        g = []
        for j, e in enumerate(x):
            def by_element(*a, j=j):
                t = _copies(x)
                t[j] = a[k]
                return f(*_with(a, k, _tuple_like(x, t)))
            if isinstance(e, tuple) or np.asarray(e).dtype.kind == "f":
                g.append(fd_grad(by_element, _with(args, k, e), k, h, order, dtype))
            else:
                g.append(np.zeros_like(e) if isinstance(e, np.ndarray) else type(e)(0))
        return _tuple_like(x, g)
    if np.ndim(x) == 0:
        return stencil(lambda d: f(*_with(args, k, x + d)), h, order)
    if x.dtype.names:
        # a record array: each float field varied as an array of its own (other fields: 0)
        g = np.zeros_like(x)
        for name in x.dtype.names:
            if x.dtype[name].kind == "f":
                def by_field(*a, name=name):
                    rec = x.copy()
                    rec[name] = a[k]
                    return f(*_with(a, k, rec))
                g[name] = fd_grad(by_field, _with(args, k, x[name].copy()), k, h, order)
        return g
    if dtype is not None:
        x = np.array(x, dtype=dtype)
    g = np.zeros_like(x, dtype=np.float64)
    for idx in np.ndindex(x.shape):
        def phi(d, idx=idx):
            xd = x.copy()
            xd[idx] += d
            return f(*_with(args, k, xd))
        g[idx] = stencil(phi, h, order)
    return g


def fd_weighted(f, args, k, weights, h=1e-6, order=2):
    """d <weights, f(*args)> / d args[k]: the gradient a vjp (or a kernel's adjoint, or a
    time loop's backward) gives for the cotangent `weights`."""
    return fd_grad(lambda *a: np.sum(weights * np.asarray(f(*a))), args, k, h, order)


def fd_vjp(f, args, k, u, h=1e-6, order=2):
    """u^T J with respect to args[k] (fd_weighted)."""
    return fd_weighted(f, args, k, u, h, order)


def fd_jvp(f, args, argnums, tangents, h=1e-6, order=2):
    """J t: the derivative of f along the tangents of the argnums arguments."""
    def phi(d):
        a = _copies(args)
        for k, t in zip(argnums, tangents):
            a[k] = args[k] + d * t
        return np.asarray(f(*a), dtype=np.float64)
    return stencil(phi, h, order)


def fd_jacobian(f, args, k, h=1e-6):
    """d f / d args[k] for an array-valued f: shape f's result + args[k]'s shape."""
    x = np.asarray(args[k], dtype=np.float64)
    cols = []
    for idx in np.ndindex(x.shape or (1,)):
        d = np.zeros(x.shape or (1,))
        d[idx] = h
        hi = (x + d.reshape(x.shape)) if x.ndim else float(x + h)
        lo = (x - d.reshape(x.shape)) if x.ndim else float(x - h)
        cols.append((np.asarray(f(*_with(args, k, hi))) - np.asarray(f(*_with(args, k, lo))))
                    / (2 * h))
    out = np.stack(cols, axis=-1)
    return out.reshape(np.shape(f(*_copies(args))) + x.shape)


def fd_hessian(f, args, k, h=1e-4):
    """d^2 f / d args[k]^2 by central differences of f's values (4 evaluations an entry)."""
    x = np.asarray(args[k], dtype=np.float64)
    n = x.size

    def at(dx):
        return f(*_with(args, k, (x.ravel() + dx).reshape(x.shape) if x.ndim
                        else float(x + dx[0])))
    H = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            ei = np.zeros(n)
            ej = np.zeros(n)
            ei[i] = h
            ej[j] = h
            H[i, j] = (at(ei + ej) - at(ei - ej) - at(ej - ei) + at(-ei - ej)) / (4 * h * h)
    return H.reshape(x.shape + x.shape)


def assert_grad_matches_fd(g, f, args, argnums=0, rtol=1e-5, atol=1e-6):
    """Check a gradient object `g` (built with these argnums) against finite differences."""
    got = g(*args)
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    gots = (got,) if isinstance(argnums, int) else tuple(got)
    assert len(gots) == len(nums)
    for k, value in zip(nums, gots):
        expected = fd_grad(f, args, k)
        assert np.shape(value) == np.shape(args[k])
        np.testing.assert_allclose(value, expected, rtol=rtol, atol=atol,
                                   err_msg=f"d/d arg {k} of {f.__name__}")
    return got


def weighted_output_fd(run, arrays, k, weights, h=1e-6):
    """d <weights, run(*arrays)> / d arrays[k] by central differences (fd_weighted)."""
    return fd_weighted(run, arrays, k, weights, h)


def check_value_and_grad(f, args, argnums=0, forward=None, rtol=1e-6, atol=1e-7,
                         value_rtol=1e-12, built=None):
    """The check most tests of a construct make: adjit.value_and_grad(f, argnums)'s value
    against numba's own compile of f (or `forward`: a dispatcher the test already has, a
    parallel one, ...) and each gradient against central differences of that compile.
    `built`: the value_and_grad object to call, where the test reads it afterwards (its
    .source, its last tape). Returns the gradients as adjit gave them (one array or float for
    an int argnums, a tuple for a tuple)."""
    import adjit
    import numba
    import pytest
    if forward is None:
        forward = f if isinstance(f, numba.core.dispatcher.Dispatcher) else numba.njit(f)
    if built is None:
        built = adjit.value_and_grad(f, argnums=argnums)
    value, grads = built(*args)
    assert value == pytest.approx(forward(*args), rel=value_rtol)
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    gots = grads if isinstance(argnums, tuple) else (grads,)
    assert len(gots) == len(nums)
    name = getattr(f, "__name__", "f")
    for k, g in zip(nums, gots):
        assert np.shape(g) == np.shape(args[k])
        np.testing.assert_allclose(g, fd_grad(forward, args, k), rtol=rtol, atol=atol,
                                   err_msg=f"d/d arg {k} of {name}")
    return grads

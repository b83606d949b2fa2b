"""Central finite differences: the independent oracle every gradient test compares against."""
import numpy as np


def fd_grad(f, args, k, h=1e-6):
    """d f / d args[k] by central differences (a float, or an array of args[k]'s shape)."""
    args = list(args)
    x = args[k]
    if np.ndim(x) == 0:
        hi = list(args)
        hi[k] = x + h
        lo = list(args)
        lo[k] = x - h
        return (f(*hi) - f(*lo)) / (2 * h)
    g = np.zeros_like(x, dtype=np.float64)
    for idx in np.ndindex(x.shape):
        xp = x.copy()
        xp[idx] += h
        xm = x.copy()
        xm[idx] -= h
        hi = list(args)
        hi[k] = xp
        lo = list(args)
        lo[k] = xm
        g[idx] = (f(*hi) - f(*lo)) / (2 * h)
    return g


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
    """d <weights, run(*arrays)> / d arrays[k] by central differences: the gradient a
    kernel's adjoint gives for output cotangents `weights`."""
    g = np.zeros_like(arrays[k])
    for idx in np.ndindex(arrays[k].shape):
        hi = [a.copy() for a in arrays]
        lo = [a.copy() for a in arrays]
        hi[k][idx] += h
        lo[k][idx] -= h
        g[idx] = (np.sum(weights * run(*hi)) - np.sum(weights * run(*lo))) / (2 * h)
    return g

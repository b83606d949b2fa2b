"""Gradients over an ensemble or over chunks of a large array, on Dask (extra `distributed`).

    from dask.distributed import Client
    from adjit import grad
    from adjit.distributed import ensemble_sum, blockwise_vjp

    g = value_and_grad(misfit, argnums=1)
    loss, dtheta = ensemble_sum(client, g, [(y0, theta, data) for y0, data in members])

    dx = blockwise_vjp(f, x, cotangent)     # dask arrays with the same chunks

A gradient pickles as its function and options; a worker process builds it once and reuses
the compiled code for every task it runs (adjit/api.py `_rebuild`). With `cache=True` and
`ADJIT_CACHE_DIR` naming one directory for the client and the workers, a worker loads the
compiled code from disk instead of compiling it.

Nothing here imports dask at module level: `adjit.distributed` imports without the extra,
and each helper says what to install when dask is missing.
"""
import numbers

import numpy as np

from .errors import AdjitError


def _require(module):
    try:
        return __import__(module, fromlist=["_"])
    except ImportError:
        raise AdjitError(f"adjit.distributed needs {module.split('.')[0]}, which is not "
                         "installed. Install the extra: pip install 'adjit[distributed]'.") \
            from None


def _name(fn):
    inner = getattr(fn, "__adjit_function__", None) or getattr(fn, "py_func", None) or fn
    return getattr(inner, "__qualname__", None) or repr(fn)


def add(a, b):
    """The sum of two results of one function: numbers, arrays, or tuples (nested) of them,
    added element by element (the shape `value_and_grad` and a tuple argnums return)."""
    if isinstance(a, tuple):
        if not isinstance(b, tuple) or len(a) != len(b):
            raise AdjitError(f"ensemble members returned results of different shapes: "
                             f"a tuple of {len(a)} and {type(b).__name__}. Every member must "
                             "return the same structure to be summed.")
        return tuple(add(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            raise AdjitError(f"ensemble members returned arrays of shapes {a.shape} and "
                             f"{b.shape}. Every member must return the same shapes to be "
                             "summed.")
        return a + b
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return a + b
    raise AdjitError(f"ensemble members returned {type(a).__name__} and {type(b).__name__}, "
                     "which cannot be summed: return numbers, arrays or tuples of them.")


def _sum(*parts):
    total = parts[0]
    for p in parts[1:]:
        total = add(total, p)
    return total


def _call(fn, args):
    return fn(*args)


class EnsembleError(AdjitError):
    """Some members of an ensemble failed. `errors` maps each failed member's index to its
    exception (an AdjitError raised on a worker is the AdjitError itself); `results` maps
    every other member's index to its result, computed and kept."""

    def __init__(self, message, errors=None, results=None):
        super().__init__(message)
        self.errors = dict(errors or {})
        self.results = dict(results or {})

    def __reduce__(self):
        return (type(self), (self.args[0], self.errors, self.results))


def ensemble_sum(client, fn, members, *, split_every=8, timeout=None):
    """sum(fn(*m) for m in members), each member a task on the Dask `client`'s workers and
    the sum a tree of additions on the workers (`split_every` results per addition): only
    the total comes back. `fn` is a gradient (`grad`, `value_and_grad`, `vjp` with its
    cotangent among the member's arguments) or any picklable function; a member is a tuple
    of arguments (or one argument). Results are numbers, arrays or tuples of them (summed
    element by element).

    If members fail, an `EnsembleError` (an AdjitError) names the function and the failed
    members with their errors; its `results` holds the other members' results. `timeout`
    (seconds) bounds the wait for the members and for the sum (dask's TimeoutError)."""
    distributed = _require("dask.distributed")
    members = [m if isinstance(m, tuple) else (m,) for m in members]
    if not members:
        raise AdjitError(f"ensemble_sum of '{_name(fn)}' got no members: pass a list of "
                         "argument tuples, one per member.")
    if not isinstance(split_every, int) or split_every < 2:
        raise AdjitError(f"ensemble_sum: split_every={split_every!r}; pass an int of 2 or "
                         "more (results added per task).")
    [remote_fn] = client.scatter([fn], broadcast=True, hash=False)
    futures = client.map(_call, [remote_fn] * len(members), members, pure=False)
    distributed.wait(futures, timeout=timeout)
    failed = {k: f.exception() for k, f in enumerate(futures) if f.status == "error"}
    if failed:
        done = {k: f for k, f in enumerate(futures) if k not in failed}
        results = dict(zip(done, client.gather(list(done.values()))))  # (all finished)
        first, exc = next(iter(failed.items()))
        raise EnsembleError(
            f"{len(failed)} of {len(members)} members of the ensemble of '{_name(fn)}' "
            f"failed (members {sorted(failed)[:10]}); member {first}: "
            f"{type(exc).__name__}: {exc}", failed, results)
    level = futures
    while len(level) > 1:
        level = [client.submit(_sum, *level[k:k + split_every], pure=False)
                 for k in range(0, len(level), split_every)]
    return level[0].result(timeout)


def _vjp_block(x, g, vjp_fn, args):
    out = vjp_fn(x, *args, g)
    return out[1]


def _grad_block(x, grad_fn, args):
    return grad_fn(x, *args)


def blockwise_vjp(f, x, cotangent, *args, **options):
    """The vector-Jacobian product of a function that maps each block of `x` to the same
    block of its result (elementwise, or row by row with whole rows in each block), over a
    dask array: `vjp(f)` applied block by block with `dask.array.map_blocks`, lazily; equal
    to the vjp of the whole array. `cotangent` is a dask array chunked like `x`; `args` are
    the same for every block (numbers or small arrays); `options` go to adjit.vjp. Returns
    a dask array chunked like `x` (call `.compute()`)."""
    da = _require("dask.array")
    from .api import vjp
    if not isinstance(x, da.Array):
        raise AdjitError(f"blockwise_vjp of '{_name(f)}': x is a {type(x).__name__}; pass a "
                         "dask array (dask.array.from_array(x, chunks=...)).")
    cotangent = da.asarray(cotangent)
    if cotangent.shape != x.shape:
        raise AdjitError(f"blockwise_vjp of '{_name(f)}': the cotangent has shape "
                         f"{cotangent.shape} and x {x.shape}: a blockwise function's result "
                         "has the shape of its argument.")
    cotangent = cotangent.rechunk(x.chunks)
    return da.map_blocks(_vjp_block, x, cotangent, vjp_fn=vjp(f, **options), args=args,
                         dtype=x.dtype, meta=np.empty((0,) * x.ndim, x.dtype))


def blockwise_grad(f, x, *args, **options):
    """The gradient of sum(f(block) for each block of x) - a loss that is a sum of terms,
    each of one block of `x` (`f` float-valued) - over a dask array: `grad(f)` block by
    block with `dask.array.map_blocks`, lazily. Returns a dask array chunked like `x`."""
    da = _require("dask.array")
    from .api import grad
    if not isinstance(x, da.Array):
        raise AdjitError(f"blockwise_grad of '{_name(f)}': x is a {type(x).__name__}; pass a "
                         "dask array (dask.array.from_array(x, chunks=...)).")
    return da.map_blocks(_grad_block, x, grad_fn=grad(f, **options), args=args,
                         dtype=x.dtype, meta=np.empty((0,) * x.ndim, x.dtype))

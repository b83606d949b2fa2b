"""Gradients on Dask: an ensemble's summed gradient (adjit.distributed.ensemble_sum), a vjp
over the chunks of a dask array, gradients compiled once per worker process and loaded from
a shared cache, and errors on workers reaching the client. A LocalCluster of two worker
processes on this machine; every wait is bounded."""
import math
import os
import pickle

import numba
import numpy as np
import pytest

import adjit
from adjit import AdjitError
from adjit.distributed import EnsembleError, add, blockwise_grad, blockwise_vjp, ensemble_sum

distributed = pytest.importorskip("dask.distributed")
da = pytest.importorskip("dask.array")

TIMEOUT = 120


def misfit(theta, y0, data):
    """A damped nonlinear oscillator's squared misfit to data, by explicit Euler."""
    y, v = y0, 0.0
    s = 0.0
    for k in range(data.shape[0]):
        a = -theta[0] * math.sin(y) - theta[1] * v
        y = y + 0.02 * v
        v = v + 0.02 * a
        s += (y - data[k]) ** 2
    return s


def softplus(x):
    return np.log1p(np.exp(x))


def energy(x):
    return np.sum(x * x * x - 2.0 * x)


def _members(n, length=40, seed=0):
    rng = np.random.default_rng(seed)
    theta = np.array([1.3, 0.2])
    return theta, [(theta, float(y0), rng.normal(size=length))
                   for y0 in np.linspace(0.1, 1.5, n)]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    cache = str(tmp_path_factory.mktemp("adjit-cache"))
    old = os.environ.get("ADJIT_CACHE_DIR")
    os.environ["ADJIT_CACHE_DIR"] = cache         # the workers inherit it
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=50)
    c = distributed.Client(cluster, timeout=TIMEOUT)
    try:
        yield c
    finally:
        c.close(timeout=TIMEOUT)
        cluster.close(timeout=TIMEOUT)
        if old is None:
            os.environ.pop("ADJIT_CACHE_DIR", None)
        else:
            os.environ["ADJIT_CACHE_DIR"] = old


def test_ensemble_sum_equals_the_serial_sum_and_differences(client):
    g = adjit.value_and_grad(misfit)
    theta, members = _members(12)
    value, grad = ensemble_sum(client, g, members, split_every=3, timeout=TIMEOUT)
    serial = [g(*m) for m in members]
    assert value == pytest.approx(sum(v for v, _ in serial), rel=1e-13)
    np.testing.assert_allclose(grad, np.sum([d for _, d in serial], axis=0), rtol=1e-13)

    def total(th):
        return sum(misfit(th, y0, data) for _, y0, data in members)
    h = 1e-6
    fd = [(total(theta + h * e) - total(theta - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(grad, fd, rtol=1e-6)


def _pid_and_identity(g):
    return os.getpid(), id(g), len(g._specs)


def test_a_gradient_compiles_once_per_worker(client):
    """Each task carries its own pickled copy of the gradient; a worker unpickles every copy
    to one object, so it builds (and compiles) once."""
    g = adjit.grad(misfit)
    _, members = _members(2)
    assert client.submit(g, *members[0], pure=False).result(TIMEOUT).shape == (2,)
    seen = [f.result(TIMEOUT) for f in client.map(_pid_and_identity, [g] * 16, pure=False)]
    by_pid = {}
    for pid, ident, _ in seen:
        by_pid.setdefault(pid, set()).add(ident)
    assert all(len(ids) == 1 for ids in by_pid.values()), by_pid
    assert max(n for _, _, n in seen) <= 1
    assert pickle.loads(pickle.dumps(g)) is g        # in this process, the original


def _cache_hits(g, args):
    g(*args)
    stats = g._called.dispatcher.stats
    return sum(stats.cache_hits.values()), sum(stats.cache_misses.values())


@pytest.mark.skipif(numba.config.OPT == 0, reason="numba caches nothing at NUMBA_OPT=0 (the "
                    "unused globals of linked helpers stay): tests/test_optimized.py runs this "
                    "test at numba's default level")
def test_workers_load_the_compiled_gradient_from_the_shared_cache(client):
    g = adjit.grad(energy, cache=True)
    x = np.linspace(-1.0, 1.0, 7)
    np.testing.assert_allclose(g(x), 3.0 * x * x - 2.0, rtol=1e-14)   # compiled here
    per_worker = client.run(_cache_hits, g, (x,), wait=True)
    assert len(per_worker) == 2
    for hits, misses in per_worker.values():
        assert hits >= 1 and misses == 0, per_worker


def test_failed_members_reach_the_client_and_the_others_are_kept(client):
    g = adjit.grad(misfit)
    theta, members = _members(4)
    bad = (np.array([1, 2]), 0.5, members[0][2])      # an integer array to differentiate
    with pytest.raises(EnsembleError) as info:
        ensemble_sum(client, g, members[:2] + [bad] + members[2:], timeout=TIMEOUT)
    err = info.value
    assert isinstance(err, AdjitError)
    assert "misfit" in str(err) and "member 2" in str(err)
    assert list(err.errors) == [2] and isinstance(err.errors[2], AdjitError)
    assert "int64" in str(err.errors[2])
    assert sorted(err.results) == [0, 1, 3, 4]
    np.testing.assert_allclose(err.results[3], g(*members[2]), rtol=1e-14)


def test_blockwise_vjp_and_grad_equal_the_whole_array(client):
    x = np.linspace(-2.0, 2.0, 103)
    u = np.cos(np.arange(103.0))
    dx = da.from_array(x, chunks=25)
    du = da.from_array(u, chunks=40)                  # rechunked to x's chunks
    got = client.compute(blockwise_vjp(softplus, dx, du)).result(TIMEOUT)
    whole = adjit.vjp(softplus)(x, u)[1]
    np.testing.assert_allclose(got, whole, rtol=1e-14)
    np.testing.assert_allclose(got, u / (1.0 + np.exp(-x)), rtol=1e-13)
    got = client.compute(blockwise_grad(energy, dx)).result(TIMEOUT)
    np.testing.assert_allclose(got, 3.0 * x * x - 2.0, rtol=1e-13)


def test_bad_input_to_the_helpers():
    with pytest.raises(AdjitError, match="no members"):
        ensemble_sum(None, adjit.grad(energy), [])
    with pytest.raises(AdjitError, match="dask array"):
        blockwise_vjp(softplus, np.ones(3), np.ones(3))
    with pytest.raises(AdjitError, match="shapes"):
        add(np.ones(2), np.ones(3))
    assert add((1.0, np.ones(2)), (2.0, np.ones(2)))[0] == 3.0


_SCRIPT = '''
import math, pickle
import cloudpickle
import numpy as np
import adjit

SCALE = 3.0

def helper(y):
    return math.sin(y) * SCALE

def loss(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += helper(x[i]) ** 2
    return s

g = adjit.grad(loss)
x = np.linspace(-1.0, 1.0, 5)
a = pickle.loads(cloudpickle.dumps(g))     # by value, as Dask sends a script's functions
b = pickle.loads(cloudpickle.dumps(g))
assert a.__adjit_function__.__code__.co_filename != __file__
assert a is b and a is not g
np.testing.assert_allclose(a(x), 2.0 * SCALE ** 2 * np.sin(x) * np.cos(x), rtol=1e-14)
print("ok", a.source.count("sin") > 0)
'''


def test_a_gradient_of_a_script_function_travels_by_value(tmp_path):
    """cloudpickle (Dask) sends what a script's __main__ defines by value, without the file
    name its source would be read from: the gradient carries the script's text, and the
    copies one process receives are one gradient."""
    import subprocess
    import sys
    script = tmp_path / "fit.py"
    script.write_text(_SCRIPT)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=TIMEOUT)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok True"

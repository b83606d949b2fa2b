"""A gradient called from Python keeps its tape's memory for the next call (runtime/tape.py
tape_from, pipeline.py _keep): the values are the same, a result never shares memory with
the kept buffer, tapes beyond KEPT_TAPE_BYTES are not kept, and a vectorized gradient
called in a loop maps no fresh pages."""
import math
import sys

import numpy as np
import pytest

import adjit
from adjit import pipeline
from page_faults import FIXED_MMAP_THRESHOLD, tape_and_faults


def softmax_cross_entropy(z, y):
    m = adjit.stop_gradient(np.max(z))
    lse = m + np.log(np.sum(np.exp(z - m)))
    return -np.sum(y * (z - lse))


def softmax_ce_gradient(z, y):
    """The analytic gradient: softmax(z) * sum(y) - y."""
    e = np.exp(z - z.max())
    return e / e.sum() * y.sum() - y


def damped(theta0, w2, steps, kick):
    """A damped oscillator with a kick whenever the angle crosses `kick` upwards: a branch
    in the loop, so the integer tape records it beside the float tape's values."""
    theta, omega, s = theta0, 0.0, 0.0
    for t in range(steps):
        before = theta
        omega = omega - 0.01 * (w2 * math.sin(theta) + 0.1 * omega)
        theta = theta + 0.01 * omega
        if before < kick <= theta:
            omega = omega * 1.5
        s += theta * theta
    return s


def _central(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def _kept(g):
    return g._called._kept


def test_results_stay_as_returned_when_the_tape_is_reused():
    """Two calls with other arguments: the first result is unchanged by the second call,
    which starts its tape in the buffer the first one left; both are the analytic gradient."""
    g = adjit.grad(softmax_cross_entropy)
    rng = np.random.default_rng(0)
    z1, y1 = rng.normal(size=20_000), rng.random(20_000)
    z2, y2 = rng.normal(size=20_000) * 3, rng.random(20_000)
    first = g(z1, y1)
    kept = _kept(g)
    assert kept.shape[0] >= 20_000
    held = first.copy()
    second = g(z2, y2)
    assert _kept(g) is kept                     # the same buffer, used again
    assert np.array_equal(first, held)
    assert not np.may_share_memory(second, kept)
    np.testing.assert_allclose(first, softmax_ce_gradient(z1, y1), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(second, softmax_ce_gradient(z2, y2), rtol=1e-10, atol=1e-13)
    # and as a gradient computed with no buffer kept (a new function: its first call)
    fresh = adjit.grad(softmax_cross_entropy)(z2, y2)
    assert np.array_equal(second, fresh)


@pytest.mark.parametrize("steps", [50, 20_000])
def test_float_and_integer_tapes_start_in_the_kept_buffer(steps):
    """The integer tape (the branch's outcomes) starts after the float tape in the one kept
    buffer; calls that need more, then less, then more again match central differences and
    each other to the bit."""
    g = adjit.grad(damped, argnums=(0, 1))
    args = (0.3, 4.0, steps, 0.25)
    first = g(*args)
    for _ in range(2):
        assert g(*args) == first
    # (a tape below 16384 values is left to the C library: _KEEP_FROM)
    assert _kept(g).shape[0] >= 2 * steps if steps > pipeline._KEEP_FROM // 2 else \
        _kept(g).shape[0] == 0
    d0 = _central(lambda x: damped(x, 4.0, steps, 0.25), 0.3)
    d1 = _central(lambda x: damped(0.3, x, steps, 0.25), 4.0)
    assert first[0] == pytest.approx(d0, rel=1e-6, abs=1e-8)
    assert first[1] == pytest.approx(d1, rel=1e-6, abs=1e-8)
    # a larger call after a smaller one: the buffer is too short, a new one is kept
    small = g(0.3, 4.0, 20, 0.25)
    bigger = g(*args)
    assert bigger == first
    assert small == g(0.3, 4.0, 20, 0.25)
    assert g(*args) == first


def test_a_tape_beyond_the_kept_size_is_not_kept(monkeypatch):
    monkeypatch.setattr(pipeline, "KEPT_TAPE_BYTES", 128 * 1024)
    g = adjit.grad(softmax_cross_entropy)
    rng = np.random.default_rng(1)
    z, y = rng.normal(size=20_000), rng.random(20_000)
    out = g(z, y)
    assert _kept(g).shape[0] == 0
    np.testing.assert_allclose(out, softmax_ce_gradient(z, y), rtol=1e-10, atol=1e-13)
    monkeypatch.setattr(pipeline, "KEPT_TAPE_BYTES", 1 << 20)
    again = g(z, y)
    assert _kept(g).shape[0] >= 20_000
    assert np.array_equal(again, out)


def test_the_buffer_is_dropped_where_a_result_might_share_its_memory():
    """_keep never hands the next call a buffer a returned array lies in."""
    buf = np.empty(4096)
    stats = np.zeros(7, np.int64)
    assert pipeline._keep(buf, stats, (1.0, np.ones(3))) is buf
    inside = buf[10:20]
    assert pipeline._keep(buf, stats, (1.0, (inside,))) is not buf
    assert pipeline._keep(buf, stats, inside) is not buf


_FAULTS = """
import numpy as np
import adjit


def softmax_cross_entropy(z, y):
    m = adjit.stop_gradient(np.max(z))
    lse = m + np.log(np.sum(np.exp(z - m)))
    return -np.sum(y * (z - lse))


g = adjit.grad(softmax_cross_entropy)
rng = np.random.default_rng(0)
args = (rng.normal(size=100_000), rng.random(100_000))
"""


_NOT_KEPT = "\nimport adjit.pipeline\nadjit.pipeline._KEEP_FROM = 1 << 62\n"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts Linux page faults")
def test_a_vectorized_gradient_called_in_a_loop_maps_no_new_pages_for_its_tape(tmp_path):
    """softmax cross-entropy over 10^5 numbers in a fresh process: its 800 kB tape and its
    800 kB gradient, allocated on every call, mapped about 360 fresh pages a call (the C
    library returned the two freed blocks to the system); with the tape kept, none. The
    gradient's block is the user's, and whether the C library maps it afresh depends on
    the process (page_faults.FIXED_MMAP_THRESHOLD): under a fixed threshold every block is
    mapped afresh, and keeping the tape takes exactly its pages off each call."""
    tape, _, kept = tape_and_faults(tmp_path, _FAULTS, **FIXED_MMAP_THRESHOLD)
    _, _, not_kept = tape_and_faults(tmp_path, _FAULTS + _NOT_KEPT, **FIXED_MMAP_THRESHOLD)
    pages = tape / 4096
    assert tape >= 800_000, tape
    assert not_kept - kept >= 0.8 * pages, (kept, not_kept, pages)

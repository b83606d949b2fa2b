"""The shape of the generated backward sweep: what a hand-written adjoint would do.

Rewrites that make the backward sweep read like a careful person's adjoint:

- `A[i] += e` leaves `A_bar[i]` in place (no reset to zero and add back);
- an adjoint element a loop only adds to, at an index the loop does not change, is summed
  in a local variable and added once after the loop (`dxc[c]` in a triangular product);
- a stencil's adjoint is split into one loop per neighbour, each of which vectorizes;
- a value the program stores into an array element nothing writes again is read back from
  that element (`h[i, j] = np.tanh(...)`), not recorded or computed again;
- sums of products over a loop are taken in vector lanes (`dot_range`, `sum_range`);
- an adjoint reset that the next write replaces is dropped, and adding into the zeroed
  element becomes assigning it (`un_bar[i] = u_bar[i]`);
- a loop that records only values costly to compute (exp) keeps its record instead of
  being computed again in the backward sweep.

Each is checked on programs written as numba users write them: gradients against central
finite differences of the numba-compiled function, the generated source for the rewrite,
and the cases where the rewrite must not apply (which would give wrong numbers if it did).
"""
import math
import re

import numba
import numpy as np
import pytest

import adjit
from adjit import stop_gradient

from fd import fd_grad


def _check(f, args, argnums, rtol=1e-6, atol=1e-7):
    g = adjit.grad(f, argnums=argnums)
    got = g(*args)
    nums = (argnums,) if isinstance(argnums, int) else argnums
    gots = (got,) if isinstance(argnums, int) else got
    jf = numba.njit(f)
    for k, value in zip(nums, gots):
        np.testing.assert_allclose(value, fd_grad(jf, args, k), rtol=rtol, atol=atol,
                                   err_msg=f"d/d arg {k} of {f.__name__}")
    return _unsplit(g.source_for(*args))


def _unsplit(source):
    """The source with the names codegen/webs.py gave the webs of a name (`i_3`, `_g1_2`,
    `_t5_bar_2`) read back as that name: these tests read the adjoint's shape."""
    return re.sub(r"\b([A-Za-z]\w*?|_[a-z]+\d+(?:_bar|_dot)?)_\d+\b", r"\1", source)


def _backward(source):
    """The backward sweep's statements, without the comments that quote the user's lines."""
    text = source.split("# backward sweep")[1].split("# what the tape took")[0]
    return "\n".join(line for line in text.splitlines() if not line.strip().startswith("#"))


# ---- A[i] += e --------------------------------------------------------------------------

def histogram_energy(x, w, bins):
    """Soft counts added into bins, with `+=` and `-=` into the same array."""
    counts = np.zeros(bins.shape[0])
    for i in range(x.shape[0]):
        b = bins[i]
        counts[b] += w[0] * x[i] * x[i]
        counts[b] -= w[1] * x[i]
    s = 0.0
    for k in range(counts.shape[0]):
        s += counts[k] * counts[k]
    return s


def self_referencing_increment(x):
    """`a[i] = a[i] + a[i] * c`: the added term reads the same element."""
    a = x.copy()
    for k in range(3):
        for i in range(a.shape[0]):
            a[i] = a[i] + a[i] * 0.5 * x[i]
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s


def neighbour_increment(x):
    """`a[i] += a[i - 1] * x[i]`: the added term reads another element of the array."""
    a = x.copy()
    for i in range(1, a.shape[0]):
        a[i] += a[i - 1] * x[i]
    return np.sum(a * a)


def test_increments_keep_the_adjoint_in_place():
    rng = np.random.default_rng(0)
    x = rng.normal(size=12)
    bins = rng.integers(0, 4, size=12).astype(np.int64)
    src = _check(histogram_energy, (x, np.array([0.7, -0.3]), bins), (0, 1))
    back = _backward(src)
    assert "counts_bar[b] = 0.0" not in back, back
    _check(self_referencing_increment, (rng.normal(size=6) * 0.5,), 0)
    _check(neighbour_increment, (rng.normal(size=7) * 0.5,), 0)


# ---- sums held in a local across a loop ------------------------------------------------

def triangular_quadratic(L, x):
    """sum_r (sum_{c <= r} L[r, c] x[c])^2 with the adjoint of x[c] summed over r."""
    d = x.shape[0]
    y = np.zeros(d)
    for c in range(d):
        for r in range(c, d):
            y[r] += L[r, c] * x[c]
    s = 0.0
    for r in range(d):
        s += y[r] * y[r]
    return s


def pair_energy(x):
    """A pair loop: the adjoint of x[i] is summed over j."""
    n = x.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = x[i] - x[j]
            e += 1.0 / (1.0 + d * d)
    return e


def pair_energy_minus(x, w):
    """The adjoint of x[i] is subtracted in the loop over j (`x_bar[i] -= ...`), in the
    arrays' own dtype."""
    n = x.shape[0]
    e = w[0] * 0
    for i in range(n):
        for j in range(i + 1, n):
            d = x[j] - x[i]
            e += w[0] / (1 + d * d)
    return e


def read_in_loop(x):
    """The summed adjoint array is also read in the loop (no local sum may be used)."""
    n = x.shape[0]
    y = np.zeros(n)
    for i in range(n):
        for j in range(n):
            y[i] += x[j] * y[j] * 0.1 + x[i] * x[j]
    return np.sum(y * y)


def empty_inner_loops(x):
    """Inner loops that run no iteration for the last i: nothing is added after them."""
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            s += x[i] * math.sin(x[j])
    return s


def test_loop_sums_are_held_in_locals():
    rng = np.random.default_rng(1)
    d = 6
    L = np.tril(rng.normal(size=(d, d)))
    src = _check(triangular_quadratic, (L, rng.normal(size=d)), (0, 1))
    assert "x_bar_sum" in _backward(src), _backward(src)
    src = _check(pair_energy, (rng.normal(size=8),), 0)
    assert "x_bar_sum" in _backward(src)
    _check(read_in_loop, (rng.normal(size=5),), 0)
    _check(empty_inner_loops, (rng.normal(size=5),), 0)
    one = np.array([0.3])
    _check(empty_inner_loops, (one,), 0)


def test_loop_sums_add_in_any_order():
    """A loop's sum held in a local adds with add_any_order (so LLVM may run it in vector
    lanes), `-=` as the negated term; exact against finite differences in float64 and float32
    (whose sum stays float32)."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=9)
    src = _backward(_check(pair_energy_minus, (x, np.array([0.7])), 0))
    total = re.search(r"(x_bar_sum\d*) = 0\.0", src).group(1)
    assert f"{total} = add_any_order({total}, -" in src, src
    assert f"{total} -=" not in src and f"{total} +=" not in src, src
    src = _backward(_check(pair_energy, (x,), 0))
    assert re.search(r"x_bar_sum\d* = add_any_order\(x_bar_sum\d*, [^-]", src), src
    x32, w32 = x.astype(np.float32), np.array([0.7], np.float32)
    got = adjit.grad(pair_energy_minus)(x32, w32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, fd_grad(numba.njit(pair_energy_minus), (x, w32), 0),
                               rtol=2e-5, atol=2e-5)


# ---- stencils ----------------------------------------------------------------------------

def heat(u0, alpha, steps):
    n = u0.shape[0]
    u = u0.copy()
    un = np.zeros(n)
    for t in range(steps):
        for i in range(1, n - 1):
            un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        for i in range(1, n - 1):
            u[i] = un[i]
    s = 0.0
    for i in range(n):
        s += u[i] * u[i]
    return s


def heat_2d(u0, steps):
    """A five-point stencil on a grid, edges held fixed, buffers swapped."""
    nx, ny = u0.shape
    u = u0.copy()
    v = u0.copy()
    for t in range(steps):
        for i in range(1, nx - 1):
            for j in range(1, ny - 1):
                v[i, j] = u[i, j] + 0.2 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1]
                                           + u[i, j + 1] - 4.0 * u[i, j])
        u, v = v, u
    return np.sum(u * u)


def periodic_advection(u0, c, steps):
    """Upwind advection with a periodic boundary written as a branch."""
    n = u0.shape[0]
    u = u0.copy()
    un = np.empty(n)
    for t in range(steps):
        for i in range(n):
            if i == 0:
                left = u[n - 1]
            else:
                left = u[i - 1]
            un[i] = u[i] - c * (u[i] - left)
        u[:] = un
    return np.sum(u * u * u)


def smoothing_reads_its_adjoint(x):
    """A stencil whose added-into array is also read in the loop: not split."""
    n = x.shape[0]
    y = x.copy()
    for i in range(1, n - 1):
        y[i] = 0.25 * y[i - 1] + 0.5 * y[i] + 0.25 * y[i + 1]
    return np.sum(y * y)


def test_stencil_adjoints_gather_their_neighbours():
    """The adjoint of a stencil is written in gather form: away from the ends, one loop
    in which every element of u_bar is updated once, from its neighbours' cotangents
    (un_bar[i - 1], un_bar[i], un_bar[i + 1]); near the ends, short loops that test each
    neighbour."""
    rng = np.random.default_rng(2)
    u0 = rng.random(16)
    src = _check(heat, (u0, 0.25, 20), 0)
    back = _backward(src)
    assert "u_bar[i + 1] +=" not in back and "u_bar[i - 1] +=" not in back, back
    interior = [blk for blk in back.split("for i in range(")[1:]
                if "un_bar[i + 1]" in blk and "un_bar[i - 1]" in blk and " if " not in blk]
    assert len(interior) == 1, back
    assert interior[0].startswith("2, _t1 - 1)"), interior[0]
    # u_bar[i] is zero there (the copy-back's adjoint read it): the gather assigns
    assert interior[0].count("u_bar[i] = _g") == 1 and "u_bar[i] +=" not in interior[0]
    assert "if 1 <= i + 1 < _t1:" in back and "if 1 <= i - 1 < _t1:" in back, back
    # the next step's copy-back assigns un_bar: no reset
    assert "un_bar[i] = 0.0" not in back and "un_bar[i] = u_bar[i]" in back, back
    _check(heat, (u0, 0.25, 20), (0, 1))
    _check(heat_2d, (rng.random((6, 7)), 5), 0)
    _check(periodic_advection, (rng.random(9), 0.4, 6), (0, 1))
    _check(smoothing_reads_its_adjoint, (rng.random(8),), 0)


def wide_stencil(u0, c, steps):
    """Neighbours two away on one side and one on the other (offsets -2..+1), and a
    coefficient that depends on the cell's position."""
    n = u0.shape[0]
    u = u0.copy()
    un = np.zeros(n)
    for t in range(steps):
        for i in range(2, n - 1):
            un[i] = u[i] + c * (0.5 * u[i - 2] - u[i - 1] + (1.0 + 0.1 * i) * u[i + 1])
        for i in range(2, n - 1):
            u[i] = un[i] - 0.5 * un[i] * un[i] * c
    return np.sum(u * u)


_SMALL = {}


@pytest.mark.parametrize("n", [3, 4, 5, 6, 9])
def test_gathered_stencils_on_grids_too_small_for_an_interior(n):
    """Grids with no cell (n = 3 for the wide stencil) or with only the end loops to run
    (no element with every neighbour inside the range): each term is tested."""
    rng = np.random.default_rng(n)
    for f, args, argnums in ((heat, (rng.random(n), 0.25, 7), (0, 1)),
                             (wide_stencil, (rng.random(n), 0.3, 5), (0, 1)),
                             (heat_2d, (rng.random((n, n + 1)), 4), 0)):
        if f not in _SMALL:
            _SMALL[f] = adjit.grad(f, argnums=argnums), numba.njit(f)
        g, jf = _SMALL[f]
        got = g(*args)
        nums = (argnums,) if isinstance(argnums, int) else argnums
        for k, value in zip(nums, got if len(nums) > 1 else (got,)):
            np.testing.assert_allclose(value, fd_grad(jf, args, k), rtol=1e-6, atol=1e-7,
                                       err_msg=f"d/d arg {k} of {f.__name__}, n = {n}")


def reaction_diffusion(u0, alpha, k, steps):
    """A step with a Laplacian and a nonlinear reaction, its coefficients differentiated."""
    n = u0.shape[0]
    u = u0.copy()
    un = np.zeros(n)
    for t in range(steps):
        for i in range(1, n - 1):
            lap = u[i - 1] - 2.0 * u[i] + u[i + 1]
            un[i] = u[i] + alpha * lap - k * u[i] * u[i] * u[i]
        for i in range(1, n - 1):
            u[i] = un[i]
    return np.sum(u * u)


def test_values_recorded_in_slots_of_their_iteration():
    """With the coefficient differentiated, the Laplacian is recorded: at its definition,
    in the slot of its own iteration (base + i - 1), so that the reversed loop carries
    nothing from one iteration to the next and still splits per neighbour; the tape is
    reserved once for the whole time loop."""
    rng = np.random.default_rng(5)
    u0 = rng.random(16)
    src = _check(heat, (u0, 0.25, 20), (0, 1))
    back = _backward(src)
    assert "un_bar[i + 1]" in back and "un_bar[i - 1]" in back, back
    # the slots are read by the coefficient's sum: from _fbase1, one per iteration
    assert "_fn -= 1" not in back and "_ftape, _fbase1, max(_t1 - 1, 0))" in back, back
    forward = src.split("# backward sweep")[0]
    assert "_ftape[np.uint64(_fbase1 + (i - 1))] = " in forward
    assert forward.index("reserve_tape(_ftape, _fn + max(max(steps, 0) * max(_t1 - 1, 0)") < \
        forward.index("for t in range(steps)"), forward
    src = _check(reaction_diffusion, (u0, 0.2, 0.3, 15), (0, 1, 2))
    assert "_fn -= 1" not in _backward(src)


def test_split_stencil_gradient_equals_the_unsplit_one():
    """The gathered loops add the same terms in another order: equal to rounding."""
    rng = np.random.default_rng(3)
    u0 = rng.random(64)
    g = adjit.grad(heat)(u0, 0.25, 200)
    # the same program with the loop body made unsplittable (a branch)
    def heat_branch(u0, alpha, steps):
        n = u0.shape[0]
        u = u0.copy()
        un = np.zeros(n)
        for t in range(steps):
            for i in range(1, n - 1):
                if alpha > -1.0:
                    un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
            for i in range(1, n - 1):
                u[i] = un[i]
        s = 0.0
        for i in range(n):
            s += u[i] * u[i]
        return s
    ref = adjit.grad(heat_branch)(u0, 0.25, 200)
    np.testing.assert_allclose(g, ref, rtol=1e-12, atol=1e-13)


# ---- values read back from the array they were stored in ---------------------------------

def tanh_layer(W, V, X):
    """A hidden layer the next product reads: the adjoint of the tanh reads h back."""
    h = np.tanh(X @ W)
    z = h @ V
    return np.sum(z * z)


def exp_table(x):
    """A loop stores exp(x[i]) into y; the adjoint reads y[i] back."""
    n = x.shape[0]
    y = np.empty(n)
    for i in range(n):
        y[i] = math.exp(0.5 * x[i])
    s = 0.0
    for i in range(n):
        s += y[i] * x[i]
    return s


def overwritten_later(x):
    """y[i] is written again after the exp: the adjoint must not read y back."""
    n = x.shape[0]
    y = np.empty(n)
    for i in range(n):
        y[i] = math.exp(0.5 * x[i])
    for i in range(n):
        y[i] = y[i] * y[i] + 1.0
    return np.sum(y)


def rewritten_each_step(x, steps):
    """y is refilled every step: its elements are not final inside the time loop."""
    n = x.shape[0]
    y = np.empty(n)
    s = 0.0
    z = x.copy()
    for t in range(steps):
        for i in range(n):
            y[i] = math.tanh(z[i])
        for i in range(n):
            z[i] = z[i] + 0.1 * y[i]
            s += y[i]
    return s


def positional_dtype(x):
    """`np.empty(n, np.float64)`, the dtype given by position."""
    n = x.shape[0]
    y = np.empty(n, np.float64)
    for i in range(n):
        y[i] = math.exp(x[i])
    s = 0.0
    for i in range(n):
        s += y[i] * x[i]
    return s


def negative_start(x):
    """A loop from -1 stores at y[-1] (the last element) and then at y[n - 1] again: the
    first value is not in y at the end, and the adjoint must not read it back."""
    n = x.shape[0]
    y = np.zeros(n)
    s = 0.0
    for i in range(-1, n):
        y[i] = math.exp(0.2 * x[i] * (i + 2))
        s += y[i]
    return s


def store_in_while(x):
    """A store inside a while loop whose trip count depends on the data."""
    n = x.shape[0]
    y = np.zeros(n)
    k = 0
    while k < n and x[k] < 10.0:
        for i in range(n):
            y[i] = math.exp(0.3 * x[i] * (k + 1))
        k += 1
    return np.sum(y * x)


def test_stored_values_are_read_back():
    rng = np.random.default_rng(4)
    W = rng.normal(size=(5, 4)) * 0.5
    X = rng.normal(size=(6, 5))
    V = rng.normal(size=(4, 3))
    src = _check(tanh_layer, (W, V, X), (0, 1))
    back = _backward(src)
    assert "math.tanh(" not in back and "_ftape" not in src, back
    x = rng.normal(size=7)
    src = _check(exp_table, (x,), 0)
    assert "math.exp" not in _backward(src), _backward(src)
    _check(overwritten_later, (x,), 0)
    _check(rewritten_each_step, (x, 4), 0)
    src = _check(positional_dtype, (x,), 0)
    assert "math.exp(" not in _backward(src), _backward(src)
    _check(negative_start, (x,), 0)
    _check(store_in_while, (x,), 0)


# ---- one division for a quotient of two active values ----------------------------------------

def ratio_sum(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] / y[i] + y[i] / (x[i] + 2.0)
    return s


def self_ratio(x):
    """x / x: one operand twice, where the partials (not the joint form) apply."""
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] / x[i] * x[i]
    return s


def test_a_quotient_of_two_active_values_divides_once_in_its_adjoint():
    """d(a / b) = (da - out db) / b: the cotangent over b, computed once, serves both
    operands, where the partials 1 / b and -out / b divide twice."""
    x = np.linspace(0.5, 2.0, 7)
    y = np.linspace(1.0, 3.0, 7)
    src = _check(ratio_sum, (x, y), (0, 1), rtol=1e-8, atol=1e-9)
    backward = _backward(src).split("for i in range")[-1]
    assert backward.count(" / ") == 2 * 2            # the two quotients again, one division each
    assert backward.count("_q") >= 4
    src = _check(self_ratio, (x,), 0, rtol=1e-8, atol=1e-9)
    assert "_q" not in _backward(src)


# ---- a load every iteration of a loop repeats, made once before it -------------------------

def decaying_sum(x):
    """acc[0] is loaded and stored in every iteration (its adjoint too): no hoisting."""
    acc = np.zeros(1)
    for r in range(x.shape[0]):
        acc[0] = acc[0] * 0.5 + x[r] * x[r]
    return acc[0]


def test_a_load_the_loop_repeats_is_made_once_before_it():
    """The reversed inner loop of the triangular product reads x[c] (c fixed) while it adds
    into L_bar: the compiler cannot keep x[c] in a register across those stores; adjit loads
    it once before the loop, guarded by the loop's running at all."""
    x = np.linspace(-1.0, 1.5, 6)
    L = np.random.default_rng(3).normal(size=(6, 6))
    back = _backward(_check(triangular_quadratic, (L, x), (0, 1), rtol=1e-8, atol=1e-9))
    lines = [line.strip() for line in back.splitlines() if line.strip()]
    at = [k for k, line in enumerate(lines) if line.endswith("= x[c]")]
    assert len(at) == 1                                 # once, before the loop over r
    assert lines[at[0] - 1].startswith("if ") and lines[at[0] + 1].startswith("for r in range(")
    back = _backward(_check(decaying_sum, (x,), 0, rtol=1e-8, atol=1e-9))
    inner = back.split("for r in range(")[1]
    assert "= acc_bar[0]" in inner and "acc_bar[0] = " in inner    # still loaded in the loop


# ---- sums of products taken in vector lanes (reverse/dots.py) -----------------------------

def periodic_scale(x, c, w):
    """y[i] = c * x[i - 1] with x[-1] the last element (numba's negative index), then a
    weighted sum: the adjoint of c is a sum of products read at i - 1, from i = 0."""
    n = x.shape[0]
    y = np.empty(n)
    for i in range(n):
        y[i] = c * x[i - 1]
    s = 0.0
    for i in range(n):
        s += w[i] * y[i] * y[i]
    return s


def mirrored_scale(x, c, w):
    """The element read steps down while the loop steps up: x[n - 1 - i]."""
    n = x.shape[0]
    y = np.empty(n)
    for i in range(n):
        y[i] = c * x[n - 1 - i]
    s = 0.0
    for i in range(n):
        s += w[i] * y[i] * y[i]
    return s


def affine_misfit(a, b, x, y):
    """A line fitted through points: b's adjoint sums single elements, a's products."""
    n = x.shape[0]
    r = np.empty(n)
    for i in range(n):
        r[i] = a * x[i] + b - y[i]
    s = 0.0
    for i in range(n):
        s += r[i] * r[i]
    return s


def heat_without_copy_back(u0, alpha, steps):
    """Buffers swapped instead of copied back: alpha's sum stays a dot_range."""
    n = u0.shape[0]
    u = u0.copy()
    un = u0.copy()
    for t in range(steps):
        for i in range(1, n - 1):
            un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u, un = un, u
    return np.sum(u * u)


def test_coefficient_sums_are_one_call():
    """The adjoint of a coefficient that enters every point (alpha, c) is a sum of products
    of two elements: it is taken before its loop by dot_range, in vector lanes, and the
    loop keeps the rest; the gradient is the same to rounding. Negative indices (x[-1]) and
    indices stepping down keep their meaning."""
    rng = np.random.default_rng(11)
    src = _check(heat, (rng.random(16), 0.25, 20), (0, 1))
    back = _backward(src)
    # the sum over what the copy-back's adjoint copied is taken while copying
    assert "alpha_bar += copy_dot(un_bar, u_bar, 1, _ftape, _fbase1, max(_t1 - 1, 0))" in \
        back, back
    assert back.count("alpha_bar +=") == 1 and "un_bar[i] = u_bar[i]" not in back, back
    back = _backward(_check(heat_without_copy_back, (rng.random(16), 0.25, 20), (0, 1)))
    assert "alpha_bar += dot_range(" in back and "copy_dot" not in back, back
    for f in (periodic_scale, mirrored_scale):
        x, w = rng.normal(size=7), rng.random(7)
        src = _check(f, (x, 0.7, w), (0, 1))
        assert "c_bar += dot_range(" in _backward(src), src
    src = _check(mirrored_scale, (rng.normal(size=7), 0.7, rng.random(7)), 1)
    # x[n - 1 - i]: from the last element down (n - 1 is a temporary named before the loop)
    assert re.search(r"dot_range\(y_bar, 0, 1, x, \w+, -1, max\(n, 0\)\)", _backward(src)), src
    x = rng.random(9)
    src = _check(affine_misfit, (0.4, -0.2, x, 2.0 * x + 1.0), (0, 1))
    back = _backward(src)
    assert "b_bar += sum_range(r_bar, 0, 1, max(n, 0))" in back, back
    assert "a_bar += dot_range(r_bar, 0, 1, x, 0, 1, max(n, 0))" in back, back


def softmax_cross_entropy(z, y):
    """The vectorized softmax cross-entropy of the benchmarks (y may broadcast: shape (1,))."""
    m = adjit.stop_gradient(np.max(z))
    lse = m + np.log(np.sum(np.exp(z - m)))
    return -np.sum(y * (z - lse))


def scaled_misfit(x, w, c):
    """A factor no iteration changes (c * 0.5) in a sum over the loop, negated."""
    s = 0.0
    for i in range(x.shape[0]):
        s -= 0.5 * c * (x[i] * w[i])
    return s * s


def test_a_factor_no_iteration_changes_is_taken_out_of_the_sum():
    """Sum of c * y[i] over a loop is c times one sum_range call (in vector lanes), also
    where y's index steps by a broadcast's stride flag (0 for a one-element y, 1 else); the
    gradients the same to rounding, in both shapes of y."""
    rng = np.random.default_rng(12)
    z = rng.normal(size=9)
    for y in (rng.random(9), np.array([0.7])):
        back = _backward(_check(softmax_cross_entropy, (z, y), (0, 1)))
        assert re.search(r"lse_bar -= _r\d+_bar \* sum_range\(y, 0, _f\d+, ", back), back
    x, w = rng.normal(size=7), rng.random(7)
    back = _backward(_check(scaled_misfit, (x, w, 1.3), (0, 1, 2)))
    assert "sum_range(" in back or "dot_range(" in back, back


def test_range_sums_index_as_numba_does():
    """dot_range and sum_range against numpy: unit and other steps, a descending index, and
    a start below zero (numba's x[-1], the last element)."""
    from adjit.runtime.sums import dot_range, sum_range
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=12), rng.normal(size=30)
    for a0, sa, b0, sb, n in ((0, 1, 0, 1, 12), (2, 1, 5, 3, 8), (11, -1, 0, 2, 12),
                              (-1, 1, 3, 1, 6), (-3, 1, -12, 2, 5), (0, 1, 0, 1, 0)):
        ia = [a0 + sa * k for k in range(n)]
        ib = [b0 + sb * k for k in range(n)]
        assert dot_range(a, a0, sa, b, b0, sb, n) == pytest.approx(
            float(np.dot(a[ia], b[ib])) if n else 0.0, rel=1e-13, abs=1e-13)
        assert sum_range(a, a0, sa, n) == pytest.approx(
            float(np.sum(a[ia])) if n else 0.0, rel=1e-13, abs=1e-13)
    from adjit.runtime.sums import copy_dot
    for lo, b0, n in ((0, 0, 12), (1, 5, 10), (3, -4, 4), (2, 0, 0)):
        dst, src = np.full(12, -7.0), rng.normal(size=12)
        want_dst = dst.copy()
        want_dst[lo:lo + n] = src[lo:lo + n]
        want = float(np.dot(src[lo:lo + n], b[[b0 + k for k in range(n)]])) if n else 0.0
        assert copy_dot(dst, src, lo, b, b0, n) == pytest.approx(want, rel=1e-13, abs=1e-13)
        assert np.array_equal(dst, want_dst)


# ---- zero, then add: an assignment -------------------------------------------------------

def relax(u0, dt, steps):
    """A pointwise step (no neighbours) and a copy back: the step's adjoint adds into
    u_bar[i] right after the copy-back's adjoint zeroed it."""
    n = u0.shape[0]
    u = u0.copy()
    un = np.zeros(n)
    for t in range(steps):
        for i in range(1, n - 1):
            un[i] = u[i] - dt * u[i] * u[i] * u[i]
        for i in range(1, n - 1):
            u[i] = un[i]
    return np.sum(u * u)


def heat_read_after(u0, alpha, steps):
    """un is read after the time loop: its adjoint holds something before the backward
    time loop starts (the first backward step must add to it, not assign)."""
    n = u0.shape[0]
    u = u0.copy()
    un = np.zeros(n)
    for t in range(steps):
        for i in range(1, n - 1):
            un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        for i in range(1, n - 1):
            u[i] = un[i]
    s = 0.0
    for i in range(n):
        s += u[i] * u[i] + 0.5 * un[i] * un[i]
    return s


def heat_warm_start(u0, alpha, steps):
    """un is set before the time loop and read by its first step's stencil: its adjoint is
    read after the backward time loop, so what the last backward step leaves in it counts."""
    n = u0.shape[0]
    u = u0.copy()
    un = np.zeros(n)
    for i in range(n):
        un[i] = 0.5 * u0[i]
    for t in range(steps):
        for i in range(1, n - 1):
            u[i] = un[i] + alpha * (un[i - 1] - 2.0 * un[i] + un[i + 1])
        for i in range(1, n - 1):
            un[i] = u[i]
    return np.sum(u * u) + np.sum(un * un * un)


def heat_other_ranges(u0, alpha, steps):
    """The copy back covers the whole array and the stencil its inside: the ranges differ,
    so nothing is dropped."""
    n = u0.shape[0]
    u = u0.copy()
    un = u0.copy()
    for t in range(steps):
        for i in range(1, n - 1):
            un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        for i in range(n):
            u[i] = un[i]
    return np.sum(u * u)


def heat_until_small(u0, alpha, steps):
    """A time loop that may stop early (`break`): left as it is."""
    n = u0.shape[0]
    u = u0.copy()
    un = np.zeros(n)
    for t in range(steps):
        for i in range(1, n - 1):
            un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        for i in range(1, n - 1):
            u[i] = un[i]
        if u[n // 2] < 0.01:
            break
    return np.sum(u * u)


def periodic_smoothing(u0, c, steps):
    """A periodic stencil over the whole array: u[i - 1] at i = 0 is the last element, so
    the gather's end loop at i = -1 adds into the element the last iteration owns."""
    n = u0.shape[0]
    u = u0.copy()
    un = np.zeros(n)
    for t in range(steps):
        for i in range(n):
            un[i] = u[i] + c * (u[i - 1] - u[i])
        for i in range(n):
            u[i] = un[i]
    return np.sum(u * u * u)


def test_zero_then_add_is_an_assignment():
    """Adjoint resets that the next write replaces are dropped: the copy-back's adjoint
    assigns un_bar (the last step's reset goes), the stencil's gather assigns u_bar inside
    the range the copy-back zeroed (its zeroing goes), a pointwise step assigns too. Where
    the adjoint held something before the time loop, the first backward step adds and the
    others assign; where it is read after, one reset runs after the loop."""
    rng = np.random.default_rng(8)
    u0 = rng.random(12)
    back = _backward(_check(heat, (u0, 0.25, 7), 0))
    assert "u_bar[i] = 0.0" not in back and "un_bar[i] = 0.0" not in back, back
    assert "_first" not in back, back
    back = _backward(_check(relax, (u0, 0.1, 6), 0))
    assert "u_bar[i] = 0.0" not in back and "un_bar[i] = 0.0" not in back, back
    assert re.search(r"u_bar\[i\] = _t\d+_bar", back) is not None, back
    # the first backward step adds into what the sum after the loop put in un_bar
    back = _backward(_check(heat_read_after, (u0, 0.25, 7), (0, 1)))
    # (the first step adds un_bar's earlier value into u_bar, whose elements there the
    # stencil's adjoint assigns next; every step then copies, taking alpha's sum in the
    # same pass)
    assert "_first" in back and "u_bar[i] += un_bar[i]" in back, back
    assert "alpha_bar += copy_dot(un_bar, u_bar, " in back, back
    back = _backward(_check(heat_read_after, (u0, 0.25, 7), 0))
    assert "_first" in back and "un_bar[i] += u_bar[i]" in back, back
    assert "un_bar[i] = u_bar[i]" in back, back
    # un_bar is read after the backward time loop: one reset there, after the last step
    src = _check(heat_warm_start, (u0, 0.25, 7), (0, 1))
    for steps in (0, 1, 2):
        _check(heat_warm_start, (u0, 0.25, steps), (0, 1))
        _check(heat_read_after, (u0, 0.25, steps), (0, 1))
    src = _check(heat_other_ranges, (u0, 0.25, 7), (0, 1))
    assert "u_bar[i] = 0.0" in _backward(src), src
    for n in (3, 4, 5):
        _check(heat, (rng.random(n), 0.25, 3), (0, 1))
        _check(relax, (rng.random(n), 0.1, 3), 0)
    # the gather's end loop reaches index -1: it adds there (into the last element), and
    # the element's own iteration adds too, so neither may assign
    for steps in (1, 4):
        back = _backward(_check(periodic_smoothing, (u0, 0.3, steps), (0, 1)))
        assert "u_bar[i] = 0.0" in back, back
    x = np.linspace(1.0, 0.5, 12)
    for steps in (3, 40):
        src = _check(heat_until_small, (x, 0.25, steps), (0, 1))
        assert "break" in src


@pytest.mark.parametrize("checkpoint", [3, "auto"])
def test_zero_then_add_in_checkpointed_loops(checkpoint):
    """A checkpointed time loop's backward steps run in blocks: un_bar carries from one
    block to the next, so the first step of each block adds and the others assign, and the
    reset runs once per block."""
    rng = np.random.default_rng(9)
    u0 = rng.random(10)
    for f in (heat, heat_read_after, heat_warm_start):
        g = adjit.grad(f, argnums=(0, 1), checkpoint=checkpoint)
        want = adjit.grad(f, argnums=(0, 1))(u0, 0.25, 9)
        got = g(u0, 0.25, 9)
        for a, b in zip(got, want):     # identical to the bit, as checkpointing promises
            assert np.array_equal(a, b), (f.__name__, checkpoint, a, b)
        jf = numba.njit(f)
        np.testing.assert_allclose(got[0], fd_grad(jf, (u0, 0.25, 9), 0), rtol=1e-6,
                                   atol=1e-7)
    assert "_first" in _backward(g.source_for(u0, 0.25, 9)), g.source_for(u0, 0.25, 9)


# ---- values costly to compute are recorded, not computed again ---------------------------

def log_sum_exp_loss(z, y):
    """Cross-entropy of softmax(z) written as loops: the exp loop's iterations are
    independent, but computing them again in the backward sweep would call exp twice."""
    n = z.shape[0]
    m = stop_gradient(np.max(z))
    s = 0.0
    for i in range(n):
        s += math.exp(z[i] - m)
    lse = m + math.log(s)
    loss = 0.0
    for i in range(n):
        loss -= y[i] * (z[i] - lse)
    return loss


def test_a_loop_recording_only_costly_values_keeps_its_record():
    """A loop whose iterations record nothing but exp (or another function the registry
    marks costly) is not computed again in the backward sweep: the recorded values are
    read back. The vectorized softmax the same."""
    rng = np.random.default_rng(10)
    z, y = rng.normal(size=9), rng.random(9)
    y /= y.sum()
    back = _backward(_check(log_sum_exp_loss, (z, y), 0))
    assert "math.exp" not in back and "_ftape[" in back, back

    def softmax_ce(z, y):
        m = stop_gradient(np.max(z))
        lse = m + np.log(np.sum(np.exp(z - m)))
        return -np.sum(y * (z - lse))
    back = _backward(_check(softmax_ce, (z, y), 0))
    assert "math.exp" not in back and "_ftape[" in back, back


# ---- adjoint arrays the backward sweep fills once are not zeroed first -------------------

def polynomial(c, t):
    """Horner's rule: each coefficient's adjoint is set once, by the loop's adjoint."""
    p = 0.0
    for k in range(c.shape[0]):
        p = p * t + c[k]
    return p


def polynomial_from_one(c, t):
    """The first coefficient is not read: its adjoint must stay zero."""
    p = 0.0
    for k in range(1, c.shape[0]):
        p = p * t + c[k]
    return p


def polynomial_twice(c, t):
    """Every coefficient read in each of two passes: its adjoint adds up both."""
    s = 0.0
    for r in range(2):
        p = 0.0
        for k in range(c.shape[0]):
            p = p * t + c[k]
        s += p * p
    return s


def test_an_adjoint_array_filled_once_is_allocated_empty():
    rng = np.random.default_rng(11)
    c = rng.normal(size=7)
    src = _check(polynomial, (c, 0.8), (0, 1))
    assert "c_bar = vec.empty_like(c)" in src and (
        "c_bar[k] = " in src or "c_bar[np.uint64(k)] = " in src), src
    src = _check(polynomial_from_one, (c, 0.8), (0, 1))
    assert "c_bar = vec.zeros_like(c)" in src, src
    g = adjit.grad(polynomial_from_one)
    assert g(c, 0.8)[0] == 0.0
    src = _check(polynomial_twice, (c, 0.8), (0, 1))
    assert "c_bar = vec.zeros_like(c)" in src, src
    src = _check(polynomial, (c[:0], 0.8), 0)


# ---- products of a value with itself ----------------------------------------------------

def pair_terms(r2s):
    """The Lennard-Jones pair term as physics codes write it: r2 * r2 * r2."""
    e = 0.0
    for k in range(r2s.shape[0]):
        r2 = r2s[k]
        inv6 = 1.0 / (r2 * r2 * r2)
        e += 4.0 * (inv6 * inv6 - inv6)
    return e


def quartic_right(x):
    """x * (x * (x * x)): the chain nested the other way."""
    s = 0.0
    for i in range(x.shape[0]):
        v = x[i]
        s += v * (v * (v * v)) + 0.5 * v
    return s


def square_used_twice(x):
    """x * x feeds two products: its own adjoint applies (no chain)."""
    s = 0.0
    for i in range(x.shape[0]):
        v = x[i]
        sq = v * v
        s += sq * v + sq * 3.0
    return s


def square_used_twice_last_in_a_product(x):
    """The same with the product last: the square's other use must still reach it."""
    s = 0.0
    for i in range(x.shape[0]):
        v = x[i]
        sq = v * v
        s += sq * 3.0 + sq * v
    return s


def square_then_changed(x):
    """v changes between the square and the product: v1 * v1 * v2, not a cube."""
    s = 0.0
    for i in range(x.shape[0]):
        v = x[i]
        sq = v * v
        v = v + 1.0
        s += sq * v
    return s


def test_a_value_times_itself_is_a_power():
    """The adjoint of `u = r2 * r2 * r2` is `u_bar * (3.0 * (r2 * r2))`, one multiply by the
    partial product the forward computed, where the product rule through it computes
    `u_bar * _t + (u_bar * r2) * (2.0 * r2)` (the Lennard-Jones gradient: 0.083 -> 0.072 ms
    at 200 atoms). Against the analytic derivatives, and where the chain must not apply."""
    r2s = np.linspace(0.9, 2.5, 9)
    src = _check(pair_terms, (r2s,), 0, rtol=1e-8, atol=1e-9)
    assert "(3.0 * " in _backward(src), src
    g = adjit.grad(pair_terms)(r2s)
    np.testing.assert_allclose(g, 4.0 * (-6.0 * r2s ** -7 + 3.0 * r2s ** -4), rtol=1e-12)
    x = np.linspace(-1.5, 2.0, 8)
    src = _check(quartic_right, (x,), 0, rtol=1e-8, atol=1e-9)
    assert "(4.0 * " in _backward(src), src
    np.testing.assert_allclose(adjit.grad(quartic_right)(x), 4.0 * x ** 3 + 0.5, rtol=1e-12)
    src = _check(square_used_twice, (x,), 0, rtol=1e-8, atol=1e-9)
    assert "(3.0 * " not in _backward(src), src
    np.testing.assert_allclose(adjit.grad(square_used_twice)(x), 3.0 * x ** 2 + 6.0 * x,
                               rtol=1e-12)
    src = _check(square_used_twice_last_in_a_product, (x,), 0, rtol=1e-8, atol=1e-9)
    assert "(3.0 * sq)" not in _backward(src), src
    np.testing.assert_allclose(adjit.grad(square_used_twice_last_in_a_product)(x),
                               3.0 * x ** 2 + 6.0 * x, rtol=1e-12)
    src = _check(square_then_changed, (x,), 0, rtol=1e-8, atol=1e-9)
    assert "(3.0 * " not in _backward(src), src
    np.testing.assert_allclose(adjit.grad(square_then_changed)(x),
                               2.0 * x * (x + 1.0) + x * x, rtol=1e-12)


# ---- sin and cos computed again beside their partial ------------------------------------

def pendulum(w2, c, theta, omega, dt, steps):
    """Symplectic Euler for theta'' = -w2 sin(theta) - c theta', the final angle squared:
    theta is updated before the sin reads it."""
    for t in range(steps):
        theta = theta + dt * omega
        omega = omega + dt * (-w2 * math.sin(theta) - c * omega)
    return theta * theta + 0.1 * omega


def rotor(w, phi0, steps):
    """cos of an angle the step has just changed, read by w's partial."""
    phi = phi0
    s = 0.0
    for t in range(steps):
        phi = phi + 0.1 * w
        s += w * math.cos(phi)
    return s


def sin_of_data(w, x):
    """The sin of data: no partial of its own (x is not differentiated), so its value,
    which the forward sweep computes anyway, is recorded for w's partial."""
    s = 1.0
    for i in range(x.shape[0]):
        s = s * (w * math.sin(x[i] * 2.0))
    return s


def test_sin_is_computed_again_beside_its_cosine():
    """The backward sweep needs sin(theta) for w2's partial and cos(theta) for theta's:
    instead of recording sin(theta) it computes it again next to cos(theta), and numba's
    LLVM makes the two one sincos call (the pendulum's leapfrog: 32 -> 23 ms at 10^6
    steps, the hand-written adjoint's time). Gradients against central differences and
    the generated source; the value stays recorded where nothing computes its pair."""
    args = (7.0, 0.3, 1.1, 0.2, 0.01, 300)
    src = _check(pendulum, args, (0, 1, 2, 3), rtol=1e-7, atol=1e-8)
    back = _backward(src)
    lines = [ln.strip() for ln in back.splitlines()]
    at = [k for k, ln in enumerate(lines) if "math.sin(theta)" in ln]
    assert at and any("math.cos(theta)" in ln for ln in lines[at[0]:at[0] + 3]), back
    assert src.split("# backward sweep")[0].count("_ftape[_fn] = ") == 2, src   # theta, omega
    src = _check(rotor, (0.7, 0.2, 50), (0, 1), rtol=1e-7, atol=1e-8)
    assert "math.sin(phi)" in _backward(src) and "math.cos(phi)" in _backward(src), src
    x = np.linspace(0.2, 1.2, 9)
    src = _check(sin_of_data, (0.8, x), 0)
    assert "math.sin" not in _backward(src), src
    n = x.shape[0]
    np.testing.assert_allclose(adjit.grad(sin_of_data)(0.8, x),
                               n * 0.8 ** (n - 1) * np.prod(np.sin(2.0 * x)), rtol=1e-12)

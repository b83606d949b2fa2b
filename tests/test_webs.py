"""codegen/webs.py: a generated function's names split into their webs before numba compiles
it. The renamed function must compute what the original computed, on every path: checked on
hand-written corner cases and on drawn programs with branches, loops, break and continue,
run by the interpreter before and after."""
import ast
import random
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import adjit
from adjit.codegen.webs import split_webs


def _split(src):
    tree = ast.parse(textwrap.dedent(src))
    fn = tree.body[0]
    count = split_webs(fn)
    return ast.unparse(ast.fix_missing_locations(tree)), count


def _run(src, *args, ns=None):
    scope = dict(ns or {}, np=np)
    exec(compile(src, "<webs>", "exec"), scope)     # noqa: S102
    return scope["f"](*args)


def _same(src, *arg_sets, ns=None):
    new, count = _split(src)
    for args in arg_sets:
        want = _run(textwrap.dedent(src), *args, ns=ns)
        got = _run(new, *args, ns=ns)
        assert repr(got) == repr(want), (new, args)
    return new, count


def test_a_reused_temporary_gets_a_name_per_value():
    new, count = _same("""
        def f(a, b):
            t = a * 2.0
            y = t + 1.0
            t = b * 3.0
            z = t - 1.0
            return y, z
        """, (1.0, 2.0))
    assert count == 1 and "t_2 = b * 3.0" in new and "z = t_2 - 1.0" in new, new


def test_values_that_meet_after_a_branch_keep_one_name():
    new, count = _same("""
        def f(c, a):
            if c > 0:
                x = a
            else:
                x = -a
            return x * 2.0
        """, (1, 3.0), (-1, 3.0))
    assert count == 0 and new.count("x =") == 2, new


def test_a_value_carried_around_a_loop_keeps_its_name():
    new, count = _same("""
        def f(n, a):
            s = 0.0
            for i in range(n):
                t = s * a
                s = t + i
            t = 5.0
            return s + t
        """, (0, 2.0), (4, 0.5))
    assert "s = t + i" in new and "t_2 = 5.0" in new, new


def test_a_loop_index_reused_by_a_later_loop():
    new, _ = _same("""
        def f(n):
            s = 0
            for i in range(n):
                s += i
            for i in range(n - 1, -1, -1):
                s += 2 * i
            return s
        """, (3,), (1,))
    assert "for i_2 in range(n - 1, -1, -1)" in new, new
    # read after the second loop, i may be either loop's (the second may run no iteration)
    new, _ = _same("""
        def f(n):
            for i in range(n):
                pass
            for i in range(n - 1, -1, -1):
                pass
            return i
        """, (3,), (1,))
    assert "i_2" not in new, new


def test_a_zero_trip_loop_leaves_the_value_before_it():
    # after `for i in range(0)`, i is the value it had before the loop: one web
    new, _ = _same("""
        def f(n):
            i = -1
            for i in range(n):
                pass
            return i
        """, (0,), (3,))
    assert "i_2" not in new, new


def test_break_and_continue():
    _same("""
        def f(n, stop):
            x = 0.0
            y = 1.0
            for i in range(n):
                x = x + i
                if i == stop:
                    y = x
                    break
                if i % 2:
                    x = x * 0.5
                    continue
                y = y + x
            else:
                y = -y
            return x, y
        """, (5, 2), (5, 10), (0, 0))


def test_while_with_else():
    _same("""
        def f(n):
            k = 0
            v = 1.0
            while k < n:
                v = v * 1.5
                k = k + 1
                if v > 10.0:
                    break
            else:
                v = -v
            return v, k
        """, (2,), (20,), (0,))


def test_a_parameter_keeps_its_name():
    new, _ = _same("""
        def f(x):
            y = x * 2.0
            x = x + 1.0
            return x * y
        """, (3.0,))
    assert new.startswith("def f(x):") and "x_2 = x + 1.0" in new and "x_2 * y" in new, new


@pytest.mark.parametrize("returns_in_branch", [True, False])
def test_a_constant_is_dropped_where_no_read_sees_it(returns_in_branch):
    # (generated code starts a variable assigned in branches defined): with a return in the
    # branch every read follows another assignment; without it, the last read may see 0.0
    ret, after = ("return x", "x = 2 * a") if returns_in_branch else ("pass", "pass")
    new, _ = _same(f"""
        def f(c, a):
            x = 0.0
            if c:
                x = a
                {ret}
            {after}
            return x
        """, (True, 1.5), (False, 1.5))
    assert ("x = 0.0" in new) != returns_in_branch, new


def test_an_accumulation_reads_and_assigns_one_web():
    # `g += b` after `g = 0.0` is the second web of g; `w += v` changes an array in place
    new, _ = _same("""
        def f(a, b, v):
            g = 0.0
            g += a
            h = g
            g = 0.0
            g += b
            w = v
            w += v
            return h, g, w, v
        """, (1.0, 2.0, np.arange(3.0)))
    assert "g += a" in new and "g_2 = 0.0" in new and "g_2 += b" in new, new
    assert "w += v" in new, new


def test_names_in_objmode_lambdas_and_deletes_are_left_alone():
    new, count = _same("""
        def f(a):
            t = a + 1.0
            g = lambda z: z + t
            u = g(1.0)
            t = a * 3.0
            return u + t
        """, (2.0,))
    assert count == 0, new
    new, count = _split("""
        def f(a):
            t = a + 1.0
            with objmode(t='float64'):
                t = t * 2.0
            u = t
            t = 5.0
            return u + t
        """)
    assert count == 0, new


def test_a_read_before_any_assignment_leaves_the_name_alone():
    new, count = _split("""
        def f(c):
            if c:
                y = x
            x = 1.0
            x = 2.0
            return x
        """)
    assert "x_2" not in new, new


def test_a_function_with_a_parallel_loop_is_left_as_written():
    src = """
        def f(n):
            s = 0.0
            t = 1.0
            for i in numba.prange(n):
                s += i
            t = 2.0
            return s + t
        """
    new, count = _split(src)
    assert count == 0 and new == ast.unparse(ast.parse(textwrap.dedent(src))), new


def test_one_name_node_in_two_places_gets_one_name():
    tree = ast.parse(textwrap.dedent("""
        def f(a, b):
            t = a
            y = t
            t = b
            z = t
            return y + z
        """))
    fn = tree.body[0]
    shared = fn.body[1].value           # the `t` read by `y = t`, read again by `z = ...`
    fn.body[3].value = ast.BinOp(left=shared, op=ast.Add(), right=fn.body[3].value)
    before = ast.unparse(tree)
    split_webs(fn)
    after = ast.unparse(ast.fix_missing_locations(tree))
    assert _run(after, 1.0, 10.0) == _run(before, 1.0, 10.0), after


# -- drawn programs ------------------------------------------------------------------------------

NAMES = ("a", "b", "c", "d")


def _expr(r):
    k = r.random()
    if k < 0.3:
        return r.choice(NAMES)
    if k < 0.45:
        return repr(round(r.uniform(-2, 2), 2))
    right = _expr(r) if r.random() < 0.4 else r.choice(NAMES)
    return f"({r.choice(NAMES)} {r.choice(['+', '-', '*'])} {right})"


def _block(r, depth, loops, indent):
    lines = []
    for _ in range(r.randint(1, 4)):
        k = r.random()
        pad = "    " * indent
        if k < 0.45 or depth == 0:
            op = "+=" if r.random() < 0.25 else "="
            lines.append(f"{pad}{r.choice(NAMES)} {op} {_expr(r)}")
            lines.append(f"{pad}trace.append({r.choice(NAMES)})")
        elif k < 0.65:
            lines.append(f"{pad}if {_expr(r)} > 0:")
            lines += _block(r, depth - 1, loops, indent + 1)
            if r.random() < 0.6:
                lines.append(f"{pad}else:")
                lines += _block(r, depth - 1, loops, indent + 1)
        elif k < 0.85:
            var = f"i{depth}"
            lines.append(f"{pad}for {var} in range({r.randint(0, 3)}):")
            lines.append(f"{pad}    {r.choice(NAMES)} = {_expr(r)} + {var}")
            lines += _block(r, depth - 1, loops + 1, indent + 1)
            if r.random() < 0.3:
                lines.append(f"{pad}else:")
                lines += _block(r, depth - 1, loops, indent + 1)
        elif loops and k < 0.93:
            lines.append(f"{pad}if {_expr(r)} > 1:")
            lines.append(f"{pad}    {r.choice(['break', 'continue'])}")
        else:
            lines.append(f"{pad}if {_expr(r)} > 3:")
            lines.append(f"{pad}    return {_expr(r)}, trace")
    return lines


def _program(seed):
    r = random.Random(seed)
    body = ["    trace = []"]
    body += [f"    {n} = {n} * 1.0" for n in NAMES[2:] if r.random() < 0.5]
    body += _block(r, 3, 0, 1)
    body.append(f"    return {_expr(r)}, trace")
    return "def f(a, b, c, d):\n" + "\n".join(body) + "\n"


@settings(max_examples=300)
@given(st.integers(0, 2**32 - 1))
def test_drawn_programs_compute_the_same(seed):
    src = _program(seed)
    new, _ = _split(src)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        args = tuple(float(v) for v in rng.normal(size=4).round(2))
        assert repr(_run(new, *args)) == repr(_run(src, *args)), (src, new)


def test_drawn_programs_rename_something():
    """(the drawn programs are not all left as they were: the test above tests renaming)"""
    renamed = sum(_split(_program(seed))[1] > 0 for seed in range(50))
    assert renamed > 25


# -- generated code ----------------------------------------------------------------------------

def spline_like(x, n):
    """A loop whose body the gradient computes again before its adjoint, branches assigning
    the same names, and a reused temporary: the shapes webs are made for."""
    s = 0.0
    for k in range(n):
        t = x[k] * 2.0
        if t < 0.5:
            p = t * t
        elif t > 1.5:
            p = 3.0 * t - 2.0
        else:
            p = t
        s += p * x[(k + 1) % n]
    return s


def test_the_gradient_agrees_with_central_differences():
    from fd import fd_grad
    from numba import njit
    rng = np.random.default_rng(5)
    x = rng.uniform(0.0, 1.0, size=9)
    g = adjit.grad(spline_like, 0)
    np.testing.assert_allclose(g(x, 9), fd_grad(njit(spline_like), (x, 9), 0), rtol=1e-6,
                               atol=1e-8)
    src = g.source
    tree = ast.parse(src)
    fn = tree.body[0]
    assigned = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    assigned[t.id] = assigned.get(t.id, 0) + 1
    # the backward sweep's copy of the body has names of its own
    assert assigned.get("t", 0) == 1 and assigned.get("t_2", 0) == 1, src


def test_a_generated_adjoint_split_again_is_unchanged():
    """split_webs of its own output renames nothing more (a name per web already)."""
    rng = np.random.default_rng(6)
    g = adjit.grad(spline_like, 0)
    g(rng.uniform(size=5), 5)
    fn = ast.parse(g.source).body[0]
    assert split_webs(fn) == 0

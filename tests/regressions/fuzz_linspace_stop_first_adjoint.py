"""Found by the program fuzzer (2026-11-30, campaign --seed 23 --groups, chunk 12,
program seed 3797; reduced by hand below): generated code raised.

argnums=(3,) (python): UnboundLocalError: cannot access local variable 'v31_bar' where it
is not associated with a value (compiled by numba: "numba could not compile the generated
f_value_and_grad_taped (an adjit bug)": an InternalError, not a wrong number).

Reduced by hand (fails the same way, `adjit.grad(g3)(np.array([0.3, 0.4]))`):

    def g3(w):
        v = math.tan(w[0])
        return math.atan(v) + np.sum(np.linspace(1.0, v, 2) - w)

The backward sweep (adjit.show(g3, "adjoint", w)) reads

    v_bar += vec.linspace_stop_bar(_t3_bar)
    v_bar = _t10_bar * (1.0 / (1.0 + v * v))

with no `v_bar = 0.0` before the first line: atan's contribution is taken for v_bar's first
one (its `v_bar = 0.0; v_bar += ...` merged into an assignment by reverse/emit.py
_merge_resets), while np.linspace's stop adjoint (the registry rule
`vec.linspace_stop_bar(out_bar)`, an array call's adjoint of a scalar argument) comes before
it in the sweep. `v + np.sum(np.linspace(1.0, v, 2) - w)` works; atan(v) (or another
scalar use of v before the linspace in the expression) is needed.

Cause and fix: the adjoint's single-use analysis (reverse/facts.py single_use_temps) counts
the statements each scalar's adjoint receives from (ReverseBuilder._contributing_operands),
and skipped every statement assigning an array, np.linspace's among them: v's one counted
user was atan(v), whose contribution then assigned v_bar. An array operation's scalar
operands now count (reverse/adjoint.py); tests/test_numpy_surface.py has the reduced program.
"""
PARAMS = (('x', 'array1'), ('y', 'float'))
SEED = 3797
GROUPS = ()
SOURCE = '''\
def f(x, y):
    v = math.tan(0.3 * x[0] + y)
    return math.atan(v) + np.sum(np.linspace(1.0, v, 2) - x[:2])
'''

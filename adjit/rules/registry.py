"""The registry of primitives: what adjit knows about every function it can call.

One `Primitive` per function object (`math.sin`, `np.exp`, `np.sum`, `np.dot`, ...), made by
one `define(...)` call in adjit/rules/table.py. Every pass asks the registry, by the object a
name resolves to, never by spelling (numeric constants such as np.pi, math.e and np.inf need
no entry: the normalizer folds any int or float a name resolves to):

- `rule`: the partial derivatives (a Rule: Python expression templates over the operand
  names and `out`), read by the reverse pass (`a_bar += out_bar * partial`), the tangent
  pass (`out_dot = partial * a_dot + ...`) and type inference (`result`); None for
  functions that are not scalar primitives;
- `family`: how a call is lowered: "operator" (an ast operator class: `+`, unary `-`, ...),
  "scalar" (a call on numbers, kept as it is),
  "elementwise" (a numpy function applied to every element of its broadcast arguments:
  `scalar` is what each element gets, a scalar primitive or a lowering keyword such as
  "pow"), "reduction" (`reduction` names it: sum, mean, prod, max, min), "array" (kept
  whole or lowered by the vectorizer's `handler`), "allocate", "constant" (arrays of
  constants), "helper" (adjit's own integer helpers in generated code), "inactive"
  (functions with no derivative, called as they are: integer results such as np.argsort,
  random draws);
- `params` and `result` (inactive functions): the parameter names a call may give by
  keyword, and the shape/dtype rule - a function of the arguments' dimensions (an int per
  argument: 0 for a number, the ndim of an array; ("tuple", m) for a tuple of m sizes; None
  for one left out) returning (ndim, dtype), ndim 0 for a number, dtype "f" or "i";
  `statement` marks one called for its effect alone (np.random.seed); `options`: keywords
  numba takes only as string constants, passed on as written ({"kind": ("quicksort",
  "mergesort")} for np.argsort: which order ties take decides the gradient through it);
- `cost`: "expensive" for functions that cost more to recompute than a tape push and pop
  (the backward sweep records their values rather than replaying them);
- `paired`: for an expensive function, the function its rule's partial calls on the same
  argument (math.sin's partial is math.cos(x)), which LLVM computes together with it in
  one `sincos` call: where the backward sweep evaluates that partial, computing the value
  again there costs almost nothing, and it is replayed rather than recorded;
- `notes`: what docs/coverage.md says of the function beyond its derivative's arguments;
  `through`: for a whole-array function whose handler does not tell, the arguments a
  derivative flows through, as that page lists them;
- `domain`: where the generic test harness (tests/test_registry.py) draws each argument;
- `methods`: array methods that mean the same (`a.sum()` for np.sum);
- `cuda`: False for a function whose rule calls what numba.cuda does not compile;
- `fresh`: for an "array" entry, that its result is always a new array or a number, never
  an argument or a view of one (np.full_like, np.concatenate); unmarked, the alias
  analysis of helpers adjit calls as numba compiles them (frontend/purity.py) takes the
  result as holding the arguments' memory;
- `array_rule`: for an operation kept at array level in generated code (matrix products,
  np.linspace, np.arange), its derivative (an ArrayRule);
- `packed`: for a function whose result is a number or a tuple (np.linalg.det, slogdet,
  eigh), or one numba types awkwardly (matrix_power's result is Optional), (helper, how):
  the helper computes the result as one array, whose ArrayRule is the derivative, and `how`
  unpacks it where the call stood ("item": element 0, "items": each element, "rows": row 0
  and the rows below it, "whole": the array itself, "qr": [Q^T | R] split after the
  argument's row count).

- `effect`: for a call with an effect beyond its result (a random draw advances numba's
  generator, np.random.seed resets it, print writes), why: such a call runs exactly once,
  in program order, in the forward sweep; no pass drops it, moves it or evaluates it again
  (analysis/effects.py, which also decides for calls with no entry);
- `draw`: for a random draw numba computes from standard draws (np.random.normal(loc,
  scale) is loc + scale * z), (scalar, sized): the functions of rules/draws.py written as
  numba computes it, which the normalizer inlines in place of a call without and with
  `size` (their derivative in the parameters is the pathwise one);
- `refused`: parameters (names in `params`) a random draw has no pathwise derivative in
  (gamma's shape, poisson's lam): a derivative flowing into one is an AdjitError naming
  the draw and the parameter;

- `forms`: the argument forms numba accepts for the function, as calls a user writes
  (rules/forms.py): tests/test_arguments.py calls each against numba and finite
  differences; adjit honours every argument or refuses the call naming it;

- `message`: for MPI (numba-mpi, rules/messages.py): on a call users write (family
  "message"), how it is lowered to a function of values; on that function (an "array"
  entry), which operands are always active (`forced`) and whether its value is the same on
  every rank (`replicates`).

docs/coverage.md is generated from the registry (`make coverage`).
"""
import ast
from .. import ir


class Rule:
    """Partial derivatives of one primitive, as parsed expression templates."""

    def __init__(self, params, partials, result="float", joint=None, usual=False):
        self.params = tuple(params)
        # usual: every partial is `A if C else B` where C holds for all but rare arguments
        # and B is a costly fallback for those (an accuracy branch): a loop that vectorizes
        # runs A alone where C holds at every iteration (codegen/usual.py)
        self.usual = usual
        self.partials = tuple(None if p is None else ast.parse(p, mode="eval").body
                              for p in partials)
        self.text = tuple(partials)
        self.result = result
        assert len(self.params) == len(self.partials)
        # (shared, adjoints): where every operand is active, `shared` (over the operands,
        # `out` and `bar`, the result's adjoint) is computed once and operand k's adjoint
        # term is adjoints[k] (which names it `shared`): `a / b` divides once, not twice
        self.joint = None if joint is None else (
            ast.parse(joint[0], mode="eval").body,
            tuple(ast.parse(e, mode="eval").body for e in joint[1]))


class Refused(Exception):
    """Raised by an ArrayRule's `result` for operands the operation does not take (numba
    does not compile it for them): args are (the construct, what to write instead)."""


def _values_named(expr):
    """The names whose values `expr` reads: not a name read only for its shape (`x.shape`,
    `x.ndim`, `x.size`: an MPI message's adjoint allocates the cotangent it receives in the
    shape of what was sent)."""
    shape_only = {id(n.value) for n in ir.walk(expr) if isinstance(n, ast.Attribute)
                  and n.attr in ("shape", "ndim", "size") and isinstance(n.value, ast.Name)}
    return {n.id for n in ir.walk(expr) if isinstance(n, ast.Name) and id(n) not in shape_only}


class ArrayRule:
    """The derivative of an operation kept at array level (a matrix product, np.linspace):
    for each operand, `reverse[k]` is added to its adjoint and `tangent[k]` is its term of
    the result's tangent - Python expressions over the operand names, `out`, `out_bar` (the
    result's adjoint) and `d` (the operand's tangent); None for an operand with no
    derivative. `defaults` fill operands a call leaves out; `result(args)` gives the
    result's (ndim, dtype) from the operands' (ndim, is_float), ndim 0 for a number
    (or raises Refused);
    `read_params`: the operands whose values the reverse expressions name (a matrix
    product's other factor, np.take_along_axis's indices: derived from them; an operand named
    only for its shape, `x.shape`, is not read), `reads` whether
    there are any, `reads_out` whether they read the result (what they read must then not
    change afterwards, or is recorded where it does). `shared`: an expression
    the reverse expressions of several operands need (`shared` names its value there),
    computed once before them (np.linalg.solve's solve with the transpose). `helpers`: names
the expressions call that are not in generated code's namespace (the compiled rules of a
function given its own derivative, adjit/custom.py), with the objects they stand for.
`missing_tangent`: why an operand whose `tangent` is None has a derivative all the same
(forward mode through it is refused with this text, or with this (what, instead) pair).
`always`: operands whose reverse and tangent expressions run even when the operand carries
no derivative, the reverse's value dropped and the tangent taken as zeros (an MPI message's
answer, which the other rank waits for). `exact`: every reverse expression is a new array in
exactly its operand's shape (a matrix product's terms, an inverse's, a Cholesky factor's),
so the first term an adjoint receives can be assigned to it instead of added into zeros
(reverse/resets.py).
`sized_by`: the operands whose values set the result's shape (np.arange's bounds,
np.linspace's num, np.extract's condition), beside the shapes of its array operands: in a
loop that changes them the result's shape changes (reverse/validate.py). `unanswered`:
operand position -> why the rule gives it no cotangent (a custom_vjp rule's None for a
tuple): where a derivative flows from such an operand, reverse mode refuses with it."""

    def __init__(self, key, params, reverse, tangent, result, defaults=None,
                 shared=None, helpers=None, missing_tangent=None, always=(), exact=False,
                 sized_by=(), unanswered=None):
        self.key = key
        self.unanswered = dict(unanswered or {})
        self.sized_by = tuple(sized_by)
        self.exact = exact
        self.always = tuple(always)
        self.helpers = dict(helpers or {})
        self.missing_tangent = missing_tangent
        self.shared = None if shared is None else ast.parse(shared, mode="eval").body
        self.params = tuple(params)
        self.reverse = tuple(None if r is None else ast.parse(r, mode="eval").body
                             for r in reverse)
        self.tangent = tuple(None if t is None else ast.parse(t, mode="eval").body
                             for t in tangent)
        self.result = result
        self.defaults = {k: ast.parse(v, mode="eval").body
                         for k, v in (defaults or {}).items()}
        self.text = (tuple(reverse), tuple(tangent))
        self.reads_out = any(isinstance(n, ast.Name) and n.id == "out"
                             for r in self.reverse + (self.shared,) if r is not None
                             for n in ir.walk(r))
        named = set()
        for r in self.reverse + (self.shared,):
            if r is not None:
                named |= _values_named(r)
        self.read_params = tuple(p for p in self.params if p in named)
        self.reads = bool(self.read_params)

    @property
    def differentiable(self):
        return tuple(k for k, r in enumerate(self.reverse) if r is not None)


class Primitive:
    """What adjit knows about one function (see the module docstring)."""

    def __init__(self, obj, name, family, rule=None, scalar=None, arity=1, reduction=None,
                 handler=None, cost="cheap", domain=None, methods=(), notes="", params=(),
                 result=None, statement=False, cuda=True, array_rule=None, packed=None,
                 message=None, paired=None, effect=None, draw=None, refused=(), forms=(),
                 through="", over_array=None, vector=None, options=None, reads_only=False,
                 fresh=False):
        self.obj = obj
        self.name = name
        self.family = family
        self.rule = rule
        self.scalar = scalar
        self.arity = arity
        self.reduction = reduction
        self.handler = handler
        self.cost = cost
        self.domain = domain
        self.methods = tuple(methods)
        self.notes = notes
        self.params = tuple(params)
        self.result = result
        self.statement = statement
        self.cuda = cuda
        self.array_rule = array_rule
        self.packed = packed
        self.message = message
        self.paired = paired
        self.effect = effect
        # a call made for its effect that reads its arguments and writes none (print)
        self.reads_only = reads_only
        self.draw = draw
        self.refused = tuple(refused)
        self.forms = tuple(forms)
        self.through = through
        self.over_array = over_array    # a builtin given one array: this reduction of it
        # how a loop calling it vectorizes (codegen/vector_math.py): "inline" (numba lowers it
        # to arithmetic or an LLVM intrinsic LLVM vectorizes), the function of runtime/vmath.py
        # that replaces it in such a loop, or None (a call LLVM cannot vectorize)
        self.vector = vector
        self.options = dict(options or {})
        # an "array" entry whose result is always a new array or a number (never an argument
        # or a view of one, as numba implements it): frontend/purity.py takes it as holding
        # none of the caller's memory (an entry not marked is taken as it may)
        self.fresh = fresh

    @property
    def differentiable(self):
        """Positions of the arguments a derivative flows through (for the docs)."""
        if self.rule is not None:
            return [p for p, d in zip(self.rule.params, self.rule.partials) if d is not None]
        return []

    def __repr__(self):
        return f"<primitive {self.name} ({self.family})>"


class Registry:
    """Primitives by the object they describe, in definition order."""

    def __init__(self):
        self.entries = []
        self._by_obj = {}

    def define(self, obj, name, family, **fields):
        entry = Primitive(obj, name, family, **fields)
        if obj in self._by_obj:
            raise ValueError(f"{name} is defined twice")
        self._by_obj[obj] = entry
        self.entries.append(entry)
        return entry

    def get(self, obj):
        """The Primitive of `obj`, or None (unhashable objects, arrays, simply miss)."""
        try:
            return self._by_obj.get(obj)
        except TypeError:
            return None

    def family(self, *families):
        return [e for e in self.entries if e.family in families]


REGISTRY = Registry()

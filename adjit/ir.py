"""Helpers to build and inspect normalized (A-normal form) statements.

The normalized program is ordinary Python AST with one primitive operation per assignment:
every operand is an *atom*, a Name or a numeric Constant. Control flow is `if` on a fresh
condition variable, `for` over `range` with atom bounds, and `while True` whose exits are
flags. Statements carry notes, read and written only through `note` and `annotate`:
`origin` (filename, line, function) of the user code they came from, and the passes' marks
(`trip`, `user`, `hoisted`, `forward_only`, `atomic`, `checkpoint`).
"""
import ast
import copy

NOTES = ("origin", "user", "trip", "hoisted", "forward_only", "atomic", "checkpoint", "opaque",
         "callee", "parallel", "comment", "pkey", "fills", "message", "gather",
         "overwritten", "steps", "effect", "raises", "whole", "time_loop", "unwritten",
         "written", "pure", "named", "web")
"""The notes a statement can carry (and `named`, on a tuple expression passed to a call with no
rule: the field names of the named tuple it was, numba_calls.opaque_tuple): origin
(filename, line, function) of the user code it came from; on loops, trip (the name of the
trip counter of a lowered while loop, or None), user (a loop the user wrote, not one of
vectorized code) and hoisted (names moved in front of it);
forward_only (a statement the backward sweep skips), atomic (a store standing for
cuda.atomic.add), checkpoint (a marker of a checkpointed loop); on a call with no derivative
rule, opaque (its result descriptor, rules/opaque.py) and callee (the call as the user wrote
it, where generated code calls a wrapper: "`math.frexp` (element 0 of its result)"); on
a user's loop over numba.prange, parallel, and pkey (the id of the forward loop, on its
reversed loop and on the tape reservation in front of it); comment (a line of text .source
shows above the statement, after its origin); message (an MPI message's statement: kept in
every forward sweep, never moved or computed again); gather, on the three loops of a
stencil adjoint in gather form (reverse/fission.py), (role, description): "head", "main"
or "tail", and one dict for the three (the array added into, the index, the original
range's bounds lo and hi, the lowest and highest neighbour offsets); effect (a statement
making a call with an effect beyond its result, why: run once, in program order, never
dropped, moved or computed again; analysis/effects.py); raises (the user's `raise`
statement, vec.raise_error: the path that reaches it ends there, normalize/exits.py); whole
(on `x_bar += term`, where the term is a new array in exactly x's shape: the name x, whose
zeros x_bar was allocated as; reverse/resets.py); time_loop (on the forward and the reversed
loop of a top-level loop checkpoint="auto" would checkpoint, in a gradient that records it:
no pass changes the order or the functions of its steps' floating-point operations, as
checkpointing runs them step by step: the reversed loop stays downward (ascending.py), its
sums are not taken in vector lanes (dots.py) nor its scatters gathered (fission.py), and
its own statements keep the C library's functions (codegen/vector_math.py); so recorded and
checkpointed gradients agree to the bit); unwritten (on a call with no rule made for its
effect, true where it writes none of the arrays it is given: a `with objmode()` block's,
normalize/objmode.py); written (on an element store the user wrote, `a[i] = v`, `a[i] += v`,
`a[lo:hi] = v`, and on the stores of the loops such a slice store becomes: a float it stores
into an integer array truncates, as in numba, and analysis/types.py does not make the array
a float one for it); pure (on a call of an @njit helper adjit cannot read, kept as numba's,
that frontend/purity.py showed writes nothing it is given and has no effect: it may be
computed again or checkpointed like arithmetic, but it may raise where numba's function
would, so it is neither dropped where unused nor moved out of its loop); web (on the target
Name of an assignment normalize/webs.py renamed, `x_2`: the name the user wrote, for
messages)."""


def note(node, key, default=None):
    """The note `key` of a statement, or `default`."""
    assert key in NOTES, key
    return getattr(node, "_" + key, default)


def annotate(node, **notes):
    """Set notes on a statement; returns it."""
    for key, value in notes.items():
        assert key in NOTES, key
        setattr(node, "_" + key, value)
    return node


def copy_notes(source, target, keys=NOTES):
    """Give `target` the notes `source` has (of `keys`); returns target."""
    for key in keys:
        if hasattr(source, "_" + key):
            setattr(target, "_" + key, getattr(source, "_" + key))
    return target


def name(id_):
    return ast.Name(id=id_, ctx=ast.Load())


def is_range_loop(loop):
    """Whether a for loop runs over `range(...)`."""
    it = loop.iter
    return isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"


def is_prange_loop(loop):
    """Whether a for loop runs over `prange(...)` or `numba.prange(...)` (its iterations on
    several threads)."""
    it = loop.iter
    f = it.func if isinstance(it, ast.Call) else None
    return (isinstance(f, ast.Name) and f.id == "prange") or \
        (isinstance(f, ast.Attribute) and f.attr == "prange")


def atomic_add(array, index, value, origin=None):
    """The statement `cuda.atomic.add(array, index, value)`."""
    func = ast.Attribute(value=ast.Attribute(value=name("cuda"), attr="atomic", ctx=ast.Load()),
                         attr="add", ctx=ast.Load())
    node = ast.Expr(value=ast.Call(func=func, args=[name(array), index, value], keywords=[]))
    annotate(node, origin=origin)
    return node


def barrier_call():
    """The call `cuda.syncthreads()` (a CUDA block's barrier: its statement is mirrored
    in the backward sweep)."""
    return ast.Call(func=ast.Attribute(value=name("cuda"), attr="syncthreads", ctx=ast.Load()),
                    args=[], keywords=[])


def if_nonzero(var, body):
    """`if var != 0.0: body` (an addition of a sum skipped where it would add nothing)."""
    return ast.If(test=ast.Compare(left=name(var), ops=[ast.NotEq()], comparators=[const(0.0)]),
                  body=body, orelse=[])


def is_barrier(stmt):
    """Whether a statement is `cuda.syncthreads()`."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
        isinstance(stmt.value.func, ast.Attribute) and stmt.value.func.attr == "syncthreads" \
        and isinstance(stmt.value.func.value, ast.Name) and stmt.value.func.value.id == "cuda"


def store(id_):
    return ast.Name(id=id_, ctx=ast.Store())


def const(value):
    return ast.Constant(value=value)


class _Parenthesize(ast.NodeTransformer):
    """A negative number as the base of `**` (or of an attribute or subscript) spelled as
    `(-0.7)`: ast.unparse writes `-0.7 ** 2`, which Python reads as -(0.7 ** 2)."""

    @staticmethod
    def _wrap(node):
        if isinstance(node, ast.Constant) and _negative(node.value):
            return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=-node.value))
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Pow):
            node.left = self._wrap(node.left)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        node.value = self._wrap(node.value)
        return node

    def visit_Subscript(self, node):
        self.generic_visit(node)
        node.value = self._wrap(node.value)
        return node


def unparse(node):
    """Python source for an AST node, with a negative number as the base of `**`
    parenthesized (ast.unparse spells Constant(-0.7) ** 2 as `-0.7 ** 2`, which is -0.49)."""
    if not any(_negative_base(n) for n in walk(node)):
        return ast.unparse(node)            # (nothing to parenthesize: no copy needed)
    return ast.unparse(_Parenthesize().visit(copy.deepcopy(node)))


def _negative_base(n):
    base = n.left if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow) else \
        n.value if isinstance(n, (ast.Attribute, ast.Subscript)) else None
    return isinstance(base, ast.Constant) and _negative(base.value)


def _negative(value):
    return isinstance(value, (int, float, complex)) and not isinstance(value, bool) and (
        value.real < 0 or (isinstance(value, float) and str(value).startswith("-")))


def assign(target, value, origin=None):
    node = ast.Assign(targets=[store(target) if isinstance(target, str) else target],
                      value=value, lineno=0)
    annotate(node, origin=origin)
    return node


def parse(text):
    """The statements of a piece of source text."""
    return ast.parse(text).body


def fold_int(node):
    """`node` (an index or bound) with its integer constant arithmetic done, constants
    added to a sum gathered into one and additions of zero dropped: `_fbase1 + (0 - 1) + 1`
    reads `_fbase1`, `n - 1 + 1` reads `n`. Integers only: float sums keep their order."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = fold_int(node.operand)
        if isinstance(inner, ast.Constant) and type(inner.value) is int:
            return ast.Constant(value=-inner.value)
        return ast.UnaryOp(op=ast.USub(), operand=inner)
    if not isinstance(node, ast.BinOp) or not isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        return node
    left, right = fold_int(node.left), fold_int(node.right)
    const = [isinstance(x, ast.Constant) and type(x.value) is int for x in (left, right)]
    if all(const):
        a, b = left.value, right.value
        return ast.Constant(value=a + b if isinstance(node.op, ast.Add) else
                            a - b if isinstance(node.op, ast.Sub) else a * b)
    if isinstance(node.op, (ast.Add, ast.Sub)):
        # (x + c1) + c2 -> x + (c1 + c2); x + 0 -> x; 0 + x -> x
        c = right.value if const[1] else None
        if c is not None:
            c = c if isinstance(node.op, ast.Add) else -c
            if isinstance(left, ast.BinOp) and isinstance(left.op, (ast.Add, ast.Sub)) and \
                    isinstance(left.right, ast.Constant) and type(left.right.value) is int:
                c += left.right.value if isinstance(left.op, ast.Add) else -left.right.value
                left = left.left
            if c == 0:
                return left
            return ast.BinOp(left=left, op=ast.Add() if c > 0 else ast.Sub(),
                             right=ast.Constant(value=abs(c)))
        if const[0] and left.value == 0:
            return right if isinstance(node.op, ast.Add) else ast.UnaryOp(op=ast.USub(),
                                                                          operand=right)
        if const[0] and isinstance(node.op, ast.Add):
            return fold_int(ast.BinOp(left=right, op=ast.Add(), right=left))     # c + x -> x + c
        if isinstance(right, ast.BinOp) and isinstance(right.op, (ast.Add, ast.Sub)) and \
                isinstance(right.right, ast.Constant) and type(right.right.value) is int:
            # x + (y - c) -> (x + y) - c
            inner = ast.BinOp(left=left, op=node.op, right=right.left)
            c = right.right.value if isinstance(right.op, ast.Add) else -right.right.value
            c = c if isinstance(node.op, ast.Add) else -c
            return fold_int(ast.BinOp(left=inner, op=ast.Add(), right=ast.Constant(value=c)))
    if isinstance(node.op, ast.Mult) and any(const):
        c, x = (left.value, right) if const[0] else (right.value, left)
        if c == 1:
            return x
    return ast.BinOp(left=left, op=node.op, right=right)


def load_names(node):
    """Every Name node `node` reads (loads), nested ones included."""
    return [n for n in walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]


def constant_int(node):
    """The value of an integer constant (`3`, `-1`) written in the source, or None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and \
            isinstance(node.operand, ast.Constant) and type(node.operand.value) is int:
        return -node.operand.value
    return None


def constant_slice(node):
    """The Python slice a `lower:upper:step` written with integer constants (or left out)
    means, or None where a bound is anything else."""
    parts = (node.lower, node.upper, node.step)
    bounds = [None if b is None else constant_int(b) for b in parts]
    if any(b is None and e is not None for b, e in zip(bounds, parts)):
        return None
    return slice(*bounds)


def is_atom(node):
    return isinstance(node, (ast.Name, ast.Constant))


def atom_names(nodes):
    """Names read by a list of atoms (constants read nothing)."""
    return [n.id for n in nodes if isinstance(n, ast.Name)]


def target_name(stmt):
    """The variable an assignment writes, or None for an element store."""
    tgt = stmt.targets[0]
    return tgt.id if isinstance(tgt, ast.Name) else None


def is_store(stmt):
    return isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Subscript)


def stored_names(stmts):
    """The arrays element stores in `stmts` (nested statements too) write into."""
    return {s.targets[0].value.id for s in walk_stmts(stmts) if is_store(s)}


def index_atoms(sub):
    """The index atoms of `a[i]` or `a[i, j]`."""
    idx = sub.slice
    return list(idx.elts) if isinstance(idx, ast.Tuple) else [idx]


def _tuple_leaves(a):
    """The atoms of a call's argument: a tuple's items, nested tuples' too (a grid of
    (start, stop, count) tuples passed to a call kept as numba's)."""
    if isinstance(a, ast.Tuple):
        return [x for e in a.elts for x in _tuple_leaves(e)]
    return [a]


def operands(value):
    """The atoms an assignment's right-hand side reads, in order."""
    if is_atom(value):
        return [value]
    if isinstance(value, ast.BinOp):
        return [value.left, value.right]
    if isinstance(value, ast.UnaryOp):
        return [value.operand]
    if isinstance(value, ast.Compare):
        return [value.left, value.comparators[0]]
    if isinstance(value, ast.Call):
        out = []
        for a in value.args:
            out.extend(_tuple_leaves(a))
        if isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Name) \
                and value.func.value.id not in ("math", "np", "vec"):
            out.insert(0, value.func.value)
        return out
    if isinstance(value, ast.Subscript):
        base = value.value
        arr = base.value if isinstance(base, ast.Attribute) else base
        return [arr] + index_atoms(value)
    if isinstance(value, ast.Attribute):    # cuda.threadIdx.x, ...: reads no variable
        return []
    raise AssertionError(f"not a normalized right-hand side: {ast.dump(value)}")


def reads(stmt):
    """Variable names a simple statement reads."""
    if isinstance(stmt, ast.Assign):
        names = atom_names(operands(stmt.value))
        if is_store(stmt):
            names += [stmt.targets[0].value.id] + atom_names(index_atoms(stmt.targets[0]))
        return names
    if isinstance(stmt, ast.Return):
        return atom_names([stmt.value])
    return []


_NOT_NODES = {"id", "attr", "arg", "name", "kind", "type_comment", "module", "level",
              "is_async", "conversion", "ctx"}
"""Fields that never hold a node (names, strings, numbers), and `ctx`, which holds the
expression context walk leaves out."""
_CHILD_FIELDS = {}


def _child_fields(cls):
    """The fields of an ast class that may hold nodes (not names, strings, numbers), less
    `ctx` (walk leaves the expression contexts out)."""
    fields = _CHILD_FIELDS.get(cls)
    if fields is None:
        fields = tuple(f for f in cls._fields if f not in _NOT_NODES and
                       not (cls is ast.Constant and f == "value"))
        _CHILD_FIELDS[cls] = fields
    return fields


def walk(node):
    """Every node in the tree under `node`, itself first: the nodes ast.walk yields, in the
    same (breadth-first) order, but the expression contexts (the ast.Load, ast.Store or
    ast.Del of a Name, Attribute or Subscript: read its `ctx`, a third of the nodes), at
    about a third of ast.walk's cost (every pass walks its trees many times). Like
    ast.walk, a node's children are taken before the node is yielded."""
    todo = [node]
    append = todo.append
    fields_of = _CHILD_FIELDS
    node_type = ast.AST
    for n in todo:          # the list grows as it is read: breadth-first
        fields = fields_of.get(n.__class__)
        if fields is None:
            fields = _child_fields(n.__class__)
        for f in fields:
            v = getattr(n, f, None)
            if v.__class__ is list:
                for x in v:
                    if isinstance(x, node_type):
                        append(x)
            elif isinstance(v, node_type):
                append(v)
        yield n


def breaks(stmts, exits=(ast.Break,)):
    """Whether a `break` (or another of `exits`: ast.Continue too, for whether the rest
    of an iteration may not run) in `stmts` (not in a loop inside them) leaves their
    loop."""
    for s in stmts:
        if isinstance(s, exits):
            return True
        if isinstance(s, ast.If) and (breaks(s.body, exits) or breaks(s.orelse, exits)):
            return True
    return False


def always_raises(stmts):
    """Whether running `stmts` (source or normalized statements) always ends in a `raise`:
    one at their top level, or an `if` whose two branches always raise."""
    for s in stmts:
        if isinstance(s, ast.Raise) or note(s, "raises", False):
            return True
        if isinstance(s, ast.If) and s.orelse and always_raises(s.body) and \
                always_raises(s.orelse):
            return True
    return False


def walk_stmts(stmts, raising=True):
    """Every statement in a body, nested ones included, in program order (a body is read
    when the walk reaches it, as the statement before it was yielded). With `raising`
    False, not those of a body that always raises (`always_raises`), `stmts` included:
    statements that run only on the way to an exception."""
    keep = (lambda body: True) if raising else (lambda body: not always_raises(body))
    stack = [iter(stmts if keep(stmts) else ())]
    while stack:
        for s in stack[-1]:
            yield s
            if isinstance(s, ast.If):
                stack.append(_branches(s, keep))
                break
            if isinstance(s, (ast.For, ast.While)):
                stack.append(iter(s.body if keep(s.body) else ()))
                break
        else:
            stack.pop()


def _branches(s, keep):
    for body in (s.body, s.orelse):
        if keep(body):
            yield from body


def blocks(stmts, depth=None, serial=False):
    """Every statement list in `stmts`: itself, then the bodies of its if/for/while
    statements, depth first (the one walker of blocks every pass uses). With `depth` (the
    nesting of `stmts`), yields (block, its depth) pairs; with `serial`, not the bodies of
    prange loops (nor anything inside them)."""
    yield stmts if depth is None else (stmts, depth)
    for s in stmts:
        if isinstance(s, (ast.If, ast.For, ast.While)):
            if serial and isinstance(s, ast.For) and is_prange_loop(s):
                continue
            for inner in (s.body, s.orelse):
                if inner:
                    yield from blocks(inner, None if depth is None else depth + 1, serial)


def rewrite_blocks(stmts, rewrite):
    """`rewrite(block) -> new statements` applied to every statement list, inner ones first
    (an emptied body gets a `pass`); returns the rewritten `stmts`."""
    for s in stmts:
        if isinstance(s, (ast.If, ast.For, ast.While)):
            for field in ("body", "orelse"):
                inner = getattr(s, field)
                if inner:
                    setattr(s, field, rewrite_blocks(inner, rewrite) or [ast.Pass()])
    return rewrite(stmts)


def mark_written(stmts, base):
    """Note the stores into `base` among `stmts` (a slice store the user wrote, a ufunc's
    output) as the user's (NOTES: written)."""
    for s in walk_stmts(stmts):
        if is_store(s) and isinstance(s.targets[0].value, ast.Name) and \
                s.targets[0].value.id == base:
            annotate(s, written=True)


def assigned(stmts):
    """Names assigned anywhere in a body, loop targets included."""
    out = set()
    for s in walk_stmts(stmts):
        if isinstance(s, ast.Assign) and not is_store(s):
            out.add(target_name(s))
        elif isinstance(s, ast.For):
            out.add(s.target.id)
    return out


class Layout:
    """Program-order positions, enclosing loops and blocks of every normalized statement."""

    def __init__(self, stmts):
        self.pos = {}
        self.loops = {}
        self.block_of = {}
        self.blocks = {}
        self.block_loops = {}
        self.sites = {}
        self.parent_block = {}
        self._counter = 0
        self._visit(stmts, (), None)

    def _visit(self, stmts, loops, parent):
        self.blocks[id(stmts)] = stmts
        self.block_loops[id(stmts)] = loops
        self.parent_block[id(stmts)] = parent
        for s in stmts:
            self._counter += 1
            self.pos[id(s)] = self._counter
            self.loops[id(s)] = loops
            self.block_of[id(s)] = id(stmts)
            if isinstance(s, ast.Assign) and not is_store(s):
                self.sites.setdefault(target_name(s), []).append(s)
            if isinstance(s, ast.If):
                self._visit(s.body, loops, id(stmts))
                self._visit(s.orelse, loops, id(stmts))
            elif isinstance(s, ast.For):
                self.sites.setdefault(s.target.id, []).append(s)
                self._visit(s.body, loops + (id(s),), id(stmts))
            elif isinstance(s, ast.While):
                self._visit(s.body, loops + (id(s),), id(stmts))

    def inside(self, stmt, block_id):
        """Whether `stmt` is in the block, directly or nested."""
        b = self.block_of[id(stmt)]
        while b is not None:
            if b == block_id:
                return True
            b = self.parent_block[b]
        return False

    def end_pos(self, stmts):
        """The position of the last statement inside a block, nested ones included."""
        last = stmts[-1]
        while isinstance(last, (ast.If, ast.For, ast.While)):
            inner = last.orelse or last.body if isinstance(last, ast.If) else last.body
            if not inner:
                break
            last = inner[-1]
        return self.pos[id(last)]

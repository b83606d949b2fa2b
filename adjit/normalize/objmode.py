"""`with numba.objmode(t="float64"): ...` blocks: Python code numba runs in object mode
inside compiled code (a timer, a progress message, a call of a library numba cannot
compile), as numba users write it in the function and in its helpers.

Each block becomes a call of a helper that holds the block as written, compiled by numba
(`t = objmode_block_line_12(a, b)`): its parameters are the names of the function the block
reads, its result the block's declared outputs (None, one value or a tuple). adjit does not
read the helper: it is a call with no derivative rule (normalize/numpy_calls.py
opaque_call), kept where no derivative flows through it and refused by name where one
would, and a call with an effect (analysis/effects.py): it runs once, in program order,
never again in the backward sweep or a checkpoint's recomputation, and what it returned is
read from the tape. An array the block may write into (a store, an augmented assignment, a
method or another call it is passed to) is refused where the block is given one: adjit
could not see the change.
"""
import ast
import copy
import threading

import numba
import numpy as np

from ..errors import AdjitError
from ..rules.effects import written_arguments
from .closures import assigned_names

# the calls an array may be passed to in a block without being written (printing, sizes)
_READING_CALLS = frozenset({"print", "len", "str", "repr", "float", "int", "abs", "round",
                            "format", "min", "max", "sum", "type", "isinstance"})
# methods of an array that do not write into it
_READING_METHODS = frozenset({"copy", "sum", "mean", "max", "min", "std", "var", "astype",
                              "tolist", "item", "any", "all", "argmax", "argmin", "dot",
                              "reshape", "ravel", "flatten", "transpose", "cumsum", "prod"})
_CONTEXT = "_adjit_objmode"     # the name the helper's `with` calls numba.objmode by


def lift(src, make_source):
    """`src` with each `with objmode(...)` block a call of its helper; `src` itself when it
    has none. Any other `with` is left for check.py to refuse."""
    if not any(_objmode_item(n, src) is not None for n in ast.walk(src.tree)):
        return src
    tree = copy.deepcopy(src.tree)
    outer = assigned_names(tree) | set(src.params)
    names = {}
    _Lift(src, outer, names).visit(tree)
    ast.fix_missing_locations(tree)
    return make_source(tree, names)


def _objmode_item(node, src):
    """The `withitem` of a `with numba.objmode(...)` statement, or None."""
    if not isinstance(node, ast.With) or len(node.items) != 1 or \
            node.items[0].optional_vars is not None:
        return None
    ctx = node.items[0].context_expr
    func = ctx.func if isinstance(ctx, ast.Call) else ctx
    return node.items[0] if src.resolve(func) is numba.objmode else None


class _Lift(ast.NodeTransformer):
    def __init__(self, src, outer, names):
        self.src, self.outer, self.names = src, outer, names

    def visit_With(self, node):
        item = _objmode_item(node, self.src)
        if item is None:
            return self.generic_visit(node)
        ctx = item.context_expr
        keywords = ctx.keywords if isinstance(ctx, ast.Call) else []
        if isinstance(ctx, ast.Call) and (ctx.args or any(k.arg is None for k in keywords)):
            raise self.src.loc.error(node, "`objmode` with positional or ** arguments",
                                     "Declare each output by name: objmode(t=\"float64\").")
        outputs = [k.arg for k in keywords]
        inputs = _inputs(node.body, self.outer)
        name = f"objmode_block_line_{node.lineno}"
        while name in self.names:
            name += "_"
        box = _slot(self.src, node) if len(outputs) > 1 else None
        self.names[name] = _helper(self.src, node, name, inputs, outputs, keywords, box)
        call = ast.Call(func=ast.Name(id=name, ctx=ast.Load()),
                        args=[ast.Name(id=n, ctx=ast.Load()) for n in inputs], keywords=[])
        if not outputs:
            return ast.copy_location(ast.Expr(value=call), node)
        new = [ast.Assign(targets=[ast.Name(id=outputs[0], ctx=ast.Store())], value=call)]
        # several outputs: the block runs once and keeps the others, which calls of their
        # own then read, one output each, in order (each is a call with an effect: it runs
        # once, where it stands, and what it returned is read from the tape)
        for k in range(1, len(outputs)):
            item = f"{name}_output_{k}"
            self.names[item] = _output_reader(self.src, node, item, keywords[k], k, box)
            new.append(ast.Assign(targets=[ast.Name(id=outputs[k], ctx=ast.Store())],
                                  value=ast.Call(func=ast.Name(id=item, ctx=ast.Load()),
                                                 args=[], keywords=[])))
        return [ast.copy_location(x, node) for x in new]


def _inputs(body, outer):
    """The function's names the block reads before it assigns them, in order of reading."""
    found, stored = [], set()

    def visit(node):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            if node.value is not None:
                visit(node.value)
            if isinstance(node, ast.AugAssign):
                visit(ast.Name(id=node.target.id, ctx=ast.Load())
                      if isinstance(node.target, ast.Name) else node.target)
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                visit(t)
            return
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store):
                stored.add(node.id)
            elif node.id in outer and node.id not in stored and node.id not in found:
                found.append(node.id)
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    for s in body:
        visit(s)
    return found


def _writes(node, name, src):
    """Whether a call given the array held by `name` may write into it: not printing and
    sizes, math's functions, nor numpy's outside numpy.random that are not given it to write
    into (rules/effects.py written_arguments: np.copyto(a, b) writes a, np.add(a, b, c) c)."""
    func = node.func
    if isinstance(func, ast.Name) and func.id in _READING_CALLS:
        return False
    obj = src.resolve(func)
    module = (getattr(obj, "__module__", None) or "").split(".")
    if module[0] == "math":
        return False
    if module[0] != "numpy" or module[1:2] == ["random"]:
        return True
    written = written_arguments(obj, node.args, [(k.arg, k.value) for k in node.keywords])
    return written is None or any(isinstance(a, ast.Name) and a.id == name for a in written)


def _written(body, name, src):
    """Whether the block may write into the array held by `name`."""
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(node, ast.AugAssign) and isinstance(t, ast.Name) and \
                        t.id == name:
                    return True
                while isinstance(t, (ast.Subscript, ast.Attribute)):
                    t = t.value
                    if isinstance(t, ast.Name) and t.id == name:
                        return True
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                    func.value.id == name and func.attr not in _READING_METHODS:
                return True
            passed = any(isinstance(a, ast.Name) and a.id == name
                         for a in node.args + [k.value for k in node.keywords])
            if passed and _writes(node, name, src):
                return True
    return False


# where a block with several outputs keeps the others: the code numba runs in object mode
# reads globals from the module's dictionary, not from the helper's, so the block reaches
# this module's KEPT (a slot per block and thread: threading.local) by importing it
KEPT = {}


def _helper(src, node, name, inputs, outputs, keywords, box=None):
    """The block as a function numba compiles: `def name(inputs): with objmode(...): ...;
    return output`, reading the function's globals and closure. With several outputs
    (`box`, the key of a slot in KEPT) it returns the first and keeps the others there."""
    ctx = ast.Call(func=ast.Name(id=_CONTEXT, ctx=ast.Load()), args=[],
                   keywords=copy.deepcopy(keywords[:1] if box is not None else keywords))
    block = copy.deepcopy(node.body)
    if outputs and inputs:
        # (adjit copies a block's array outputs: one sharing memory with an array the block
        # was given is refused where the block runs, never probed by running it before)
        # (the inputs as given: the block may bind their names to other values)
        where = f"in function '{src.loc.name}' ({src.loc.filename}, line {node.lineno})"
        block.insert(0, _at(node, ast.parse(f"{_GIVEN} = ({', '.join(inputs)},)")))
        check = (f"__import__({__name__!r}, None, None, ['apart']).apart({where!r}, "
                 f"({', '.join(outputs)},), {_GIVEN}, {tuple(outputs)!r}, {tuple(inputs)!r})")
        block.append(_at(node, ast.parse(check)))
    if box is not None:
        kept = f"{_kept(box)}.outputs = ({', '.join(outputs[1:])},)"
        block.append(_at(node, ast.parse(kept)))
    body = [ast.With(items=[ast.withitem(context_expr=ctx)], body=block)]
    if outputs:
        body.append(ast.Return(value=ast.Name(id=outputs[0], ctx=ast.Load())))
    written = {k for k, n in enumerate(inputs) if _written(node.body, n, src)}
    return _compiled(src, node, name, inputs, body, box, written)


def _output_reader(src, node, name, keyword, k, box):
    """`def name(): with objmode(out=type): out = box.outputs[k - 1]; return out`: output k of a
    block with several outputs, as the block's call (made just before) kept it."""
    out = keyword.arg
    ctx = ast.Call(func=ast.Name(id=_CONTEXT, ctx=ast.Load()), args=[],
                   keywords=[copy.deepcopy(keyword)])
    body = [ast.With(items=[ast.withitem(context_expr=ctx)],
                     body=[_at(node, ast.parse(f"{out} = {_kept(box)}.outputs[{k - 1}]"))]),
            ast.Return(value=ast.Name(id=out, ctx=ast.Load()))]
    return _compiled(src, node, name, [], body, box, set())


_GIVEN = "_adjit_objmode_given"


def apart(where, outputs, inputs, output_names, input_names):
    """Run by a block (in object mode) after its code: refuse an array output that shares
    memory with an array the block was given (numba would hand back that memory; adjit
    keeps a block's outputs as arrays of their own)."""
    for out, oname in zip(outputs, output_names):
        for value, iname in zip(inputs, input_names):
            if isinstance(out, np.ndarray) and isinstance(value, np.ndarray) and \
                    np.shares_memory(out, value):
                raise AdjitError(f"{where}: a `with objmode()` block whose output "
                                 f"`{oname}` shares memory with the array `{iname}` it was "
                                 "given (adjit keeps a block's array outputs as arrays of "
                                 f"their own). Return a copy: {oname} = (...).copy().")


def _slot(src, node):
    """The key of the slot of the block at `node` (by file and line: the same in every
    process, so that code numba caches names a slot this process has too; one block's
    calls are consecutive in program order, so builds of it may share the slot)."""
    key = f"{src.loc.filename}:{node.lineno}"
    KEPT.setdefault(key, threading.local())
    return key


def _kept(key):
    """An expression for the slot `key` that code in object mode can evaluate."""
    return f"__import__({__name__!r}, None, None, ['KEPT']).KEPT[{key!r}]"


def _at(node, module):
    """The statement of a parsed one-line module, placed at `node`'s line."""
    stmt = module.body[0]
    for x in ast.walk(stmt):
        if hasattr(x, "lineno"):
            ast.copy_location(x, node)
    return stmt


def _compiled(src, node, name, inputs, body, box, written):
    fdef = ast.FunctionDef(name=name, args=ast.arguments(
        posonlyargs=[], args=[ast.arg(arg=n) for n in inputs], vararg=None, kwonlyargs=[],
        kw_defaults=[], kwarg=None, defaults=[]), body=body, decorator_list=[],
        returns=None)
    for x in [fdef] + body:
        ast.copy_location(x, node)
    module = ast.fix_missing_locations(ast.Module(body=[fdef], type_ignores=[]))
    namespace = dict(src.fn.__globals__)
    namespace.update(getattr(src, "_closure", {}))
    namespace[_CONTEXT] = numba.objmode
    exec(compile(module, src.loc.filename, "exec"), namespace)   # noqa: S102 - the user's code
    fn = namespace[name]
    fn.__adjit_objmode__ = {"line": node.lineno, "written": written, "inputs": inputs}
    return numba.njit(fn)

"""Instantiate rule templates and build small adjoint expressions, folding constants."""
import ast
import copy
import operator

from .. import ir


class _Subst(ast.NodeTransformer):
    def __init__(self, mapping):
        self.mapping = mapping

    def visit_Name(self, node):
        if node.id in self.mapping:
            return copy.deepcopy(self.mapping[node.id])
        return node


def instantiate(template, params, operands, out):
    """The partial `template` with the rule's parameter names replaced by the operands."""
    mapping = dict(zip(params, operands))
    mapping["out"] = out if isinstance(out, ast.AST) else ir.name(out)   # (or an element)
    expr = _Subst(mapping).visit(copy.deepcopy(template))
    return fold(expr)


def substitute(template, mapping):
    """`template` with names replaced: mapping gives an AST node or a variable name each."""
    nodes = {k: ir.name(v) if isinstance(v, str) else v for k, v in mapping.items()}
    return fold(_Subst(nodes).visit(copy.deepcopy(template)))


_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
               ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv,
               ast.Mod: operator.mod, ast.Pow: operator.pow}
_COMPARISON = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
               ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne}


def _num(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
        and not isinstance(node.value, bool)


def fold(node):
    """Fold constant arithmetic, constant comparisons and conditional expressions, and the
    identities x * 1, x ** 1, x + 0. `literal(a, v)` in a template is True where the operand
    put in for `a` is the number v written in the program, else False: a partial can then
    take a cheaper form for that case (`1.0 / b`: d/db is -out * out, no second division)."""
    for field, value in ast.iter_fields(node):
        if isinstance(value, ast.AST):
            setattr(node, field, fold(value))
        elif isinstance(value, list):
            setattr(node, field, [fold(v) if isinstance(v, ast.AST) else v for v in value])
    if isinstance(node, ast.BinOp) and _num(node.left) and _num(node.right) and \
            type(node.op) in _ARITHMETIC:
        try:
            return ast.Constant(value=_ARITHMETIC[type(node.op)](node.left.value,
                                                                 node.right.value))
        except (ArithmeticError, ValueError):
            return node
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Pow) and _num(node.right) and node.right.value == 1:
            return node.left
        if isinstance(node.op, ast.Mult) and _num(node.right) and node.right.value == 1:
            return node.left
        if isinstance(node.op, ast.Mult) and _num(node.left) and node.left.value == 1:
            return node.right
        if isinstance(node.op, (ast.Add, ast.Sub)) and _num(node.right) and node.right.value == 0:
            return node.left
        if isinstance(node.op, ast.Add) and _num(node.left) and node.left.value == 0:
            return node.right
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _num(node.operand):
        return ast.Constant(value=-node.operand.value)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and _num(node.left) and \
            _num(node.comparators[0]) and type(node.ops[0]) in _COMPARISON:
        return ast.Constant(value=_COMPARISON[type(node.ops[0])](node.left.value,
                                                                 node.comparators[0].value))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == "literal" and len(node.args) == 2:
        value, want = node.args
        return ast.Constant(value=_num(value) and value.value == want.value)
    if isinstance(node, ast.IfExp) and isinstance(node.test, ast.Constant) and \
            isinstance(node.test.value, bool):
        return node.body if node.test.value else node.orelse     # `b * a ** (b - 1)`, b = 2
    return node


def scale(bar, partial):
    """`bar * partial`, as (expression, negated): the sign is kept apart so the caller
    writes `a_bar -= y_bar` rather than `a_bar += -y_bar`."""
    negated = False
    if isinstance(partial, ast.UnaryOp) and isinstance(partial.op, ast.USub):
        partial, negated = partial.operand, True
    if _num(partial) and partial.value < 0:
        partial, negated = ast.Constant(value=-partial.value), True
    if _num(partial) and partial.value == 1:
        return ir.name(bar), negated
    return ast.BinOp(left=ir.name(bar), op=ast.Mult(), right=partial), negated


def accumulate(target, expr, negated, assign_only, origin):
    """`target += expr` (or -=), or a plain assignment for a single-use temporary."""
    tgt = target if isinstance(target, ast.AST) else ir.store(target)
    if assign_only:
        value = ast.UnaryOp(op=ast.USub(), operand=expr) if negated else expr
        node = ast.Assign(targets=[tgt], value=value, lineno=0)
    else:
        op = ast.Sub() if negated else ast.Add()
        node = ast.AugAssign(target=tgt, op=op, value=expr, lineno=0)
    ir.annotate(node, origin=origin)
    return node

"""Classify a normalized right-hand side into the primitive it performs.

Activity analysis, type inference and the reverse pass all ask the same questions of a
statement (which operands it reads, which it depends on differentiably, with which partial);
this module answers them once.
"""
import ast

from .. import ir
from ..normalize.names import lookup
from ..rules.table import (ALLOCATORS, ARRAY_OP_OPERANDS, ARRAY_OPS, ARRAY_RULES, BINOP_RULES,
                           CONST_ARRAYS, INACTIVE, INT_ALLOCATORS, MESSAGES, READS_OPERANDS,
                           UNARY_RULES, Rule, rule_for_call)
from ..api_stop import stop_gradient


CUDA_INDEX = Rule(("d",), (None,), "int")
"""cuda.grid(1) and cuda.gridsize(1): thread indices, integers without derivatives."""

THREAD_INDEX = Rule((), (), "int")
"""cuda.threadIdx.x, blockIdx, blockDim, gridDim (x, y, z): integers without derivatives."""


class Prim:
    """One primitive: `kind`, the operand atoms, and the rule (for kind 'op')."""

    def __init__(self, kind, operands, rule=None, obj=None):
        self.kind = kind
        self.operands = operands
        self.rule = rule
        self.obj = obj

    def diff_operands(self):
        """(position, atom) of operands the result depends on differentiably."""
        if self.kind in ("copy", "load", "copyarr"):
            return [(0, self.operands[0])]
        if self.kind == "arrayop":
            positions = ARRAY_OP_OPERANDS[self.obj]
            if self.obj == "arange" and len(self.operands) == 1:
                positions = ()      # np.arange(stop)
            return [(k, self.operands[k]) for k in positions if k < len(self.operands)
                    and isinstance(self.operands[k], ast.Name)]     # (a number: a constant)
        if self.kind == "op":
            return [(k, a) for k, a in enumerate(self.operands)
                    if self.rule.partials[k] is not None]
        if self.kind == "opaque":
            # no rule: the result depends on every argument, and a derivative that would
            # flow through it is refused (reverse/validate.py, forward/tangent.py)
            return [(k, a) for k, a in enumerate(self.operands) if isinstance(a, ast.Name)]
        return []

    def reads_operands(self):
        """Whether the adjoint of this array operation reads its operands' values."""
        return self.kind == "arrayop" and self.obj in READS_OPERANDS

    def read_operands(self):
        """(position, atom) of the operands of an array operation whose values its adjoint
        reads: those its reverse expressions name (a matrix product's other factor,
        np.take_along_axis's indices, np.extract's condition; not np.linalg.solve's
        right-hand side, nor an array an MPI message's adjoint reads only the shape of)."""
        if not self.reads_operands():
            return []
        rule = ARRAY_RULES[self.obj]
        return [(k, a) for k, a in enumerate(self.operands)
                if k < len(rule.params) and rule.params[k] in rule.read_params
                and isinstance(a, ast.Name)]


def classify(value, env):
    """The Prim of a normalized right-hand side."""
    if ir.is_atom(value):
        return Prim("copy", [value])
    if isinstance(value, ast.Attribute):        # cuda.threadIdx.x, blockIdx, blockDim, gridDim
        return Prim("op", [], THREAD_INDEX)
    if isinstance(value, ast.BinOp):
        return Prim("op", [value.left, value.right], BINOP_RULES[type(value.op)])
    if isinstance(value, ast.UnaryOp):
        return Prim("op", [value.operand], UNARY_RULES[type(value.op)])
    if isinstance(value, ast.Compare):
        return Prim("compare", [value.left, value.comparators[0]])
    if isinstance(value, ast.Subscript):
        if isinstance(value.value, ast.Attribute):
            return Prim("shape", ir.operands(value))
        return Prim("load", ir.operands(value))
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                func.value.id == "cuda":
            return Prim("op", list(value.args), CUDA_INDEX)      # cuda.grid(1), gridsize(1)
        if isinstance(func, ast.Attribute) and func.attr == "copy" and \
                isinstance(func.value, ast.Name) and func.value.id not in ("math", "np", "vec"):
            return Prim("copyarr", [func.value])
        obj = lookup(func, env)
        if obj is len:
            return Prim("len", ir.operands(value))
        if obj in ALLOCATORS or obj in CONST_ARRAYS or obj in INT_ALLOCATORS:
            return Prim("alloc", ir.operands(value), obj=obj)
        if obj in INACTIVE:
            return Prim("inactive", ir.operands(value), obj=obj)
        if obj in ARRAY_OPS:
            return Prim("arrayop", ir.operands(value), obj=ARRAY_OPS[obj])
        rule = rule_for_call(obj)
        if obj is stop_gradient:
            return Prim("stop", list(value.args), rule, obj)
        # a call with no derivative rule, or one kept as numba's call of a form the rule
        # does not describe (rules/opaque.py; numpy_calls.opaque_call notes it)
        if rule is None or ir.note(value, "opaque") is not None:
            return Prim("opaque", ir.operands(value), obj=obj)
        return Prim("op", list(value.args), rule, obj)
    raise AssertionError(ast.dump(value))


def message_of(s, env):
    """The registry entry of the MPI message a normalized statement sends or receives
    (`t = sendrecv_value(...)`, rules/messages.py), or None."""
    if not (isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)):
        return None
    obj = lookup(s.value.func, env)
    entry = MESSAGES.get(obj) if obj in MESSAGES else None
    return entry if entry is not None and entry.family != "message" else None


def message_names(stmts, env):
    """(names of the values of message statements (what a receive returns, a send's token),
    which are always active; names of values every rank holds the same: what allreduce and
    bcast return)."""
    carried, replicated = set(), set()
    for s in ir.walk_stmts(stmts):
        entry = message_of(s, env)
        if entry is None:
            continue
        target = ir.target_name(s)
        carried.add(target)
        if entry.message["replicates"]:
            replicated.add(target)
    return carried, replicated

"""Forward mode: tangent statements interleaved with the primal ones (jvp).

Each normalized assignment `v = op(a, b)` is followed by `v_dot = da * a_dot + db * b_dot`,
with the same partials the reverse pass uses (rules/table.py), so both modes share one
source of truth. An element store `a[i] = v` gets `a_dot[i] = v_dot`, a load `v = a[i]` gets
`v_dot = a_dot[i]`; control flow is the primal's own, so nothing is recorded. Only variables
that depend on the inputs being differentiated and that the result depends on (the active
ones, as in reverse mode) get tangents.
"""
import ast
import copy

from ..analysis.activity import active_variables, opaque_refusal
from ..analysis.prims import classify
from ..analysis.types import FLOAT, is_array
from .. import ir
from ..errors import error_at
from ..rules.table import ARRAY_OP_NAMES, ARRAY_RULES
from ..rules.templates import fold, instantiate, substitute


class TangentBuilder:
    def __init__(self, stmts, result, kinds, env, namegen, wrt):
        self.stmts = stmts
        self.kinds = kinds
        self.env = env
        self.namegen = namegen
        self.varied = active_variables(stmts, result, wrt, kinds, env)
        self.dots = {}

    def dot(self, var):
        if var not in self.dots:
            name = f"{var}_dot"
            if name in self.namegen.taken or name in self.kinds:
                name = self.namegen.fresh(f"{var}_dot")
            self.namegen.reserve(name)
            self.dots[var] = name
        return self.dots[var]

    def tangent_of(self, atom):
        """The tangent of an atom as an expression, or None when it has none."""
        if isinstance(atom, ast.Name) and atom.id in self.varied:
            return ir.name(self.dot(atom.id))
        return None

    def build(self):
        body = self._block(self.stmts)
        init = []
        for var in sorted(self.varied, key=str):
            if self.kinds.get(var) == FLOAT and var in self.dots or (
                    self.kinds.get(var) == FLOAT and var in ir.assigned(self.stmts)):
                init.append(ir.assign(self.dot(var), ir.const(0.0)))
        return init, body

    def _block(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, ast.Assign):
                out.append(s)
                tangents = self._tangent(s)
                if ir.note(s, "message"):       # an MPI message's tangent is a message too
                    for t in tangents:
                        ir.annotate(t, message=True, effect=ir.note(s, "effect"))
                out += tangents
            elif isinstance(s, ast.If):
                s.body = self._block(s.body) or [ast.Pass()]
                s.orelse = self._block(s.orelse)
                out.append(s)
            elif isinstance(s, (ast.For, ast.While)):
                s.body = self._block(s.body) or [ast.Pass()]
                out.append(s)
            else:
                out.append(s)
        return out

    def _tangent(self, s):
        origin = ir.note(s, "origin", None)
        out = []
        if ir.is_store(s):
            sub = s.targets[0]
            arr = sub.value.id
            if arr not in self.varied:
                return []
            t = self.tangent_of(s.value)
            slot = ast.Subscript(value=ir.name(self.dot(arr)), slice=copy.deepcopy(sub.slice),
                                 ctx=ast.Store())
            out.append(ir.assign(slot, t if t is not None else ir.const(0.0), origin))
            return out
        target = ir.target_name(s)
        if target not in self.varied:
            return []
        kind = self.kinds.get(target)
        prim = classify(s.value, self.env)
        if prim.kind == "opaque":
            raise opaque_refusal(s)
        dot = self.dot(target)
        if is_array(kind):
            if prim.kind == "alloc":
                text = f"{dot} = np.zeros_like({target})"
            elif prim.kind == "copyarr":
                src = self.tangent_of(prim.operands[0])
                text = f"{dot} = {src.id}.copy()" if src is not None else \
                    f"{dot} = np.zeros_like({target})"
            elif prim.kind == "arrayop":
                text = f"{dot} = " + self._array_tangent(prim, target, origin)
            else:
                raise AssertionError(f"array assignment {ast.unparse(s)}")
            node = ast.parse(text).body[0]
            ir.annotate(node, origin=origin)
            return [node]
        if prim.kind == "arrayop":       # a number from an array-level operation
            value = ast.parse(self._array_tangent(prim, target, origin, "0.0"),
                              mode="eval").body
            return [ir.assign(dot, value, origin)]
        if prim.kind == "load":
            arr = prim.operands[0]
            t = self.tangent_of(arr)
            value = ast.Subscript(value=t, slice=copy.deepcopy(s.value.slice),
                                  ctx=ast.Load()) if t is not None else ir.const(0.0)
            return [ir.assign(dot, value, origin)]
        terms = []
        for k, atom in prim.diff_operands():
            t = self.tangent_of(atom)
            if t is None:
                continue
            if prim.kind == "copy":
                terms.append(t)
                continue
            partial = instantiate(prim.rule.partials[k], prim.rule.params, prim.operands,
                                  target)
            terms.append(fold(ast.BinOp(left=partial, op=ast.Mult(), right=t)))
        value = ir.const(0.0)
        for term in terms:
            value = term if _is_zero(value) else ast.BinOp(left=value, op=ast.Add(), right=term)
        return [ir.assign(dot, value, origin)]

    def _array_tangent(self, prim, target, origin, zero=None):
        """The tangent of an array-level operation, from its registry entry: the sum of the
        terms of its varied operands."""
        rule = ARRAY_RULES[prim.obj]
        self.env.update(rule.helpers)
        names = dict(rule.defaults)
        names.update(zip(rule.params, prim.operands))
        names["out"] = target
        terms = []
        for k, atom in prim.diff_operands():
            t = self.tangent_of(atom)
            if t is None and k in rule.always:     # (an MPI message the other rank waits for)
                t = ast.parse(f"np.zeros_like({ir.unparse(atom)})", mode="eval").body
            if t is None:
                continue
            if rule.tangent[k] is None:
                what = rule.missing_tangent or \
                    f"forward mode through {ARRAY_OP_NAMES.get(prim.obj, prim.obj)}"
                what, instead = what if isinstance(what, tuple) else (
                    what, "Give it a tangent rule with .defjvp(jvp), or use reverse mode "
                    "(grad, vjp, jacrev).")
                raise error_at(origin, what, instead)
            terms.append(ir.unparse(substitute(rule.tangent[k], dict(names, d=t))))
        return " + ".join(terms) or zero or f"np.zeros_like({target})"


def _is_zero(node):
    return isinstance(node, ast.Constant) and node.value == 0.0

"""Structured exits: `return`, `break` and `continue` become flags and guarded blocks.

After this pass every block runs to its end; a loop with a `break` ends with a forward-only
`if _brk: break` and counts its iterations in `_nK`, which the backward sweep replays.
"""
import ast

from .. import ir


class _Loop:
    def __init__(self, namegen):
        self.namegen = namegen
        self.skip = None
        self.brk = None

    def skip_flag(self):
        if self.skip is None:
            self.skip = self.namegen.fresh("_skip")
        return self.skip

    def brk_flag(self):
        if self.brk is None:
            self.brk = self.namegen.fresh("_brk")
        return self.brk


class _Lowering:
    def __init__(self, namegen, general):
        self.namegen = namegen
        self.general = general
        self.result = namegen.fresh("_result") if general else None
        self.done = namegen.fresh("_done") if general else None

    def block(self, stmts, loops):
        out = []
        for k, s in enumerate(stmts):
            rest = stmts[k + 1:]
            if rest and not loops and self.general and _guard(s):
                # `if N == 0: return out` before the rest of the function: the rest is the
                # `else` (no flag to test after the `if`), so each path visibly assigns the
                # result (a helper inlined in a loop does not seem to carry it between
                # iterations)
                s.orelse = s.orelse + rest
                rest = []
            exits = self.stmt(s, loops, out)
            if exits and rest:
                flag = loops[-1].skip_flag() if loops else self.done
                guard = self.namegen.fresh("_g")
                origin = ir.note(rest[0], "origin", None)
                out.append(ir.assign(guard, ast.UnaryOp(op=ast.Not(), operand=ir.name(flag)),
                                     origin))
                body, _ = self.block(rest, loops)
                node = ast.If(test=ir.name(guard), body=body or [ast.Pass()], orelse=[],
                              lineno=0)
                ir.annotate(node, origin=origin)
                out.append(node)
                return out, True
            if exits:
                return out, True
        return out, False

    def stmt(self, s, loops, out):
        origin = ir.note(s, "origin", None)
        if isinstance(s, ast.Return):
            if not self.general:
                return False
            if s.value is not None:
                out.append(ir.assign(self.result, s.value, origin))
            out.append(ir.assign(self.done, ir.const(True), origin))
            for loop in loops:
                out.append(ir.assign(loop.skip_flag(), ir.const(True), origin))
                out.append(ir.assign(loop.brk_flag(), ir.const(True), origin))
            return True
        if isinstance(s, ast.Break):
            out.append(ir.assign(loops[-1].skip_flag(), ir.const(True), origin))
            out.append(ir.assign(loops[-1].brk_flag(), ir.const(True), origin))
            return True
        if isinstance(s, ast.Continue):
            out.append(ir.assign(loops[-1].skip_flag(), ir.const(True), origin))
            return True
        if isinstance(s, ast.If):
            s.body, e1 = self.block(s.body, loops)
            s.orelse, e2 = self.block(s.orelse, loops)
            s.body = s.body or [ast.Pass()]
            out.append(s)
            return e1 or e2
        if isinstance(s, (ast.For, ast.While)):
            return self.loop(s, loops, out)
        out.append(s)
        return False

    def loop(self, s, loops, out):
        has_return = any(isinstance(x, ast.Return) for x in ir.walk_stmts(s.body))
        frame = _Loop(self.namegen)
        body, _ = self.block(s.body, loops + [frame])
        origin = ir.note(s, "origin", None)
        ir.annotate(s, trip=None)
        if frame.skip is not None:
            body.insert(0, ir.assign(frame.skip, ir.const(False), origin))
        if frame.brk is not None:
            cnt = self.namegen.fresh("_count")
            trip = self.namegen.fresh("_n")
            out.append(ir.assign(frame.brk, ir.const(False), origin))
            out.append(ir.assign(cnt, ir.const(0), origin))
            body.insert(0, ir.assign(cnt, ast.BinOp(left=ir.name(cnt), op=ast.Add(),
                                                    right=ir.const(1)), origin))
            stop = ast.If(test=ir.name(frame.brk), body=[ast.Break()], orelse=[], lineno=0)
            ir.annotate(stop, forward_only=True)
            ir.annotate(stop, origin=origin)
            body.append(stop)
            s.body = body
            out.append(s)
            out.append(ir.assign(trip, ir.name(cnt), origin))
            ir.annotate(s, trip=trip)
        else:
            s.body = body or [ast.Pass()]
            out.append(s)
        return has_return and self.general


def _guard(s):
    """Whether `s` is an `if` whose body ends every path in a `return` (or a raise), one
    at least in a `return`."""
    return isinstance(s, ast.If) and always_returns(s.body) and any(
        isinstance(x, ast.Return) for x in ir.walk_stmts(s.body))


def always_returns(stmts):
    """Whether every path through `stmts` ends in a `return` (or a `raise`: it ends the
    function as surely, and a path that raises returns nothing to differentiate)."""
    for s in stmts:
        if isinstance(s, ast.Return) or ir.note(s, "raises", False):
            return True
        if isinstance(s, ast.If) and always_returns(s.body) and always_returns(s.orelse):
            return True
        if isinstance(s, ast.While) and isinstance(s.test, ast.Constant) and \
                s.test.value is True and not ir.breaks(s.body):
            return True     # `while True:` left only by a return or a raise (a series
            #                 summed until its terms are small: poliastro's Stumpff sums)
    return False


def lower_exits(body, namegen, loc):
    """Lower exits in a normalized function body. Returns (statements, result atom or None)."""
    returns = [s for s in ir.walk_stmts(body) if isinstance(s, ast.Return)]
    if not returns:
        out, _ = _Lowering(namegen, False).block(body, [])
        return out, None
    if all(s.value is None for s in returns):     # a CUDA kernel's `if i >= n: return`
        lowering = _Lowering(namegen, True)
        out, _ = lowering.block(body, [])
        out.insert(0, ir.assign(lowering.done, ir.const(False), ir.note(body[0], "origin", None)))
        return out, None
    if not always_returns(body):
        raise loc.error(returns[-1], "a path through the function ends without `return`",
                        "Return a value on every path (add a final return).")
    simple = len(returns) == 1 and body[-1] is returns[0]
    lowering = _Lowering(namegen, not simple)
    out, _ = lowering.block(body, [])
    if lowering.general:
        out.insert(0, ir.assign(lowering.done, ir.const(False), ir.note(body[0], "origin", None)))
    if simple:
        return out, body[-1].value
    return out, ir.name(lowering.result)

"""MPI calls (numba-mpi) in differentiated code, lowered to values.

numba-mpi's calls write their results into arrays they are given (`mpi.allreduce(s, r)`,
`mpi.recv(buf, source, tag)`, `mpi.sendrecv(a, dest, b, source)`). Here each becomes a call of
one of adjit's functions of its inputs (adjit/runtime/mpi.py), whose value the generated code
stores where the user's call wrote it:

    mpi.allreduce(s, r)             r[:] = allreduce_sum(s)
    mpi.bcast(x, root)              x[:] = bcast_value(x, root)
    mpi.recv(buf, source, tag)      buf[:] = recv_value(buf, source, tag)
    mpi.sendrecv(a, d, b, s)        b[:] = sendrecv_value(a, d, b, s, 0, ANY_TAG)
    mpi.send(a, dest, tag)          _t = send_token(a, dest, tag)

so every later pass sees an operation on values with a registry entry (its adjoint a message
too: adjit/rules/messages.py), and writes through views work as any store does. The call's
status is MPI_SUCCESS (0): MPI's default error handler stops the program on any error.
"""
import ast

from .. import ir
from ..frontend.source import MISSING


def message_call(norm, node, entry, out):
    """A numba-mpi call (`node`, its registry entry) lowered into `out` by the normalizer
    `norm`; returns its status (0)."""
    return _Messages(norm).message_call(node, entry, out)


class _Messages:
    """The lowering of one numba-mpi call, with the normalizer (`n`) it writes through."""

    def __init__(self, norm):
        self.n = norm
        self.message_calls = []     # the runtime calls made: the statements holding them
        # are marked as messages

    def message_call(self, node, entry, out):
        how = entry.message
        name = f"mpi.{entry.name.split('.')[-1]}"
        if how["lower"] == "refuse":
            raise self.n.error(node, f"`{name}` in differentiated code", how["instead"])
        args = self.message_arguments(node, entry, name)
        lower = how["lower"]
        start = len(out)
        if lower == "allreduce":
            op = args.get("operator")
            if op is not None and self.constant_value(op) != how["sum"]:
                raise self.n.error(node, f"`{name}` with operator {ast.unparse(op)}",
                                   "adjit differentiates allreduce's sum (the default "
                                   "operator). Compute a maximum or minimum outside the "
                                   "differentiated function and pass it in.")
            send = self.n.operand(args["sendobj"], out)
            number = self.is_number_value(send)
            helper = how["number"] if number else how["helper"]
            value = self.message_value(helper, [self.message_atom(args["sendobj"], out)])
            self.store_message(args["recvobj"], value, out, node, name)
        elif lower == "bcast":
            value = self.message_value(how["helper"], [self.message_atom(args["data"], out),
                                                       self.n.atom(args["root"], out)])
            self.store_message(args["data"], value, out, node, name)
        elif lower == "send":
            call = self.message_value(how["helper"], [self.message_atom(args["data"], out),
                                                      self.n.atom(args["dest"], out),
                                                      self.n.atom(args["tag"], out)])
            self.n.to_atom(out, call, "_sent")
        elif lower == "recv":
            self.check_source(args["source"], node, name, how)
            self.check_tag(args["tag"], node, name, how)
            value = self.message_value(how["helper"], [self.message_atom(args["data"], out),
                                                       self.n.atom(args["source"], out),
                                                       self.n.atom(args["tag"], out)])
            self.store_message(args["data"], value, out, node, name)
        elif lower == "sendrecv":
            self.check_source(args["source"], node, name, how)
            self.check_tag(args["recvtag"], node, name, how)
            value = self.message_value(how["helper"], [
                self.message_atom(args["senddata"], out), self.n.atom(args["dest"], out),
                self.message_atom(args["recvdata"], out), self.n.atom(args["source"], out),
                self.n.atom(args["sendtag"], out), self.n.atom(args["recvtag"], out)])
            self.store_message(args["recvdata"], value, out, node, name)
        else:       # pragma: no cover - the registry names only the forms above
            raise AssertionError(lower)
        for s in ir.walk_stmts(out[start:]):      # (what this call added)
            if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call) and \
                    any(s.value is c for c in self.message_calls):
                ir.annotate(s, message=True)
        return ir.const(0)

    def constant_value(self, node):
        """The value of a constant or of a global name or attribute chain
        (`mpi.Operator.SUM`, `MPI.ANY_TAG`, `-1`); None for anything else."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.constant_value(node.operand)
            return -inner if isinstance(inner, (int, float)) else None
        if isinstance(node, ast.Name):
            value = self.n.src.resolve_name(node.id)
        elif isinstance(node, ast.Attribute):
            base = self.constant_value(node.value) if not isinstance(node.value, ast.Name) \
                else self.n.src.resolve_name(node.value.id)
            value = getattr(base, node.attr, None) if base is not None else None
        else:
            return None
        return None if value is MISSING else value

    def message_value(self, helper, atoms):
        call = self.n.calls.call_of(helper, atoms)
        self.message_calls.append(call)
        return call

    def message_arguments(self, node, entry, name):
        """{parameter: user expression} of a numba-mpi call, defaults filled in."""
        params = entry.params
        if len(node.args) > len(params) or any(kw.arg is None for kw in node.keywords):
            raise self.n.error(node, f"`{name}` with {len(node.args)} arguments",
                               f"Pass {', '.join(params)}.")
        args = dict(zip(params, node.args))
        for kw in node.keywords:
            if kw.arg not in params or kw.arg in args:
                raise self.n.error(node, f"`{name}` with the keyword `{kw.arg}`",
                                   f"Pass {', '.join(params)} (by position or keyword).")
            args[kw.arg] = kw.value
        for p, default in entry.message.get("defaults", {}).items():
            args.setdefault(p, ir.const(default))
        missing = [p for p in params if p not in args and p != "operator"]
        if missing:
            raise self.n.error(node, f"`{name}` without `{missing[0]}`",
                               f"Pass {', '.join(params)}.")
        return args

    def is_number_value(self, value):
        from .vectorize import Lazy, Scalar
        if isinstance(value, Scalar):
            return True
        if isinstance(value, Lazy):
            return False
        return isinstance(value, ast.Constant) or \
            (isinstance(value, ast.Name) and self.n.arrays.array_ndim(value) is None)

    def message_atom(self, expr, out):
        """The array a message sends (or is shaped like), as an atom."""
        return self.n.calls.argument_atom(expr, out)

    def check_source(self, source, node, name, how):
        """A receive from ANY_SOURCE (numba-mpi's default) is refused: the adjoint message
        must go back to the rank the forward message came from."""
        value = self.constant_value(source)
        if isinstance(value, int) and value == how["any_source"]:
            raise self.n.error(node, f"`{name}` from any source (ANY_SOURCE)",
                               "Name the rank the message comes from (source=...): the adjoint "
                               "sends the cotangent back there.")

    def check_tag(self, tag, node, name, how):
        """Every receive of a function names its tag, or none does (ANY_TAG). Adjoint
        messages answer a receive with its tag; the answer to one that named none carries
        ADJOINT_TAG, which the sender accepts for any of its tags: safe where the receives
        took the messages in the order they were sent, which they do when none names a tag
        (see adjit/runtime/mpi.py)."""
        value = self.constant_value(tag)
        style = "any" if isinstance(value, int) and value == how["any_tag"] else "given"
        styles = self.n.ctx.__dict__.setdefault("receive_tags", {})
        styles.setdefault(style, node)
        if len(styles) > 1:
            other = styles["given" if style == "any" else "any"].lineno
            given = "without a tag" if style == "any" else "with a tag"
            raise self.n.error(node, f"`{name}` {given}, where another receive (line {other}) "
                               f"{'names one' if style == 'any' else 'names none'}",
                               "Give every receive in the function its tag (tag=..., recvtag=...) "
                               "or none: adjit answers each received message with a message "
                               "tagged as it was received.")

    def store_message(self, buffer, value, out, node, name):
        """`buffer[...] = value`: where the user's call wrote what it received."""
        if isinstance(buffer, ast.Name):
            ndim = self.n.arrays.array_ndim(ir.name(self.n.local(buffer.id))) \
                if isinstance(self.n.local(buffer.id), str) else None
            ndim = self.n.shape_of(buffer, out).ndim if ndim is not None else 0
            if not ndim:
                raise self.n.error(node, f"`{name}` into `{buffer.id}`, a number",
                                   "Receive into an array (np.empty(1) for one number).")
            full = ast.Slice(lower=None, upper=None, step=None)
            index = full if ndim == 1 else ast.Tuple(elts=[full] * ndim, ctx=ast.Load())
            target = ast.Subscript(value=buffer, slice=index, ctx=ast.Store())
        elif isinstance(buffer, ast.Subscript):
            target = ast.Subscript(value=buffer.value, slice=buffer.slice, ctx=ast.Store())
        else:
            raise self.n.error(node, f"`{name}` into `{ast.unparse(buffer)}`",
                               "Receive into an array or a slice of one (buf, u[0:1]).")
        ast.copy_location(target, node)
        self.n.assign_to(target, value, out)

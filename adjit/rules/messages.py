"""Registry entries for MPI through numba-mpi: the calls users write, and the functions of
values they are lowered to (adjit/normalize/messages.py) with their adjoints.

Loaded the first time a differentiated function refers to something of numba_mpi
(rules/table.py `ensure_entries`): importing numba_mpi initializes MPI, which adjit does not
do for programs that never use it.

Every rank runs the same generated code. A message's two ends are different statements
(the send on one rank, the receive on another), so their adjoints must exist whatever the
activity analysis finds on each rank alone: the values that messages carry are always
active (`message["forced"]`: the sent array and the received value), their statements are
never left out of the forward sweep, hoisted out of loops, or computed again in the
backward sweep; and the answer to a message is sent (or received) even where what was sent
carries no derivative (ArrayRule.always). A value that comes out of an allreduce or a bcast is one value every rank
holds (`message["replicates"]`): a result that depends on one counts once, its cotangent
seeded on rank 0 alone.
"""
import inspect

from .registry import REGISTRY, ArrayRule


def _like_first(args):
    """ArrayRule result: the shape kind of the first operand, as floats."""
    ndim, _ = args[0]
    return ndim, "f"


def _number(args):
    return 0, "f"


def _like_third(args):
    ndim, _ = args[2]
    return ndim, "f"


def load():
    """Define the entries (once); returns the new entries."""
    import numba_mpi as mpi
    from mpi4py import MPI

    from ..runtime import mpi as rt
    R = REGISTRY
    made = []

    names = {n: getattr(rt, n) for n in ("allreduce_sum", "allreduce_sum_number",
                                          "bcast_value", "reduce_to_root", "send_token",
                                          "send_adjoint", "recv_value", "recv_adjoint",
                                          "sendrecv_value", "sendrecv_adjoint")}

    def helper(fn, key, params, reverse, tangent, result, replicates=False):
        rule = ArrayRule(key, params, reverse, tangent, result, helpers=names, always=(0,))
        made.append(R.define(fn, f"adjit.runtime.mpi.{fn.__name__}", "array", handler="keep",
                             array_rule=rule, cuda=False,
                             message={"replicates": replicates},
                             notes="an MPI message and its adjoint"))

    helper(rt.allreduce_sum, "mpi_allreduce", ("x",), ("allreduce_sum(out_bar)",),
           ("allreduce_sum(d)",), _like_first, replicates=True)
    helper(rt.allreduce_sum_number, "mpi_allreduce_number", ("x",),
           ("allreduce_sum_number(out_bar)",), ("allreduce_sum_number(d)",), _number,
           replicates=True)
    helper(rt.bcast_value, "mpi_bcast", ("x", "root"), ("reduce_to_root(out_bar, root)", None),
           ("bcast_value(d, root)", None), _like_first, replicates=True)
    helper(rt.send_token, "mpi_send", ("x", "dest", "tag"),
           ("send_adjoint(x.shape, dest, tag)", None, None),
           ("send_token(d, dest, tag)", None, None), _number)
    helper(rt.recv_value, "mpi_recv", ("like", "source", "tag"),
           ("recv_adjoint(out_bar, source, tag, like.shape)", None, None),
           ("recv_value(d, source, tag)", None, None), _like_first)
    helper(rt.sendrecv_value, "mpi_sendrecv",
           ("x", "dest", "like", "source", "sendtag", "recvtag"),
           ("sendrecv_adjoint(out_bar, dest, source, sendtag, recvtag, x.shape)",
            None, None, None, None, None),
           ("sendrecv_value(d, dest, like, source, sendtag, recvtag)",
            None, None, None, None, None), _like_third)

    common = {"any_source": int(MPI.ANY_SOURCE), "any_tag": int(MPI.ANY_TAG)}

    def message(fn, lower, **how):
        params = tuple(inspect.signature(getattr(fn, "py_func", fn)).parameters)
        made.append(R.define(fn, f"numba_mpi.{fn.__name__}", "message", params=params,
                             cuda=False, message={"lower": lower, **common, **how},
                             notes="an MPI message: its adjoint is a message back"))

    message(mpi.allreduce, "allreduce", helper=rt.allreduce_sum,
            number=rt.allreduce_sum_number, sum=mpi.Operator.SUM)
    message(mpi.bcast, "bcast", helper=rt.bcast_value)
    message(mpi.send, "send", helper=rt.send_token, defaults={"tag": 0})
    message(mpi.recv, "recv", helper=rt.recv_value,
            defaults={"source": int(MPI.ANY_SOURCE), "tag": int(MPI.ANY_TAG)})
    message(mpi.sendrecv, "sendrecv", helper=rt.sendrecv_value,
            defaults={"source": int(MPI.ANY_SOURCE), "sendtag": 0,
                      "recvtag": int(MPI.ANY_TAG)})
    for name, instead in (
            ("isend", "Use mpi.send / mpi.recv or mpi.sendrecv: adjit differentiates "
                      "blocking messages."),
            ("irecv", "Use mpi.recv or mpi.sendrecv: adjit differentiates blocking messages."),
            ("reduce", "Use mpi.allreduce (the sum): its adjoint is known to adjit."),
            ("scatter", "Send each rank its part with mpi.send / mpi.recv."),
            ("gather", "Use mpi.allreduce of arrays that are zero outside each rank's part."),
            ("allgather", "Use mpi.allreduce of arrays that are zero outside each rank's "
                          "part.")):
        fn = getattr(mpi, name, None)
        if fn is not None:
            made.append(R.define(fn, f"numba_mpi.{name}", "message", cuda=False,
                                 message={"lower": "refuse", "instead": instead, **common},
                                 notes="not differentiated"))
    for name, result in (("rank", lambda d: (0, "i")), ("size", lambda d: (0, "i")),
                         ("wtime", lambda d: (0, "f"))):
        made.append(R.define(getattr(mpi, name), f"numba_mpi.{name}", "inactive", params=(),
                             result=result, notes="no derivative"))
    made.append(R.define(mpi.barrier, "numba_mpi.barrier", "inactive", params=(), result=None,
                         statement=True, notes="waits for every rank"))
    return made

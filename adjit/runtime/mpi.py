"""What generated code calls for MPI messages (numba-mpi), and their adjoints.

adjit/rules/messages.py turns each numba-mpi call a differentiated function makes into one of
these functions of its inputs (a receive returns the received array, which the generated code
stores where the user's call wrote it), so that every pass sees a value computed from
operands; their registry entries give the adjoints, which are messages too:

- allreduce (sum): the adjoint of the sum is the sum of the cotangents (each rank holds a
  part of the cotangent of a value every rank holds);
- bcast from a root: the cotangents are summed onto the root (a reduce);
- a message from S to R (send/recv, sendrecv): R sends the cotangent of what it received
  back to S, which adds it to the cotangent of what it sent.

Adjoint messages go in the reverse order of the forward ones and carry the forward message's
tag, so they match as the forward messages did; a receive that named no tag (ANY_TAG) is
answered with ADJOINT_TAG, which the sender accepts in place of its own tag. The sender
checks the tag of every adjoint message it receives: a program whose receives took messages
out of the order they were sent (by tag) stops with an error instead of adding the wrong
cotangents.

This module imports numba_mpi (and so mpi4py, which initializes MPI): adjit imports it only
when a differentiated function calls numba-mpi.
"""
import ctypes

import numba
import numba_mpi as mpi
import numpy as np
from mpi4py import MPI
from numba_mpi.api.recv import _MPI_Recv
from numba_mpi.api.send import _MPI_Send
from numba_mpi.api.sendrecv import _MPI_Sendrecv
from numba_mpi.common import _MPI_Comm_World_ptr
from numba_mpi.utils import _mpi_addr, _mpi_dtype

from ..errors import AdjitError

ANY_SOURCE = int(MPI.ANY_SOURCE)
ANY_TAG = int(MPI.ANY_TAG)
ADJOINT_TAG = 32767
"""The tag of an adjoint message answering a receive that named no tag (32767 is the
largest tag every MPI implementation allows)."""


def _status_layout():
    """(ints in an MPI_Status, index of its MPI_TAG field), read from mpi4py's Status."""
    status = MPI.Status()
    status.tag = 4242
    size = MPI._sizeof(MPI.Status)  # noqa: SLF001 - the layout is the MPI library's
    raw = np.frombuffer(ctypes.string_at(MPI._addressof(status), size), np.intc)  # noqa: SLF001
    return max(len(raw), 5), int(np.flatnonzero(raw == 4242)[0])


STATUS_INTS, TAG_AT = _status_layout()
SUM = mpi.Operator.SUM


@numba.njit
def _comm():
    return _mpi_addr(_MPI_Comm_World_ptr)


@numba.njit
def _check_source(source):
    if source < 0:
        raise AdjitError("a message received from any source (ANY_SOURCE) in "
                         "differentiated code: the adjoint message has nowhere to go. Name "
                         "the rank it comes from.")


@numba.njit
def _check_tag(got, expected):
    if got != expected and got != ADJOINT_TAG:
        raise AdjitError("an adjoint MPI message arrived with another tag than the forward "
                         "message it answers: the forward receives took messages out of the "
                         "order they were sent (by tag), which adjit's adjoint does not "
                         "follow. Receive the messages from one rank in the order it sends "
                         "them.")


@numba.njit
def _reply_tag(tag):
    return ADJOINT_TAG if tag == ANY_TAG else tag


@numba.njit
def _send(data, dest, tag):
    data = np.ascontiguousarray(data)
    status = _MPI_Send(data.ctypes.data, data.size, _mpi_dtype(data), dest, tag, _comm())
    if status != 0:
        raise RuntimeError("adjit: MPI_Send failed")


@numba.njit
def _recv_checked(out, source, expected_tag):
    """Receive into `out` (contiguous) from `source`, any tag, checked against expected."""
    status = np.empty(STATUS_INTS, dtype=np.intc)
    code = _MPI_Recv(out.ctypes.data, out.size, _mpi_dtype(out), source, ANY_TAG, _comm(),
                     status.ctypes.data)
    if code != 0:
        raise RuntimeError("adjit: MPI_Recv failed")
    _check_tag(status[TAG_AT], expected_tag)


# collectives -------------------------------------------------------------------------------

@numba.njit
def allreduce_sum(x):
    """The elementwise sum of `x` over all ranks (every rank gets it)."""
    out = np.empty(x.shape, x.dtype)
    mpi.allreduce(np.ascontiguousarray(x), out)
    return out


@numba.njit
def allreduce_sum_number(x):
    buf = np.empty(1, np.float64)
    buf[0] = x
    out = np.empty(1, np.float64)
    mpi.allreduce(buf, out)
    return out[0]


@numba.njit
def bcast_value(x, root):
    """`x` as the root holds it, on every rank."""
    out = np.ascontiguousarray(x).copy()
    mpi.bcast(out, root)
    return out


@numba.njit
def reduce_to_root(g, root):
    """The sum of `g` over all ranks on the root, zeros elsewhere (bcast's adjoint)."""
    out = np.zeros(g.shape, g.dtype)
    mpi.reduce(np.ascontiguousarray(g), out, SUM, root)
    if mpi.rank() != root:
        out[...] = 0.0
    return out


@numba.njit
def only_on_root(g):
    """The cotangent of a result every rank holds the same copy of (an allreduce): it
    counts once, on rank 0."""
    return g if mpi.rank() == 0 else 0.0 * g


# point to point ----------------------------------------------------------------------------

@numba.njit
def send_token(x, dest, tag):
    """Send `x` to `dest`; 0.0, a number the generated code keeps so that the send has a
    value whose adjoint (receiving the cotangent) the backward sweep computes."""
    _send(x, dest, tag)
    return 0.0


@numba.njit
def send_adjoint(shape, dest, tag):
    """Send's adjoint: the cotangent of the array sent (of this shape) that `dest` sends
    back."""
    back = np.empty(shape, np.float64)
    _recv_checked(back, dest, tag)
    return back


@numba.njit
def recv_value(like, source, tag):
    """What `source` sends, in a new array shaped like `like`."""
    _check_source(source)
    out = np.empty(like.shape, like.dtype)
    mpi.recv(out, source, tag)
    return out


@numba.njit
def recv_adjoint(g, source, tag, shape):
    """recv's adjoint: send the received array's cotangent `g` back to `source`; nothing
    flows into what the buffer (of this shape) held before (zeros)."""
    _send(g, source, _reply_tag(tag))
    return np.zeros(shape, np.float64)


@numba.njit
def sendrecv_value(x, dest, like, source, sendtag, recvtag):
    """Send `x` to `dest` and return what `source` sends, shaped like `like`."""
    _check_source(source)
    out = np.empty(like.shape, like.dtype)
    mpi.sendrecv(np.ascontiguousarray(x), dest, out, source, sendtag, recvtag)
    return out


@numba.njit
def sendrecv_adjoint(g, dest, source, sendtag, recvtag, shape):
    """sendrecv's adjoint: send the received array's cotangent `g` back to `source`, and
    return the cotangent of the array sent (of this shape) that `dest` sends back."""
    g = np.ascontiguousarray(g)
    back = np.empty(shape, np.float64)
    status = np.empty(STATUS_INTS, dtype=np.intc)
    code = _MPI_Sendrecv(g.ctypes.data, g.size, _mpi_dtype(g), source, _reply_tag(recvtag),
                         back.ctypes.data, back.size, _mpi_dtype(back), dest, ANY_TAG,
                         _comm(), status.ctypes.data)
    if code != 0:
        raise RuntimeError("adjit: MPI_Sendrecv failed")
    _check_tag(status[TAG_AT], sendtag)
    return back


"""MPI adjoints through numba-mpi: tests/mpi_programs.py run on two ranks with mpiexec (one
run, bounded in time, its process group killed if it overruns), its measurements checked
here. Decomposed gradients against the undecomposed problem's, that one against central
differences of numba's forward, refusals, and receives out of order stopped."""
import json
import os
import signal
import subprocess
import sys

import pytest

pytest.importorskip("numba_mpi")

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 400
EXACT = 1e-12       # the same arithmetic in another order
FD = 1e-5           # central differences


def _mpiexec():
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(beside):
        return beside
    import shutil
    found = shutil.which("mpiexec")
    if found is None:
        pytest.skip("no mpiexec: pip install 'adjit[distributed]' (mpich)")
    return found


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("mpi") / "out.json")
    cmd = [_mpiexec(), "-n", "2", sys.executable, os.path.join(HERE, "mpi_programs.py"), path]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        log, _ = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        log, _ = proc.communicate()
        pytest.fail(f"mpiexec -n 2 mpi_programs.py ran past {TIMEOUT} s:\n{log[-3000:]}")
    assert proc.returncode == 0, log[-5000:]
    with open(path) as f:
        return json.load(f)


def test_two_ranks(measured):
    assert measured["size"] == 2


def test_periodic_heat_with_sendrecv_halos(measured):
    m = measured["periodic"]
    assert m["value_vs_numba"] == 0.0
    assert m["same_value_on_ranks"] == 0.0
    for key in ("value_vs_whole", "du_vs_whole", "dalpha_vs_whole"):
        assert m[key] <= EXACT, (key, m)
    assert m["whole_vs_fd"] <= FD and m["dalpha_whole_vs_fd"] <= FD, m


def test_checkpointed_time_loop_with_messages(measured):
    m = measured["checkpointed"]
    assert m["du_vs_taped"] == 0.0 and m["dalpha_vs_taped"] == 0.0, m
    assert m["recompute_factor"] > 1.0       # the snapshots were used: steps ran again


def test_send_and_recv_in_rank_branches(measured):
    m = measured["open"]
    for key in ("value_vs_whole", "du_vs_whole", "dalpha_vs_whole", "jvp_value"):
        assert m[key] <= EXACT, (key, m)
    assert m["whole_vs_fd"] <= FD, m
    assert m["jvp_vs_vjp"] <= EXACT, m       # forward mode sends tangents along
    assert m["recorded_at_messages"] == 0, m  # the halo rewritten every step: not recorded


def test_two_dimensional_bands_with_tagged_sendrecv(measured):
    m = measured["heat_2d"]
    for key in ("value_vs_whole", "du_vs_whole", "dalpha_vs_whole"):
        assert m[key] <= EXACT, (key, m)
    assert m["whole_vs_fd"] <= FD, m


def test_data_parallel_loss_counts_the_allreduce_once(measured):
    """theta is on every rank; the ranks' gradients summed are the whole gradient (the
    regularizer, which every rank computes, counts once too)."""
    m = measured["logistic"]
    assert m["value_vs_whole"] <= EXACT and m["dtheta_summed_vs_whole"] <= EXACT, m
    assert m["whole_vs_fd"] <= FD, m


def test_bcast_gathers_the_gradient_on_the_root(measured):
    m = measured["bcast"]
    assert m["value_vs_whole"] <= EXACT and m["dp_on_root_vs_whole"] <= EXACT, m
    assert m["dp_elsewhere"] == 0.0, m


def test_njit_program_with_a_helper_and_checked_statuses(measured):
    m = measured["njit_forms"]
    assert m["value_vs_numba"] == 0.0 and m["dalpha_vs_fd"] <= FD, m


def test_messages_of_constants_and_losses_not_reduced(measured):
    """A sent array that depends on no argument still gets the receiver's answer (both ends
    of a message are active); a loss each rank returns unreduced is their sum, its gradient
    reaching the sender through the adjoint message."""
    assert measured["constant_message"] <= EXACT, measured["constant_message"]
    assert measured["ring_shift"] <= EXACT, measured["ring_shift"]


@pytest.mark.parametrize("name, says", [
    ("any_source", "`mpi.recv` from any source (ANY_SOURCE)"),
    ("maximum", "`mpi.allreduce` with operator mpi.Operator.MAX"),
    ("nonblocking", "`mpi.isend` in differentiated code"),
    ("mixed_tags", "`mpi.recv` without a tag, where another receive (line"),
])
def test_refusals_name_the_call(measured, name, says):
    message = measured["refusals"][name]
    assert message is not None, f"{name} was differentiated"
    assert f"in function '{name}'" in message and says in message, message


def test_receives_out_of_order_stop_with_an_error(measured):
    assert "out of the order they were sent" in (measured["out_of_order"] or ""), \
        measured["out_of_order"]

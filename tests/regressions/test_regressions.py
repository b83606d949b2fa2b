"""Every reproducer the program fuzzer saved (tests/regressions/fuzz_*.py) runs in every
`make test`: adjit, compiled by numba and in the interpreter for every argnums subset, must
agree with the reference AD, and the program must still be a fair test (not discarded)."""
import pathlib
import runpy

import pytest

from fuzz.check import check
from fuzz.grammar import Program

CASES = sorted(pathlib.Path(__file__).parent.glob("fuzz_*.py"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_fuzz_reproducer(path):
    case = runpy.run_path(str(path))
    program = Program(case["SOURCE"], tuple(case["PARAMS"]), case["SEED"],
                      tuple(case.get("GROUPS", ())))     # (draws, forms: judged by differences)
    out = check(program, jit=True)
    assert out.status == "ok", f"{out.status}: {out.reason}\n{out.detail}"


def test_reproducers_exist():
    """The glob finds the saved cases (a renamed folder must not silently run nothing)."""
    assert CASES

"""The argument audit's other half (tests/test_arguments.py has the first): numba compiles
every form adjit/rules/forms.py lists (the forms are numba's, not only numpy's) and computes
numpy's value with it; for random draws, whose numbers numba's generator draws differently
from numpy's, adjit's compiled gradient against numba's value and finite differences of
numba's function, which see the same draws."""
import numba
import numpy as np
import pytest

import adjit

from fd import fd_grad
from test_arguments import (ENTRIES, VALUES, _placeholders, generate, ok_forms,
                            refused_forms)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return generate(tmp_path_factory, "audited_forms_numba")


def _args(forms):
    return tuple(VALUES[n] for n in _placeholders(forms))


@pytest.mark.parametrize("k", range(len(ENTRIES)), ids=[e.name for e in ENTRIES])
def test_numba_compiles_the_forms_as_numpy_computes_them(generated, k):
    entry = ENTRIES[k]
    forms = ok_forms(entry)
    if not forms:
        return
    fn = getattr(generated, f"f{k}")
    args = _args(forms)
    primal = numba.njit(fn)
    value = primal(*args)
    if not entry.name.startswith("np.random."):
        assert np.isclose(value, fn(*args), rtol=1e-12, atol=1e-12), (value, fn(*args))
        return
    got_value, got = adjit.value_and_grad(fn, argnums=tuple(range(len(args))))(*args)
    assert got_value == value
    for j, name in enumerate(_placeholders(forms)):
        np.testing.assert_allclose(got[j], fd_grad(primal, args, j), rtol=1e-5, atol=1e-6,
                                   err_msg=f"d/d{name}")


def test_numba_compiles_the_forms_adjit_refuses(generated):
    bad = []
    for i, (entry, form) in enumerate(refused_forms()):
        try:
            numba.njit(getattr(generated, f"r{i}"))(*_args([form]))
        except Exception as exc:    # noqa: BLE001 - numba's typing errors have many classes
            bad.append(f"{entry.name}: !{form}: numba refuses it: {str(exc)[:200]}")
    assert not bad, "\n  ".join([""] + bad)

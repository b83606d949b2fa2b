"""docs/coverage.md is what `make coverage` writes from the registry, and lists what numba
supports."""
from adjit.rules import coverage


def test_coverage_table_is_up_to_date():
    assert coverage.DOC.read_text() == coverage.render(), \
        "docs/coverage.md is out of date: run `make coverage`"


def test_coverage_lists_numbas_functions():
    names = coverage.numba_functions()
    assert len(names) >= 150
    assert {"np.exp", "np.sum", "np.linalg.solve", "math.lgamma", "np.cumsum"} <= set(names)
    rows = [line for line in coverage.render().splitlines() if line.startswith("| `")]
    assert len(rows) == len(names)
    assert all(line.count("|") == 7 for line in rows)


def test_every_registered_numpy_function_is_in_a_row():
    """A function adjit knows that numba also supports shows as supported."""
    text = coverage.render()
    for name in ("np.exp", "np.cbrt", "np.logaddexp", "np.sum", "np.cumsum", "np.diff",
                 "np.trace", "np.take", "np.linspace", "math.sin", "math.asinh"):
        assert f"| `{name}` | yes |" in text, name

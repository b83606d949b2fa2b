"""The examples run and reach what they claim."""
import importlib.util
import pathlib

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["quickstart", "stop_gradient_softmax"])
def test_example_runs(name, capsys):
    load(name).main()
    assert capsys.readouterr().out


def test_relax_cluster_lowers_the_energy():
    e0, e1 = load("relax_cluster").main(n_side=2, steps=300)
    assert e1 < e0

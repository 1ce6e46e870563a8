"""Every public layer's docstring has an example, and the example runs as written (on the
backend under test: CI runs tests/layers on TensorFlow, JAX and PyTorch)."""

import doctest
import inspect

import pytest

import keras_textattn.layers


@pytest.mark.parametrize("name", keras_textattn.layers.__all__)
def test_the_docstring_example_runs(name):
    layer = getattr(keras_textattn.layers, name)
    assert "\nExample:\n" in inspect.getdoc(layer), f"{name} has no example in its docstring"  # Python 3.13 dedents
    tests = [test for test in doctest.DocTestFinder(recurse=False).find(layer, name) if test.examples]
    assert len(tests) == 1 and len(tests[0].examples) >= 6
    results = doctest.DocTestRunner().run(
        tests[0], out=lambda text: pytest.fail(f"the example of {name} does not run as written:\n{text}")
    )
    assert results.failed == 0 and results.attempted == len(tests[0].examples)

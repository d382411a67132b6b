"""Examples in the public docstrings are doctests; run them against the installed package."""

import doctest
import importlib

import pytest

MODULES = [
    "layoutkit",
    "layoutkit.layout",
    "layoutkit._engine",
    "layoutkit.htp",
    "layoutkit.ggml",
    "layoutkit.tensorrt",
    "layoutkit.larod",
    "layoutkit.vitis",
    "layoutkit.kernels",
    "layoutkit.codegen",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    try:
        module = importlib.import_module(name)
    except ImportError:
        pytest.skip(f"{name} is not part of this build")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"

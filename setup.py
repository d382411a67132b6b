"""Build the Cython kernels; every other piece of metadata lives in pyproject.toml.

Set ``LAYOUTKIT_DEBUG=1`` to build with bounds/wraparound checks on (and -O0 -g),
which the CI's debug job uses to catch out-of-bounds access in kernels.
"""

import os
import sys
from glob import glob
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("LAYOUTKIT_DEBUG", "") not in ("", "0")

if sys.platform == "win32":
    # /fp:precise keeps MSVC from contracting multiply-adds (the GGML kernels rely on it).
    compile_args = ["/Od", "/Zi"] if DEBUG else ["/O2", "/fp:precise"]
else:
    compile_args = ["-O0", "-g"] if DEBUG else ["-O3", "-g0"]
    compile_args += ["-ffp-contract=off", "-fno-strict-aliasing"]

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": not DEBUG,
    "embedsignature": True,
}

extensions = [
    Extension(
        f"layoutkit.{Path(pyx).stem}",
        [pyx],
        extra_compile_args=compile_args,
        include_dirs=["src/layoutkit/include", numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for pyx in sorted(glob("src/layoutkit/*.pyx"))
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives=directives,
        force=DEBUG,
    ),
)

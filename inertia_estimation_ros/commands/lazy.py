"""``lazy_module``: a module that loads on first use, so that the command line parses and
checks its arguments (and answers a bad one) before the numerics load. ``defer_numpy_extras``:
numpy's submodules that only scipy's array-API layer touches, deferred in the same way."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

# numpy's submodules that the estimate needs rarely or never (``np.unique`` may ask numpy.ma,
# which then loads) but that scipy's array-API layer
# (``scipy._lib.array_api_compat.numpy``, which scipy.special loads) imports when it copies
# numpy's namespace: ``hasattr(numpy, name)`` for every name in ``dir(numpy)`` imports each
# of these (numpy.testing brings unittest and concurrent.futures, numpy.f2py its Fortran
# parser): ~0.15-0.25 s of CPU, half of scipy.special's import.
NUMPY_EXTRAS = (
    "numpy.char",
    "numpy.core",
    "numpy.ctypeslib",
    "numpy.f2py",
    "numpy.ma",
    "numpy.polynomial",
    "numpy.random",
    "numpy.rec",
    "numpy.strings",
    "numpy.testing",
)


def lazy_module(name: str) -> ModuleType:
    """``name`` imported now if it already is, else on its first attribute access."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def defer_numpy_extras() -> None:
    """Imports numpy and makes each of ``NUMPY_EXTRAS`` not yet imported a lazy module, also
    as numpy's attribute (what ``import numpy.testing`` and ``numpy.testing`` then find):
    it loads on its first use, as before, and not when something only asks whether it is
    there."""
    import numpy

    for name in NUMPY_EXTRAS:  # those of this numpy (1.26 has no numpy.strings)
        if name not in sys.modules and importlib.util.find_spec(name) is not None:
            setattr(numpy, name.rpartition(".")[2], lazy_module(name))

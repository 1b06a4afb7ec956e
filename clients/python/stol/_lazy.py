"""Modules of the package loaded when one of their names is first read.

``answers`` holds two dozen record types made by ``dataclasses``: importing both was
half of ``import stol`` (25 of 45 ms), which a script that only turns names into ids
paid in full before its first request. ``taxonomy`` reads ``answers.Taxon`` and the
others through the module loaded here, which runs on first use
(``importlib.util.LazyLoader``, the standard library's way).
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """The module ``name``, executed when an attribute of it is first read."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError("no module named %r" % (name,), name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module

"""conform's op modules and the registry that finds them (see :mod:`conform.ops._registry`).

Each built-in op has a YAML spec in this folder (``<op>.yaml``) and a definition in one op module
(``elementwise``, ``reduction``, ...).
"""
from conform.ops._registry import (BUILTIN_MODULES, OpDefinition, UnknownOp, definition,
                                   definitions, op, package_spec_dirs)

__all__ = ["BUILTIN_MODULES", "OpDefinition", "UnknownOp", "definition", "definitions", "op",
           "package_spec_dirs"]

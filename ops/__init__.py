"""conform's op modules: each public module here defines ops (with
:func:`conform.op_registry.op`) and may declare regions (:func:`conform.op_registry.region`);
the registry discovers them, so a new module edits no shared file.

Each built-in op has a YAML spec in this folder (``<op>.yaml``) and a definition in one op module
(``elementwise``, ``reduction``, ...).
"""
from conform.op_registry import (OpDefinition, UnknownOp, definition, definitions, op,
                                 package_spec_dirs, region)

__all__ = ["OpDefinition", "UnknownOp", "definition", "definitions", "op", "package_spec_dirs",
           "region"]

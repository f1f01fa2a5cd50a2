"""Op specs: one YAML file per operation, its JSON Schema and the loader."""
from conform.spec._loader import BUILTIN_DIR, OpSpec, SpecError, dtype_class, load_spec, load_specs
from conform.spec._schema import SCHEMA

__all__ = ["BUILTIN_DIR", "OpSpec", "SpecError", "SCHEMA", "dtype_class", "load_spec", "load_specs"]

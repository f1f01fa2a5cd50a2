"""Op specs: one YAML file per operation, its JSON Schema and the loader."""
from conform.spec._loader import (BUILTIN_DIR, OpSpec, SpecError, dtype_class, line_of, load_spec,
                                  load_specs, read_yaml_mapping, validate_document)
from conform.spec._design import ABSENT, INPUT_PREFIX, PRESENT, design_factors, same_class
from conform.spec._runnable import DEFAULT_RANKS, dtype_range
from conform.spec._schema import DTYPES, SCHEMA

__all__ = ["ABSENT", "INPUT_PREFIX", "PRESENT", "design_factors", "same_class", "BUILTIN_DIR", "DEFAULT_RANKS", "DTYPES", "OpSpec", "SpecError", "SCHEMA", "dtype_class", "dtype_range", "line_of",
           "load_spec", "load_specs", "read_yaml_mapping", "validate_document"]

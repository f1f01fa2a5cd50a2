"""How a broken YAML document is reported: :class:`SpecError` naming file, line and field, the
line of a node, and JSON Schema validation that names the first violation's line."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml


#: The longest message a SpecError carries (a value quoted in it is cut).
MAX_MESSAGE = 2000


class SpecError(Exception):
    """A spec file is malformed. The message names file, line and field."""

    def __init__(self, path: Path | str, line: int | None, field_path: str, message: str):
        self.path, self.line, self.field = str(path), line, field_path
        where = f"{path}:{line}" if line else str(path)
        if len(message) > MAX_MESSAGE:   # a quoted value can be as long as the file
            message = message[:MAX_MESSAGE - 3] + "..."
        super().__init__(f"{where}: field {field_path or '<top>'}: {message}")



def line_of(node: yaml.Node, path: list) -> int:
    """1-based line of the YAML node at ``path`` (the deepest node that exists)."""
    import yaml

    for key in path:
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if k.value == key), None)
            if nxt is None:
                break
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
        else:
            break
    return node.start_mark.line + 1


def validate_document(data: Any, root: yaml.Node, path: Path, schema: dict,
                      error: type[SpecError] = SpecError) -> None:
    """Raise ``error`` naming file, line and field for the first violation of ``schema``."""
    import jsonschema   # here: a run whose specs come from the cache does not need it

    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        err = jsonschema.exceptions.best_match(errors)
        location = list(err.absolute_path)
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            known = err.schema.get("properties", {})
            location += sorted(k for k in err.instance if k not in known)[:1]
        field_path = ".".join(str(p) for p in location)
        raise error(path, line_of(root, location), field_path, _message(err))


def _message(err) -> str:
    """The violation in one short line: a too long list or text is described, not quoted."""
    if err.validator in ("maxItems", "maxProperties", "maxLength"):
        return f"{len(err.instance)} entries, at most {err.validator_value} allowed"
    text = err.message
    return text if len(text) <= 300 else text[:300] + "..."

"""The one safe YAML reader for specs, manifests and profiles.

conform's YAML files are small, hand-written mappings, so the reader refuses what such a file
never needs and what an attacker or a slip would use: anchors and aliases (an alias bomb of a
few hundred bytes expands to gigabytes for whatever walks the data), duplicate keys (YAML says
they are an error; PyYAML silently keeps the last), nesting deeper than :data:`MAX_DEPTH`,
files larger than :data:`MAX_BYTES` and text that is not UTF-8. Each refusal names the file
and line. Anchors, nesting and size are checked on the token stream, before any node is built.
"""
from __future__ import annotations

import functools
from pathlib import Path

#: The largest YAML file read (bytes). The biggest built-in file is under 5 KB; a manifest of
#: several thousand entries still fits.
MAX_BYTES = 1 << 20
#: The deepest nesting of mappings and sequences (the built-in files nest 4 deep).
MAX_DEPTH = 32


def _refuse(error, path: Path, line: int | None, message: str):
    return error(path, line, "", message)


def _decoded(path: Path, error) -> str:
    """The file's text: at most MAX_BYTES, UTF-8."""
    with path.open("rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise _refuse(error, path, None, f"the file is larger than {MAX_BYTES} bytes, the cap "
                                         "for a conform YAML file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise _refuse(error, path, line, f"not UTF-8 text: byte 0x{data[exc.start]:02x} at "
                                         f"column {column}") from None


def _check_tokens(yaml, text: str, loader, path: Path, error) -> None:
    """Refuse anchors, aliases, tags other than the core ones and deep nesting, token by token."""
    opening = (yaml.BlockMappingStartToken, yaml.BlockSequenceStartToken,
               yaml.FlowMappingStartToken, yaml.FlowSequenceStartToken)
    closing = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)
    depth = 0
    for token in yaml.scan(text, Loader=loader):
        line = token.start_mark.line + 1
        if isinstance(token, (yaml.AnchorToken, yaml.AliasToken)):
            kind = "anchor" if isinstance(token, yaml.AnchorToken) else "alias"
            raise _refuse(error, path, line, f"YAML {kind} {token.value!r}: anchors and aliases "
                                             "are not allowed in conform files (write the value out)")
        if isinstance(token, opening):
            depth += 1
            if depth > MAX_DEPTH:
                raise _refuse(error, path, line, f"nesting deeper than {MAX_DEPTH} levels")
        elif isinstance(token, closing):
            depth -= 1


def _check_unique_keys(yaml, node, path: Path, error) -> None:
    """Refuse a mapping that repeats a key (the tree has no aliases, so it is walked once)."""
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else None
                if name is not None and name in seen:
                    raise _refuse(error, path, key.start_mark.line + 1,
                                  f"duplicate key {name!r} (first on line {seen[name]})")
                seen[name] = key.start_mark.line + 1
                stack += [key, value]
        elif isinstance(node, yaml.SequenceNode):
            stack += node.value


@functools.cache
def _loader_class(yaml):
    """The safe loader (libyaml's when available: ~10x faster), with a date that does not
    exist (``2026-02-30``) a marked error instead of a bare ValueError."""
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):
        pass

    def timestamp(loader, node):
        try:
            return yaml.constructor.SafeConstructor.construct_yaml_timestamp(loader, node)
        except ValueError as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"{node.value!r} is not a date that exists ({exc})",
                node.start_mark) from None

    Loader.add_constructor("tag:yaml.org,2002:timestamp", timestamp)
    return Loader


def read_mapping(path: Path, what: str, error, shape: type = dict):
    """``(data, node tree)`` of the YAML file ``path``, which must hold ``what`` (a mapping, or
    a list where ``shape`` is ``list``: a failure catalog).

    ``error(path, line, field, message)`` builds the exception raised for any refusal (a
    :class:`~conform.spec.SpecError` subclass); OSError from reading the file propagates.

    >>> data, root = read_mapping(Path("spec/ops/add.yaml"), "a spec", SpecError)  # doctest: +SKIP
    """
    import yaml   # here: a run whose specs and manifests come from the cache does not need it

    path = Path(path)
    text = _decoded(path, error)
    loader = _loader_class(yaml)
    try:
        _check_tokens(yaml, text, loader, path, error)
        parser = loader(text)
        try:
            root = parser.get_single_node()
            if root is not None:
                _check_unique_keys(yaml, root, path, error)
            data = parser.construct_document(root) if root is not None else None
        finally:
            parser.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise error(path, mark.line + 1 if mark else None, "",
                    f"invalid YAML: {exc.problem}") from None
    except yaml.reader.ReaderError as exc:   # a control character YAML does not allow
        line = text[:exc.position].count("\n") + 1
        raise error(path, line, "", f"invalid YAML: {exc.reason} character "
                                    f"#x{exc.character:04x}") from None
    if not isinstance(data, shape) or root is None:
        raise error(path, 1, "", f"{what} must be a YAML {'mapping' if shape is dict else 'list'}")
    return data, root

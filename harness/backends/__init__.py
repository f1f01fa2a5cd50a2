"""Built-in backends; vendor adapters implement the same :class:`Backend` contract
(docs/adapters.md): ``run(*, program, inputs, model)`` computes a :class:`Program`;
:class:`Wrapping` and :func:`load_backend` make a backend of another one."""
from conform.harness.backends.base import API_VERSION, Backend, Refused, Unsupported
from conform.harness.backends.program import Node, Program, evaluate
from conform.harness.backends.wrapping import Wrapping, load_backend

__all__ = ["API_VERSION", "Backend", "Node", "Program", "Refused", "Unsupported", "Wrapping",
           "evaluate", "load_backend"]

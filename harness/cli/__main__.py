"""``python -m conform.harness.cli``: the ``conform`` command."""
from conform.harness.cli.main import entry

entry()

"""Backends and their isolation, the runner, error models and the command line."""

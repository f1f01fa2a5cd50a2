"""Several single-op mutants of bench/mutants/ in one backend, so that one ``conform run``
measures them all: ``--backend bench.mutant_sets:Together_A__B__C`` runs mutant ``A``'s bug on
``A``'s cells, ``B``'s on ``B``'s, and the wrapped backend unchanged everywhere else.

The mutants of a set must wrap the same backend and own disjoint (op, dtype) cells, so each case
meets at most one bug, as it would in a run of that mutant alone: every case is one op, and a
mutant changes only the cases :meth:`bench.mutants.Mutant.applies` to. A run of a set thus gives,
on each member's cells, the records a run of that member alone gives; the score reads each
member's cells from it (bench/mutation_score.py). One run per set instead of one per mutant saves
each run's fixed cost (start-up, imports, the worker, the corpus read), most of a small run's time.
"""
from __future__ import annotations

from conform.harness.backends import Wrapping

PREFIX = "Together_"
SEPARATOR = "__"


def set_name(classes) -> str:
    """The attribute naming the backend that runs ``classes`` together."""
    return PREFIX + SEPARATOR.join(cls.__name__ for cls in classes)


def clash(first, second) -> bool:
    """Whether two mutants cannot share a set: they wrap different backends, or own a common
    (op, dtype) cell (no ``affects``: every dtype of its ops)."""
    if first.wraps != second.wraps:
        return True
    if not set(first.targets) & set(second.targets):
        return False
    return not first.affects or not second.affects or bool(set(first.affects) & set(second.affects))


class _Together(Wrapping):
    """The wrapped backend, handing each case to the member mutant whose cells hold it."""

    members: tuple = ()

    def __init__(self, wrapped=None):
        super().__init__(wrapped)
        self.instances = [cls(self.wrapped) for cls in self.members]

    def prepare(self, *, program, inputs, model=None):
        for mutant in self.instances:
            if mutant.applies(program):
                return mutant.prepare(program=program, inputs=inputs, model=model)
        return super().prepare(program=program, inputs=inputs, model=model)


def __getattr__(name: str):
    """``Together_A__B``: the backend class running mutants A and B together (made once)."""
    if not name.startswith(PREFIX):
        raise AttributeError(name)
    from bench import mutants

    table = {cls.__name__: cls for cls in mutants.ALL}
    wanted = name[len(PREFIX):].split(SEPARATOR)
    unknown = [n for n in wanted if n not in table]
    if unknown:
        raise AttributeError(f"{name}: no mutant named {', '.join(unknown)}")
    members = tuple(table[n] for n in wanted)
    clashes = [(a.__name__, b.__name__) for i, a in enumerate(members) for b in members[i + 1:]
               if clash(a, b)]
    if clashes or any(getattr(cls, "fuzz_ops", ()) for cls in members):
        raise AttributeError(f"{name}: the mutants must wrap one backend, be single-op, and own "
                             f"disjoint cells (clashing: {clashes})")
    made = type(name, (_Together,), {"wraps": members[0].wraps, "members": members,
                                     "__doc__": f"Mutants {', '.join(wanted)} together."})
    globals()[name] = made
    return made

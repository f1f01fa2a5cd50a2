"""The verdict vocabulary: every verdict a result line can carry, and the groups the reports,
the gate, manifests and certificates count by. Every module names verdicts through this one.

* ``pass``, ``fail``: an output judged under its error model;
* ``impl_defined``: every element the case checks lies in a region the standard leaves open, or
  the backend raised on a case with such elements (recorded, not judged; a case with some open
  elements is judged on the others, its open ones counted);
* ``inconsistent``: the input lies in such a region, but the backend's answer for the same
  values changes with their position (harness/judge/consistency.py): a failure;
* ``unsupported``: the backend cannot express the case (a coverage gap, not a failure);
* ``error``, ``crash``, ``timeout``: the backend raised, its worker died, or it ran too long;
* ``accepts_invalid``: the backend returned a value for an input the standard forbids (a
  ``must_reject`` case): outside the pass rate, unless a profile counts it;
* ``skip``, ``xfail``, ``xpass``, ``waived``: given by a manifest of known deviations;
* ``ill_conditioned``: a generated graph (``conform fuzz``) whose propagated error bound is too
  loose at its input to judge any element of its outputs (recorded, not judged).
"""
from __future__ import annotations

CORE = ("pass", "fail", "impl_defined", "unsupported", "error", "crash", "timeout", "inconsistent",
        "accepts_invalid")
ACCEPTS_INVALID = "accepts_invalid"                     # a value for a must-reject case
FROM_MANIFEST = ("skip", "xfail", "xpass", "waived")      # verdicts only a manifest gives
VERDICTS = CORE + FROM_MANIFEST
# verdicts only a generated graph gets: a summary counts them only where a record has one
FROM_GRAPHS = ("ill_conditioned",)

BROKEN = ("error", "crash", "timeout")                   # the backend did not compute the case
PROBLEMS = ("fail", "inconsistent") + BROKEN            # what fails a case (reports list them)
PASSED = ("pass", "xpass")
JUDGED = PASSED + PROBLEMS       # the pass rate's denominator and the coverage's numerator
EXCUSED = ("skip", "xfail", "waived")                    # by a manifest: counted, not judged
NOT_RUN = ("unsupported", "skip")                        # a case the backend did not run
UNCOUNTED = ("unsupported",) + EXCUSED                   # outside a certificate's coverage

"""The verdict vocabulary: every verdict a result line can carry, and the groups the reports,
the gate, manifests and certificates count by. Every module names verdicts through this one.

* ``pass``, ``fail``: an output judged under its error model;
* ``impl_defined``: the input lies in a region the standard leaves open (recorded, not judged);
* ``inconsistent``: the input lies in such a region, but the backend's answer for the same
  values changes with their position (harness/judge/consistency.py): a failure;
* ``unsupported``: the backend cannot express the case (a coverage gap, not a failure);
* ``error``, ``crash``, ``timeout``: the backend raised, its worker died, or it ran too long;
* ``skip``, ``xfail``, ``xpass``, ``waived``: given by a manifest of known deviations.
"""
from __future__ import annotations

CORE = ("pass", "fail", "impl_defined", "unsupported", "error", "crash", "timeout", "inconsistent")
FROM_MANIFEST = ("skip", "xfail", "xpass", "waived")      # verdicts only a manifest gives
VERDICTS = CORE + FROM_MANIFEST

BROKEN = ("error", "crash", "timeout")                   # the backend did not compute the case
PROBLEMS = ("fail", "inconsistent") + BROKEN            # what fails a case (reports list them)
PASSED = ("pass", "xpass")
JUDGED = PASSED + PROBLEMS       # the pass rate's denominator and the coverage's numerator
EXCUSED = ("skip", "xfail", "waived")                    # by a manifest: counted, not judged
NOT_RUN = ("unsupported", "skip")                        # a case the backend did not run
UNCOUNTED = ("unsupported",) + EXCUSED                   # outside a certificate's coverage

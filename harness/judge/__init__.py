"""The judge: a backend's outputs against the oracle under the spec's error models, and the
result records that say so (:mod:`.judging`), the error-model engine (:mod:`.compare`), the
verdict vocabulary (:mod:`.verdicts`) and what a backend did with a case (:mod:`.outcome`)."""

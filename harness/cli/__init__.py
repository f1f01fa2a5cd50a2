"""The ``conform`` command line: :mod:`.main` (run, list, report and the wiring), with the
gate and repro (:mod:`.gate`), certify and verify (:mod:`.certify`) and adapter
(:mod:`.adapter`) commands, and the checks of option values (:mod:`.values`)."""

"""What makes results usable between people: known deviations (:mod:`.manifests`), the CI gate
(:mod:`.gate`), certificates (:mod:`.certify`, :mod:`.verify`, :mod:`.signing`), standalone
reproductions (:mod:`.repro`, :mod:`.repro_backends`) and the adapter self-check
(:mod:`.adapters`)."""

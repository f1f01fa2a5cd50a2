"""The run: selecting and generating cases (:mod:`.runner`), running them in isolated worker
processes (:mod:`.isolation`, :mod:`.worker`, :mod:`.boundary`), the output folder
(:mod:`.outdir`), and finding backends and what they claim (:mod:`.registry`, :mod:`.claims`)."""

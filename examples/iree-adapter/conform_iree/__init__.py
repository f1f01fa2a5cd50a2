"""conform adapter for IREE (https://iree.dev): each case's StableHLO module is compiled by
``iree-compile`` for the ``llvm-cpu`` target and run by the IREE runtime on the ``local-sync``
driver (one thread: conform already runs one worker process per core).

Compiling takes ~0.3-1 s per module, far more than running it, so compiled modules (VM
flatbuffers, ``.vmfb``) are cached twice: in memory by ``model.key`` (cases with equal keys share
one module) and on disk under conform's cache directory, keyed by a hash of the MLIR text, the
compiler version and the flags, so a second run compiles nothing.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
from importlib.metadata import version as dist_version

import numpy as np

from conform.harness.backends import Backend, Unsupported
from conform.harness.backends.base import cache_dir
from conform.harness.backends.models import ModelCache

FLAGS = (
    # "generic" x86-64/aarch64 code runs on any CPU of the architecture (so cached modules can be
    # shared between machines); without it iree-compile warns and picks generic anyway.
    "--iree-llvmcpu-target-cpu=generic",
    # By default IREE rewrites f64 to f32 (inputs, outputs and arithmetic) and the f64 module
    # rejects the caller's f64 arrays; keep f64 as f64 so the float64 cases test f64 arithmetic.
    "--iree-input-demote-f64-to-f32=false",
)

# Compiler failures that mean "IREE cannot express this case" (Unsupported); any other compiler
# failure is an error. Both are limits of IREE's llvm-cpu target for float64 math functions:
UNSUPPORTED = (
    # LLVM lowers the function to a libm call, but IREE links its executables without a libm
    (re.compile(r"undefined symbol: (\w+)"),
     "IREE's llvm-cpu executables have no {0}() (iree-lld: undefined symbol; no libm is linked)"),
    # no lowering at all
    (re.compile(r"failed to legalize operation '([\w.]+)'[^\n]*?: \(([^)]*)\)"),
     "IREE's llvm-cpu target cannot lower {0} on {1}"),
)


class IreeBackend(Backend):
    api_version = 1
    name = "iree"
    model_format = "stablehlo"
    # Measured: a float32/float64/float16 subnormal input reads as zero and a subnormal result is
    # flushed to zero (the CPU executables run with FTZ/DAZ set).
    subnormals = "ftz"
    # Every dtype of the suite compiles and runs (tested: see README.md).
    dtypes = frozenset({"bool", "uint8", "uint32", "int32", "int64",
                        "float16", "bfloat16", "float32", "float64"})

    def __init__(self):
        import iree.compiler
        import iree.runtime

        self._compiler, self._runtime = iree.compiler, iree.runtime
        self._config = iree.runtime.Config("local-sync")  # one device for all modules
        self._mains = ModelCache()                         # model.key -> the module's @main
        self._disk = cache_dir() / "iree"
        self._disk.mkdir(parents=True, exist_ok=True)
        self._stats = {"compilations": 0, "disk_cache_hits": 0}

    def version(self) -> str:
        from iree.compiler.version import REVISIONS

        return (f"iree-base-compiler {dist_version('iree-base-compiler')} / iree-base-runtime "
                f"{dist_version('iree-base-runtime')} (IREE {REVISIONS['IREE'][:12]}), llvm-cpu generic")

    def stats(self) -> dict:
        return dict(self._stats)

    def _store(self, path, data: bytes) -> None:
        # write, then rename: other workers may be reading or writing the same entry
        fd, tmp = tempfile.mkstemp(dir=self._disk, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)

    def _vmfb(self, text: str) -> bytes:
        """The compiled module for ``text``, from the disk cache or ``iree-compile``; raises
        Unsupported (also cached) for the compiler failures in UNSUPPORTED."""
        from iree.compiler import CompilerToolError
        from iree.compiler.version import REVISIONS

        key = "\n".join((REVISIONS["IREE"], *FLAGS, text))
        entry = self._disk / hashlib.sha256(key.encode()).hexdigest()
        compiled, unsupported = entry.with_suffix(".vmfb"), entry.with_suffix(".unsupported")
        if compiled.exists() or unsupported.exists():
            self._stats["disk_cache_hits"] += 1
            if unsupported.exists():
                raise Unsupported(unsupported.read_text())
            return compiled.read_bytes()
        self._stats["compilations"] += 1
        try:
            vmfb = self._compiler.compile_str(text, target_backends=["llvm-cpu"],
                                              input_type="stablehlo", extra_args=list(FLAGS))
        except CompilerToolError as exc:
            for pattern, reason in UNSUPPORTED:
                found = pattern.search(str(exc))
                if found:
                    reason = reason.format(*found.groups())
                    self._store(unsupported, reason.encode())
                    raise Unsupported(reason) from None
            raise
        self._store(compiled, vmfb)
        return vmfb

    def _main(self, model):
        """The module's @main, loaded from its compiled flatbuffer."""
        rt = self._runtime
        module = rt.VmModule.copy_buffer(self._config.vm_instance, self._vmfb(model.build()))
        context = rt.SystemContext(vm_modules=[module], config=self._config)
        return context.modules[module.name]["main"]

    def run(self, *, spec, case, model, **_):
        outputs = self._mains.get(model.key, lambda: self._main(model))(*model.inputs())
        if not isinstance(outputs, tuple | list):
            outputs = (outputs,)
        return [np.asarray(o.to_host()) for o in outputs]

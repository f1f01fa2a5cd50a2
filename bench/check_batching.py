"""Is batching safe? Runs every element-wise op x dtype of a backend two ways and compares the
outputs bit for bit: each generated case alone, and all of them flattened and concatenated into
one case (what a vmap or a packed model would compute).

    python bench/check_batching.py [--backends jax,onnxruntime] [--count 40] [--seed 11]

conform does not batch: this check finds shape-dependent results in both jax (XLA:CPU) and
onnxruntime, so batching would change error figures (see the figures in bench/results/).
"""
from __future__ import annotations

import argparse
import json
from dataclasses import replace

import numpy as np

from conform.generators import dtype_labels, generate_cases
from conform.harness.registry import load_backend_class
from conform.spec import load_specs
from conform.spec.dtypes import np_dtype


def kills_the_process(case) -> bool:
    """INT_MIN / -1 raises SIGFPE in onnxruntime's integer Div and Mod (conform's workers
    survive it as a crash; a benchmark running cases in its own process would not)."""
    if case.op not in ("divide", "remainder") or not case.input_dtypes[0].startswith("int"):
        return False
    lhs, rhs = (np.asarray(x) for x in case.inputs)
    return bool(np.any((lhs == np.iinfo(lhs.dtype).min) & (rhs == -1)))


def _packed(cases):
    """One case whose inputs are the cases' inputs flattened and concatenated."""
    inputs = [np.concatenate([np.asarray(c.inputs[i], dtype=np_dtype(d)).ravel() for c in cases])
              for i, d in enumerate(cases[0].input_dtypes)]
    return replace(cases[0], id=f"{cases[0].op}.packed", inputs=inputs)


def check(backend_name: str, count: int, seed: int) -> dict:
    backend, specs = load_backend_class(backend_name)(), load_specs()
    identical, differ = 0, {}
    for spec in specs.values():
        if spec.family != "elementwise":
            continue
        for label in dtype_labels(spec):
            cases, singles = [], []
            for case in generate_cases(spec, label, count=count, seed=seed):
                if kills_the_process(case) or len({np.shape(x) for x in case.inputs}) != 1:
                    continue
                try:
                    singles.append(np.asarray(backend.run(spec=spec, case=case)[0]).ravel())
                except Exception:   # unsupported, or raising: nothing to compare
                    continue
                cases.append(case)
            if len(cases) < 2:
                continue
            together = np.asarray(backend.run(spec=spec, case=_packed(cases))[0])
            if together.tobytes() == np.concatenate(singles).tobytes():
                identical += 1
            else:
                differ.setdefault(spec.op, []).append(label)
    return {"backend": backend_name, "identical": identical, "differ": differ}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="jax,onnxruntime")
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    for name in args.backends.split(","):
        print(json.dumps(check(name, args.count, args.seed)))


if __name__ == "__main__":
    main()

"""Pretrained-model benchmarks: ``python -m bench.pretrained [--model minilm|smollm2|all]`` (Markdown tables).

all-MiniLM-L6-v2:

1. Cold load: ``core.pretrained.minilm()`` in a fresh subprocess (torch already imported there, as in the
   app), median of 3 processes; the zip is decompressed and the weights read each time. Target ≤ 5 s.
2. One trace of a ~20-token sentence on CPU (weights already loaded), median of 20 after 3 warm-ups.
   Target ≤ 100 ms. A 128-token trace is timed too, for information.

SmolLM2-135M (``core.pretrained.smollm2()``, issue 23), see :mod:`bench.smollm2`.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time

import torch

SENTENCE = "The animal didn't cross the street because it was too tired, so it lay down and slept."
LONG = " ".join(["attention"] * 126)  # 126 words + [CLS] + [SEP] = 128 tokens

_LOAD_CHILD = r"""
import json, time, torch
t0 = time.perf_counter()
from core import pretrained
m = pretrained.minilm()
print(json.dumps({"load_s": time.perf_counter() - t0}))
"""


def cold_load(repeats: int = 3) -> list[float]:
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    out = []
    for _ in range(repeats):
        res = subprocess.run([sys.executable, "-c", _LOAD_CHILD], capture_output=True, text=True, check=True, env=env)
        out.append(json.loads(res.stdout.strip().splitlines()[-1])["load_s"])
    return out


def trace_time(text: str, repeats: int = 20, warmup: int = 3) -> tuple[float, int]:
    from core import pretrained

    model = pretrained.minilm()
    for _ in range(warmup):
        model.trace(text)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        tr = model.trace(text)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), len(tr.tokens)


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=("minilm", "smollm2", "all"), default="all")
    which = ap.parse_args().model
    if which in ("minilm", "all"):
        minilm_table()
    if which in ("smollm2", "all"):
        from bench import smollm2

        smollm2.main()


def minilm_table() -> None:
    torch.set_num_threads(1)  # as the app runs it (ui/compute/common.py): one thread per computation on a shared server
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"threads {torch.get_num_threads()}, python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    loads = cold_load()
    load = statistics.median(loads)
    t_short, n_short = trace_time(SENTENCE)
    t_long, n_long = trace_time(LONG, repeats=5, warmup=1)
    torch.set_num_threads(2)
    t_two, _ = trace_time(SENTENCE)
    torch.set_num_threads(1)
    ok = lambda good: "yes" if good else "**no**"  # noqa: E731
    print("\n| benchmark | measured | target | met |\n|---|---|---|---|")
    print(f"| cold load of all-MiniLM-L6-v2 (`minilm()` in a fresh process, median of {len(loads)}; "
          f"runs {', '.join(f'{x:.2f}' for x in loads)} s) | {load:.2f} s | ≤ 5 s | {ok(load <= 5)} |")
    print(f"| `trace()` of a {n_short}-token sentence, CPU fp32, 1 thread as in the app, median of 20 | "
          f"{t_short * 1e3:.1f} ms | ≤ 100 ms | {ok(t_short <= 0.1)} |")
    print(f"| `trace()` of the {n_short}-token sentence on 2 torch threads, median of 20 | {t_two * 1e3:.1f} ms | — | — |")
    print(f"| `trace()` of {n_long} tokens (the default max_tokens), median of 5 | {t_long * 1e3:.1f} ms | — | — |")


if __name__ == "__main__":
    main()

"""Core benchmarks: ``python -m bench.core`` (prints a Markdown table for BENCHMARKS.md).

1. Time: core.attention (full trace) vs torch's scaled_dot_product_attention on CPU,
   B=1, H=8, n=1024, d=64, float32 — same run, median of repeats, ratio reported.
2. Peak memory: core.chunked_attention vs core.attention (full trace) at n=8192, d=64,
   each measured in a fresh subprocess as the peak growth of resident memory (sampled every
   0.2 ms while the call runs) over the memory held before the call.
3. Decoding 256 tokens through one attention layer of SmolLM2-135M's shape (d_model 576, 9 query heads,
   3 K/V heads, d_head 64, RoPE base 100000): core.cached_decode (KV cache) vs recomputing the
   whole prefix with core.multi_head_attention at every step — wall time (median of 3, same run),
   process CPU time, and the multiply-adds both count (core.kv_cache.decode_step_macs).
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
import torch.nn.functional as F

import core


def _median_time(fn, repeats: int = 15, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def time_ratio(n: int = 1024, d: int = 64, H: int = 8) -> dict:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, H, n, d, generator=g) for _ in range(3))
    with torch.inference_mode():
        t_core = _median_time(lambda: core.attention(q, k, v))
        t_sdpa = _median_time(lambda: F.scaled_dot_product_attention(q, k, v))
    return {"n": n, "d": d, "H": H, "core_ms": t_core * 1e3, "sdpa_ms": t_sdpa * 1e3, "ratio": t_core / t_sdpa}


_MEM_CHILD = r"""
import gc, json, os, sys, threading, time, torch, core
which, n, d, chunk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
page = os.sysconf("SC_PAGE_SIZE")
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page
g = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(n, d, generator=g) for _ in range(3))
# warm the code paths on a tiny input so lazy initialisation is not counted
core.attention(q[:8], k[:8], v[:8]); core.chunked_attention(q[:8], k[:8], v[:8], chunk_size=4)
gc.collect()
base = rss(); peak = [base]; done = threading.Event()
def sample():  # current RSS every 0.2 ms while the call runs
    while not done.is_set():
        peak[0] = max(peak[0], rss()); time.sleep(0.0002)
t = threading.Thread(target=sample); t.start()
with torch.inference_mode():
    for _ in range(3):
        out = core.attention(q, k, v) if which == "standard" else core.chunked_attention(q, k, v, chunk_size=chunk)
        peak[0] = max(peak[0], rss())
        del out
done.set(); t.join()
print(json.dumps({"peak_growth_mib": (peak[0] - base) / 2**20}))
"""


def peak_memory(which: str, n: int, d: int = 64, chunk: int = 128) -> float:
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    res = subprocess.run([sys.executable, "-c", _MEM_CHILD, which, str(n), str(d), str(chunk)],
                         capture_output=True, text=True, check=True, env=env)
    return json.loads(res.stdout.strip().splitlines()[-1])["peak_growth_mib"]


def decode_comparison(n: int = 256, repeats: int = 3) -> dict:
    m = core.MODEL_PRESETS["smollm2-135m"]
    H, G, d, D = m.n_heads, m.n_kv_heads, m.d_head, m.d_model
    g = torch.Generator().manual_seed(0)
    W = {"W_q": torch.randn(D, H * d, generator=g) / D ** 0.5, "W_k": torch.randn(D, G * d, generator=g) / D ** 0.5,
         "W_v": torch.randn(D, G * d, generator=g) / D ** 0.5, "W_o": torch.randn(H * d, D, generator=g) / (H * d) ** 0.5}
    x = torch.randn(n, D, generator=g)
    kw = dict(n_heads=H, n_kv_heads=G, rope_base=m.rope_base, **W)

    def cached():
        return core.cached_decode(x, **kw).output

    def recompute():
        rows = [core.multi_head_attention(x[: t + 1], mask=core.masks.causal(t + 1), **kw).output[-1] for t in range(n)]
        return torch.stack(rows)

    out = {}

    def keep(name, fn):
        def run():
            out[name] = fn()
        return run

    with torch.inference_mode():
        t_cached = _median_time(keep("cached", cached), repeats=repeats, warmup=1)
        c0 = time.process_time()
        t_recompute = _median_time(keep("recompute", recompute), repeats=repeats, warmup=0)
        cpu_recompute = (time.process_time() - c0) / repeats
        c0 = time.process_time()
        cached()
        cpu_cached = time.process_time() - c0
        dec = core.cached_decode(x, **kw)
    return {"n": n, "cached_s": t_cached, "recompute_s": t_recompute, "cpu_cached_s": cpu_cached,
            "cpu_recompute_s": cpu_recompute, "gap": float((out["cached"] - out["recompute"]).abs().max()),
            "macs_cached": dec.macs_cached, "macs_recompute": dec.macs_recompute}


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip", nargs="*", default=[], choices=["time", "memory", "decode"], help="parts to leave out")
    skip = set(ap.parse_args(argv).skip)
    torch.set_num_threads(torch.get_num_threads())
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"threads {torch.get_num_threads()}, python {platform.python_version()}, load average "
          + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    print("\n| benchmark | core | reference | ratio |\n|---|---|---|---|")
    if "time" not in skip:
        r = time_ratio()
        print(f"| attention with full trace vs SDPA, CPU fp32, B=1 H={r['H']} n={r['n']} d={r['d']} "
              f"| {r['core_ms']:.1f} ms | {r['sdpa_ms']:.1f} ms | {r['ratio']:.2f}× |")
    if "memory" not in skip:
        n = 8192
        std = peak_memory("standard", n)
        chk = peak_memory("chunked", n)
        print(f"| peak memory growth, n={n} d=64, chunk 128 | chunked {chk:.1f} MiB | standard {std:.1f} MiB "
              f"| {100 * chk / std:.1f} % (target ≤ 10 %) |")
    if "decode" not in skip:
        dc = decode_comparison()
        print(f"| decoding {dc['n']} tokens, one SmolLM2-135M-shaped attention layer (H 9, G 3, d 64, RoPE): time "
              f"| KV cache {dc['cached_s'] * 1e3:.0f} ms | recompute each step {dc['recompute_s'] * 1e3:.0f} ms "
              f"| {dc['recompute_s'] / dc['cached_s']:.1f}× faster with the cache (outputs agree to {dc['gap']:.1e}) |")
        print(f"| the same: process CPU time | KV cache {dc['cpu_cached_s'] * 1e3:.0f} ms | recompute "
              f"{dc['cpu_recompute_s'] * 1e3:.0f} ms | {dc['cpu_recompute_s'] / dc['cpu_cached_s']:.1f}× |")
        print(f"| the same: multiply-adds | KV cache {dc['macs_cached'] / 1e6:.1f} M | recompute "
              f"{dc['macs_recompute'] / 1e6:.1f} M | {dc['macs_recompute'] / dc['macs_cached']:.1f}× fewer with the cache |")
    print("load average after: " + " ".join(f"{x:.1f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()

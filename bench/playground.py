"""Page benchmarks: ``python -m bench.playground`` (prints Markdown for BENCHMARKS.md).

1. Server-side rerun: AppTest runs the real page script after a token change, at n = 8, 64,
   256 tokens (random embeddings, projections, causal mask), median of repeats; the same
   measurement of a bare one-widget page in the same run gives the framework's floor.
2. Browser round trip: a real `streamlit run` server and headless Chromium; the time from
   pressing Enter in the token box to the weights and output heatmaps holding the new shape
   at n = 8 and 64, next to the bare page's Enter → updated
   text, a floor page that draws five heatmaps with the same renderer and no computation, and
   a skeleton page with the Playground's controls and one pipeline chart (bench/skeleton_app.py).
3. Every page's server-side rerun after a seed change (all numbers recomputed), and the √d_k
   experiment on its own.
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from streamlit.testing.v1 import AppTest

from ui import nav, state

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


def sentence(n: int, salt: int) -> str:
    return " ".join(f"w{salt}_{i}" for i in range(n))


def server_rerun_ms(n: int, repeats: int = 7) -> float:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for k, v in {"emb": "random", "qkv": "projection", "causal": "1"}.items():  # as the browser benchmark's URL
        at.query_params[k] = v
    at.run()
    at.switch_page(nav.PAGE_BY_NAME["playground"].file).run()
    times = []
    for r in range(repeats + 1):
        at.text_input(key=state.SCENARIO.tokens).input(sentence(n, r))
        t0 = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - t0)
        assert not at.exception, at.exception
    return statistics.median(times[1:]) * 1e3


def page_rerun_ms(path: str, repeats: int = 5) -> float:
    """A page's rerun after a seed change: new random numbers, so every cached result is recomputed."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page(path).run()
    times = []
    for r in range(repeats + 1):
        at.number_input(key=state.setting_widget("seed")).set_value(100 + r)
        t0 = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - t0)
        assert not at.exception, at.exception
    return statistics.median(times[1:]) * 1e3


def training_times() -> list[tuple[str, str, float, float]]:
    """Training time and held-out token accuracy of each seq2seq task (seed 0, page defaults)."""
    from core import seq2seq

    out = []
    for task, att in (("copy", "additive"), ("copy", "dot"), ("copy", "none"), ("reverse", "additive"),
                      ("translate", "additive")):
        m = seq2seq.train(seq2seq.Config(task=task, attention=att), seed=0)
        out.append((task, att, m.seconds, m.accuracy))
    return out


def seq2seq_rerun_ms(repeats: int = 5) -> float:
    """The seq2seq page's rerun once its model is trained (a new input each time)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    at.switch_page(nav.PAGE_BY_NAME["seq2seq"].file).run()  # opens on the shipped model: nothing to train
    times = []
    for r in range(repeats + 1):
        at.text_input(key=state.SEQ2SEQ.input).input(" ".join("abcdefgh"[(r + i) % 8] for i in range(6)))
        t0 = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - t0)
        assert not at.exception, at.exception
    return statistics.median(times[1:]) * 1e3


def experiment_ms(repeats: int = 5) -> float:
    import core

    times = []
    for r in range(repeats):
        t0 = time.perf_counter()
        core.experiments.scaling_experiment(seed=r)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def bare_rerun_ms(repeats: int = 7) -> float:
    at = AppTest.from_file(str(ROOT / "bench" / "bare_app.py"), default_timeout=60).run()
    times = []
    for r in range(repeats + 1):
        at.text_input(key="text").input(sentence(8, r))
        t0 = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times[1:]) * 1e3


def _serve(script: str):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", script, "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read().strip() == b"ok":
                return proc, url
        except OSError:
            time.sleep(0.3)
    proc.terminate()
    raise RuntimeError(f"server for {script} did not start")


# true once the weights and the output heatmaps both show M rows (values live on the component root)
_KEYS = [state.css_class(state.item(state.PLAYGROUND.pipeline, s))[len(".st-key-"):] for s in ("weights", "output")]
_Z_LEN = (f"{_KEYS}.every(key => {{"
          " const host = document.querySelector('.st-key-' + key + ' [data-testid=stBidiComponentIsolated]');"
          " const root = host && host.shadowRoot && host.shadowRoot.querySelector('.alhm');"
          " return root && root.dataset.z && JSON.parse(root.dataset.z).length === M; })")


def _median_round_trip(page, box, repeats: int, sizes, done: str) -> float:
    """Median time from Enter to ``done(n)`` being true, after one discarded warm-up change."""
    times = []
    for r in range(repeats + 1):
        n = sizes(r)
        box.fill(sentence(n, r))
        t0 = time.perf_counter()
        box.press("Enter")
        page.wait_for_function(done, arg=n, timeout=60_000)
        times.append(time.perf_counter() - t0)
        page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]')
        time.sleep(0.3)  # let the page settle before the next change
    return statistics.median(times[1:]) * 1e3


def browser_ms(repeats: int = 9) -> dict:
    """Enter → updated output in a real browser: bare page, floor page, playground at n = 8 and 64."""
    from playwright.sync_api import sync_playwright

    exe = os.environ.get("CHROMIUM") or shutil.which("chromium")
    servers = {name: _serve(script) for name, script in
               (("bare", "bench/bare_app.py"), ("floor", "bench/floor_app.py"),
                                     ("skeleton", "bench/skeleton_app.py"), ("app", "app.py"))}
    echo = "(n) => document.body.innerText.includes('echo: ' + n + ' words')"
    out = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 2400})
            for name in ("bare", "floor", "skeleton"):
                page.goto(servers[name][1])
                page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]')
                box = page.locator("input[aria-label='text']")
                out[name] = _median_round_trip(page, box, repeats, lambda r: 8 + r, echo)
            for n in (8, 64):
                page.goto(f"{servers['app'][1]}/Playground?emb=random&qkv=projection&causal=1&tok=a+b+c")
                page.wait_for_function("(M) => " + _Z_LEN, arg=3, timeout=60_000)  # the default example
                box = page.locator(state.css_class(state.SCENARIO.tokens) + " input")
                sizes = lambda r, n=n: n - (r % 2)  # noqa: E731 (alternate n and n−1: every change shows)
                out[n] = _median_round_trip(page, box, repeats, sizes, "(M) => " + _Z_LEN)
            browser.close()
    finally:
        for proc, _ in servers.values():
            proc.terminate()
    return out


def main() -> None:
    print(f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}")
    bare = bare_rerun_ms()
    print("\n| server-side rerun (AppTest, token change) | median | × bare page |\n|---|---|---|")
    print(f"| bare one-widget page | {bare:.0f} ms | 1.0× |")
    for n in (8, 64, 256):
        ms = server_rerun_ms(n, repeats=5 if n < 256 else 3)
        print(f"| playground, n = {n} | {ms:.0f} ms | {ms / bare:.1f}× |")
    print("\n| server-side rerun after a seed change (default sizes) | median | target |\n|---|---|---|")
    print(f"| √d_k experiment alone (core.experiments.scaling_experiment, 11 sizes) | {experiment_ms():.0f} ms | ≤ 300 ms |")
    for name in ("playground", "notations", "score_functions", "masks", "multi_head", "self_vs_cross", "position",
                 "transformer_block", "vision_transformer"):
        print(f"| {name} | {page_rerun_ms(nav.PAGE_BY_NAME[name].file):.0f} ms | ≤ 300 ms |")
    print(f"| seq2seq (shipped model, new input) | {seq2seq_rerun_ms():.0f} ms | ≤ 300 ms |")
    print("\n| seq2seq training (400 steps, batch 64, seed 0) | time | token accuracy | target |\n|---|---|---|---|")
    for task, att, sec, acc in training_times():
        print(f"| {task}, attention: {att} | {sec:.1f} s | {100 * acc:.1f} % | ≤ 20 s |")
    if shutil.which("chromium") or os.environ.get("CHROMIUM"):
        b = browser_ms()
        sk = b["skeleton"]
        print("\n| browser round trip (Enter → …) | median | × bare page | × skeleton page | target |\n|---|---|---|---|---|")
        print(f"| bare one-widget page: echo updated | {b['bare']:.0f} ms | 1.0× | {b['bare'] / sk:.2f}× | |")
        print(f"| floor page (five 8×8 heatmaps, no computation): echo updated | {b['floor']:.0f} ms | "
              f"{b['floor'] / b['bare']:.2f}× | {b['floor'] / sk:.2f}× | |")
        print(f"| skeleton page (the Playground's controls, one pipeline chart, no computation): echo updated | "
              f"{sk:.0f} ms | {sk / b['bare']:.2f}× | 1.0× | |")
        for n, target in ((8, 1.5), (64, 2.0)):
            ratio = b[n] / sk
            print(f"| playground, n = {n}: weights and output heatmaps updated | {b[n]:.0f} ms | "
                  f"{b[n] / b['bare']:.2f}× | {ratio:.2f}× | ≤ {target}× skeleton: {'met' if ratio <= target else 'not met'} |")
    else:
        print("\n(no Chromium: browser round trip not measured)")


if __name__ == "__main__":
    main()

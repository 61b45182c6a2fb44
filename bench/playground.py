"""Page benchmarks: ``python -m bench.playground`` (prints Markdown for BENCHMARKS.md).

1. Server-side rerun (bench/reruns.py, in a process of its own): AppTest runs the real page
   script after a token change at n = 8, 64, 256 tokens (random embeddings, projections, causal
   mask), and every page after a seed change; a bare one-widget page gives the framework's floor.
   ``--before REV`` measures a worktree of an older commit in the same run, alternating with now.
2. Browser round trip: a real `streamlit run` server and headless Chromium; the time from
   pressing Enter in the token box to the weights and output heatmaps holding the new shape
   at n = 8 and 64, next to the bare page's Enter → updated
   text, a floor page that draws five heatmaps with the same renderer and no computation, and
   a skeleton page with the Playground's controls and one pipeline chart (bench/skeleton_app.py).
3. Seq2seq training time and accuracy per task.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import serve
from ui import state

ROOT = Path(__file__).resolve().parents[1]


def sentence(n: int, salt: int) -> str:
    return " ".join(f"w{salt}_{i}" for i in range(n))


def training_times() -> list[tuple[str, str, float, float]]:
    """Training time and held-out token accuracy of each seq2seq task (seed 0, page defaults)."""
    from core import seq2seq

    out = []
    for task, att in (("copy", "additive"), ("copy", "dot"), ("copy", "none"), ("reverse", "additive"),
                      ("translate", "additive")):
        m = seq2seq.train(seq2seq.Config(task=task, attention=att), seed=0)
        out.append((task, att, m.seconds, m.accuracy))
    return out


# true once the weights and the output heatmaps both show M rows (values live on the map's root,
# a component of its own or a panel of the pipeline's one component)
_KEYS = [state.css_class(state.item(state.PLAYGROUND.pipeline, s))[len(".st-key-"):] for s in ("weights", "output")]
FIND_JS = ("const find = (key) => {"
         " const host = document.querySelector('.st-key-' + key + ' [data-testid=stBidiComponentIsolated]');"
         " if (host && host.shadowRoot) return host.shadowRoot.querySelector('.alhm');"
         " for (const h of document.querySelectorAll('[data-testid=stBidiComponentIsolated]')) {"
         "  const r = h.shadowRoot && h.shadowRoot.querySelector('.panel.st-key-' + key + ' .alhm'); if (r) return r; }"
         " return null; };")
_Z_LEN = (f"{{ {FIND_JS} return {_KEYS}.every(key => {{ const root = find(key);"
          " return root && root.dataset.z && JSON.parse(root.dataset.z).length === M; }); }")


def _round_trips(page, box, repeats: int, sizes, done: str, salt: int = 0) -> list[float]:
    """Times (ms) from Enter to ``done(n)`` being true, after one discarded warm-up change."""
    times = []
    for r in range(repeats + 1):
        n = sizes(r)
        box.fill(sentence(n, r + 100 * salt))
        t0 = time.perf_counter()
        box.press("Enter")
        page.wait_for_function(done, arg=n, timeout=60_000)
        times.append(time.perf_counter() - t0)
        page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]')
        time.sleep(0.3)  # let the page settle before the next change
    return [t * 1e3 for t in times[1:]]


def browser_ms(repeats: int = 9, rounds: int = 3) -> dict[str, list[list[float]]]:
    """Enter → updated output in a real browser: bare, floor and skeleton pages, the Playground at
    n = 8 and 64. The pages take turns, ``rounds`` times (a busy moment of the machine then falls
    on all of them); each round is ``repeats`` changes. Returns each page's times, round by round."""
    from playwright.sync_api import sync_playwright

    exe = serve.chromium()
    servers = {name: serve.start(script) for name, script in
               (("bare", "bench/bare_app.py"), ("floor", "bench/floor_app.py"),
                ("skeleton", "bench/skeleton_app.py"), ("app", "app.py"))}
    echo = "(n) => document.body.innerText.includes('echo: ' + n + ' words')"
    out: dict = {name: [] for name in ("bare", "floor", "skeleton", 8, 64)}
    try:
        for server in servers.values():
            server.wait()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=serve.CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 2400})
            for rnd in range(rounds):
                for name in ("bare", "floor", "skeleton"):
                    page.goto(servers[name].url)
                    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]')
                    box = page.locator("input[aria-label='text']")
                    out[name].append(_round_trips(page, box, repeats, lambda r: 8 + r, echo, rnd))
                for n in (8, 64):
                    page.goto(f"{servers['app'].url}/Playground?emb=random&qkv=projection&causal=1&tok=a+b+c")
                    page.wait_for_function("(M) => " + _Z_LEN, arg=3, timeout=60_000)  # the default example
                    box = page.locator(state.css_class(state.SCENARIO.tokens) + " input")
                    sizes = lambda r, n=n: n - (r % 2)  # noqa: E731 (alternate n and n−1: every change shows)
                    out[n].append(_round_trips(page, box, repeats, sizes, "(M) => " + _Z_LEN, rnd))
            browser.close()
    finally:
        for server in servers.values():
            server.stop()
    return out


LABELS = {"bare": "bare one-widget page, text change", "experiment": "√d_k experiment alone (11 sizes, d = 1 … 1024)",
          "seq2seq": "Seq2seq: a new input (model ready)"}
TARGETS = {"tokens.64": 100.0}  # ms; every seed change: ≤ 300 ms


def reruns(root: Path) -> dict[str, float]:
    """bench/reruns.py against a checkout, in a process of its own (its own imports and caches)."""
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "reruns.py"), str(root)], cwd=root, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def label(name: str) -> str:
    if name.startswith("tokens."):
        return f"Playground: token change, n = {name.split('.')[1]}"
    if name.startswith("seed."):
        return f"{name.split('.', 1)[1].replace('_', ' ')}: seed change"
    return LABELS.get(name, name)


def target(name: str, ms: float) -> str:
    limit = TARGETS.get(name, 300.0 if name.startswith("seed.") or name in ("experiment", "seq2seq") else None)
    return "" if limit is None else f"≤ {limit:.0f} ms: {'met' if ms <= limit else 'NOT met'}"


def server_side(before: str | None, rounds: int) -> None:
    """Every page's server-side rerun now — and, with ``before``, the same script on a worktree of
    that commit, alternating before / now ``rounds`` times in this one run (same machine, same load)."""
    if not before:
        now = reruns(ROOT)
        print("\n| server-side rerun (AppTest, pages kept compiled as a server keeps them) | median | target |\n|---|---|---|")
        for k, v in now.items():
            print(f"| {label(k)} | {v:.0f} ms | {target(k, v)} |")
        return
    tree = Path(tempfile.mkdtemp(prefix="bench-before-")) / "tree"
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), before], cwd=ROOT, check=True, capture_output=True)
    try:
        runs = [(reruns(tree), reruns(ROOT)) for _ in range(rounds)]
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False, capture_output=True)
    print(f"\n| server-side rerun (AppTest, pages kept compiled as a server keeps them) | before ({before}) | now | "
          f"now ÷ before | target |\n|---|---|---|---|---|")
    for k in runs[0][1]:
        b = statistics.median(r[0].get(k, float("nan")) for r in runs)
        n = statistics.median(r[1][k] for r in runs)
        print(f"| {label(k)} | {b:.0f} ms | {n:.0f} ms | {n / b:.2f}× | {target(k, n)} |")


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--before", help="a commit to measure in the same run (server-side reruns), e.g. f1c43a7")
    args.add_argument("--rounds", type=int, default=2, help="before/now alternations (with --before)")
    args.add_argument("--skip", nargs="*", default=[], choices=["server", "training", "browser"])
    args.add_argument("--browser-rounds", type=int, default=3, help="turns of the browser pages (9 changes each)")
    opts = args.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}")
    if "server" not in opts.skip:
        server_side(opts.before, opts.rounds)
    if "training" not in opts.skip:
        print("\n| seq2seq training (400 steps, batch 64, seed 0) | time | token accuracy | target |\n|---|---|---|---|")
        for task, att, sec, acc in training_times():
            print(f"| {task}, attention: {att} | {sec:.1f} s | {100 * acc:.1f} % | ≤ 20 s |")
    if "browser" not in opts.skip:
        browser_table(opts.browser_rounds)


def browser_table(rounds: int = 3) -> None:
    if not serve.chromium():
        print("\n(no Chromium: browser round trip not measured)")
        return
    b = browser_ms(rounds=rounds)
    med = {k: statistics.median([t for r in v for t in r]) for k, v in b.items()}  # over every change of every round
    by_round = {k: [statistics.median(r) for r in v] for k, v in b.items()}
    sk = med["skeleton"]
    print(f"\n{rounds} rounds of 9 changes per page, the pages taking turns; median over all changes, and the "
          "lowest … highest of the rounds' own ratios")
    print("\n| browser round trip (Enter → …) | median | × bare page | × skeleton page | rounds: × skeleton | target |"
          "\n|---|---|---|---|---|---|")

    def spread(k) -> str:
        ratios = [a / s for a, s in zip(by_round[k], by_round["skeleton"], strict=True)]
        return f"{min(ratios):.2f}× … {max(ratios):.2f}×"

    print(f"| bare one-widget page: echo updated | {med['bare']:.0f} ms | 1.0× | {med['bare'] / sk:.2f}× | "
          f"{spread('bare')} | |")
    print(f"| floor page (five 8×8 heatmaps, no computation): echo updated | {med['floor']:.0f} ms | "
          f"{med['floor'] / med['bare']:.2f}× | {med['floor'] / sk:.2f}× | {spread('floor')} | |")
    print(f"| skeleton page (the Playground's controls, one pipeline chart, no computation): echo updated | "
          f"{sk:.0f} ms | {sk / med['bare']:.2f}× | 1.0× | | |")
    for n, goal in ((8, 1.5), (64, 2.0)):
        ratio = med[n] / sk
        print(f"| Playground, n = {n}: weights and output maps updated | {med[n]:.0f} ms | "
              f"{med[n] / med['bare']:.2f}× | {ratio:.2f}× | {spread(n)} | "
              f"≤ {goal}× skeleton: {'met' if ratio <= goal else 'not met'} |")


if __name__ == "__main__":
    main()

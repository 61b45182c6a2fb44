"""Where a browser round trip goes: ``python -m bench.breakdown`` (prints Markdown).

For the skeleton page and the Playground (n = 8 and 64), each change is split into four parts,
timed on one clock (the server and the browser driver run on this machine):

1. Enter → the server receives the rerun request (the browser's own work before it sends);
2. the request → the script run starts (the server's own handling of the request);
3. the script run on the server (from its start to its end, every element sent);
4. the end of the run → the maps (or the skeleton's echo) updated in the browser (the browser
   rendering the messages it received).

The server is a normal ``streamlit run`` whose ``AppSession.handle_backmsg`` and
``ScriptRunner._run_script`` write a timestamp to a log file; nothing else is changed.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from bench import serve
from bench.playground import FIND_JS, sentence
from ui import state

SERVER = '''
import sys, time
log = open(sys.argv[1], "a", buffering=1)
from streamlit.runtime import app_session
from streamlit.runtime.scriptrunner import script_runner
handle = app_session.AppSession.handle_backmsg
def handle_backmsg(self, msg):
    log.write(f"{time.perf_counter():.5f} request\\n")
    return handle(self, msg)
app_session.AppSession.handle_backmsg = handle_backmsg
run = script_runner.ScriptRunner._run_script
def _run_script(self, rerun_data):
    log.write(f"{time.perf_counter():.5f} start\\n")
    try:
        return run(self, rerun_data)
    finally:
        log.write(f"{time.perf_counter():.5f} end\\n")
script_runner.ScriptRunner._run_script = _run_script
from streamlit.web.cli import main
sys.argv = ["streamlit", "run"] + sys.argv[2:]
main()
'''


def instrumented(script: str, log: Path) -> serve.Server:
    """The benches' server (bench/serve.py), started through SERVER (which logs to ``log``)."""
    return serve.start(script, launcher=("-c", SERVER, str(log))).wait()


def parts(log: Path, t_enter: float, t_done: float) -> tuple[float, float, float, float]:
    """(Enter → request, request → script start, script run, end of run → updated) in ms from the
    log lines after Enter."""
    events = [(float(t), what) for t, what in (line.split() for line in log.read_text().splitlines())]
    after = [(t, w) for t, w in events if t >= t_enter]
    request = next(t for t, w in after if w == "request")
    start = next(t for t, w in after if w == "start" and t >= request)
    end = next(t for t, w in after if w == "end" and t >= start)
    return (request - t_enter) * 1e3, (start - request) * 1e3, (end - start) * 1e3, (t_done - end) * 1e3


def measure(page, box, log: Path, sizes, done: str, repeats: int) -> list[tuple[float, ...]]:
    rows = []
    for r in range(repeats + 1):
        n = sizes(r)
        box.fill(sentence(n, r))
        t0 = time.perf_counter()
        box.press("Enter")
        page.wait_for_function(done, arg=n, timeout=60_000)
        t1 = time.perf_counter()
        page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]')
        time.sleep(0.4)
        rows.append(((t1 - t0) * 1e3, *parts(log, t0, t1)))
    return rows[1:]


def main() -> None:
    from playwright.sync_api import sync_playwright

    keys = [state.css_class(state.item(state.PLAYGROUND.pipeline, s))[len(".st-key-"):] for s in ("weights", "output")]
    maps_done = (f"(M) => {{ {FIND_JS} return {keys}.every(key => {{ const root = find(key);"
                 " return root && root.dataset.z && JSON.parse(root.dataset.z).length === M; }); }")
    echo = "(n) => document.body.innerText.includes('echo: ' + n + ' words')"
    tmp = Path(tempfile.mkdtemp(prefix="breakdown-"))
    results = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=serve.chromium() or "/usr/bin/chromium", args=serve.CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 2400})
        for name, script, path, sizes, done in (
                ("skeleton page", "bench/skeleton_app.py", "", lambda r: 8 + r, echo),
                ("Playground, n = 8", "app.py", "/Playground?emb=random&qkv=projection&causal=1&tok=a+b+c",
                 lambda r: 8 - r % 2, maps_done),
                ("Playground, n = 64", "app.py", "/Playground?emb=random&qkv=projection&causal=1&tok=a+b+c",
                 lambda r: 64 - r % 2, maps_done)):
            log = tmp / f"{len(results)}.log"
            server = instrumented(script, log)
            try:
                page.goto(server.url + path)
                page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=60_000)
                time.sleep(2)
                box = page.locator("input[aria-label='text']" if not path else state.css_class(state.SCENARIO.tokens) + " input")
                results[name] = measure(page, box, log, sizes, done, repeats=9)
            finally:
                server.stop()
        browser.close()
    print("\n| Enter → updated (median of 9) | total | Enter → request reaches the server | request → script starts | "
          "script run | end of run → updated in the browser |\n|---|---|---|---|---|---|")
    for name, rows in results.items():
        med = [statistics.median(col) for col in zip(*rows, strict=True)]
        print(f"| {name} | " + " | ".join(f"{m:.0f} ms" for m in med) + " |")


if __name__ == "__main__":
    main()

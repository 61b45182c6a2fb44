"""A class writing at once on the language-model page: ``python -m bench.lm_class --students 1,10,40``
(prints Markdown for BENCHMARKS.md).

For each class size N, a fresh ``streamlit run app.py`` (bench/serve.py) and N websocket clients (bench.classroom's
``Client``: Streamlit's own protocol, no browser). Each student opens the language-model page with a prompt of its
own (greedy, temperature 0, through the page's link); once every page is drawn, all N press "Write up to 16
tokens" within the same moment. The press reruns the page's writing part (a fragment), whose run waits while the
server's batch writes and redraws the text as it grows (a page that reran instead would be rerun again; the student
then reruns it likewise until it shows the finished text). Measured: from the press to the first text drawn and to
the finished text, per student (median, p95, the last);
the server's largest RSS (psutil, every 0.5 s); errors (exceptions, error alerts, timeouts); the batch sizes the
students' captions name (0: a page that names none, as before batching).
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import time
from urllib.parse import urlencode

from attention_lab.strings import LANGS, translate
from bench import serve
from bench.classroom import Client, Monitor, page_url
from ui import state

KEYS = state.LANGUAGE_MODEL
PAGE = page_url("language_model")
N_NEW = 16
POLL = 0.5  # seconds between the fragment's reruns (the page's run_every)
DONE = tuple(translate("lm.batch.ran.alone", lang) for lang in LANGS)
DONE_PREFIX = tuple(translate("lm.batch.ran", lang).split("{b}")[0] for lang in LANGS)
PROMPTS = ("The capital of France is", "Once upon a time, a small robot", "def fibonacci(n):", "My favourite food is",
           "The water cycle begins when", "In 1969, the first people to walk on the Moon")


class Writer(Client):
    """A client that also keeps the text of each run's markdown, by the fragment that drew it."""

    texts: list

    def _delta(self, msg) -> None:
        super()._delta(msg)
        delta = msg.delta
        if delta.WhichOneof("type") != "new_element":
            return
        kind = delta.new_element.WhichOneof("type")
        if kind == "markdown":
            self.__dict__.setdefault("texts", []).append((delta.fragment_id, delta.new_element.markdown.body))
        elif kind == "code":
            self.__dict__.setdefault("texts", []).append(("code", delta.new_element.code.code_text))
            self.__dict__.setdefault("first_text", time.perf_counter())  # the first text this student saw

    async def run_and_read(self, **kwargs):
        self.texts = []
        run = await self.rerun(**kwargs)
        return run, list(self.texts)


WRITTEN = tuple(translate("lm.written", lang).split("{n}") for lang in LANGS)


def finished(texts) -> int | None:
    """The batch size the finished page names (1: written alone; 0: a page that names none, as before batching),
    or None while it is still writing."""
    for where, body in texts:
        if where == "code":
            continue
        if any(body.startswith(a) and body.endswith(b) for a, b in WRITTEN) and not any(
                b.startswith(p) or b in DONE for _, b in texts for p in DONE_PREFIX):
            return 0
        if body in DONE:
            return 1
        for prefix in DONE_PREFIX:
            if body.startswith(prefix):
                return int(body[len(prefix):].split()[0].split("개")[0])
    return None


def prompt(i: int) -> str:
    """Student i's own prompt (a different text for each, so no two requests are equal)."""
    return f"{PROMPTS[i % len(PROMPTS)]} {i}"


async def student(url: str, i: int, go: asyncio.Event, ready: list, timeout: float) -> dict:
    c = Writer(url, timeout)
    await c.connect()
    c.query_string = urlencode({"prompt": prompt(i), "temp": 0, "upto": N_NEW})
    errors = []
    run = await c.rerun(page=PAGE)
    errors += run.errors
    ready.append(i)
    await go.wait()
    press = c.find(KEYS.run)
    c.__dict__.pop("first_text", None)
    t0 = time.perf_counter()
    run, texts = await c.run_and_read(widgets=[(press, "trigger_value", True)], fragment_id=press.fragment_id)
    errors += run.errors
    polls = 0
    while (batch := finished(texts)) is None and not run.errors and time.perf_counter() - t0 < timeout:
        frag = next((f for f, _ in texts if f and f != "code"), "")
        await asyncio.sleep(POLL)
        run, texts = await c.run_and_read(fragment_id=frag)
        errors += run.errors
        polls += 1
    seconds = time.perf_counter() - t0
    await c.close()
    written = [body for where, body in texts if where == "code"]  # the growing text, then the finished one
    first = c.__dict__.get("first_text", t0 + seconds) - t0
    return {"seconds": seconds, "first": first, "batch": batch, "errors": errors, "polls": polls, "prompt": prompt(i),
            "text": written[-1] if written else None, "drawn": written}


async def one_class(n: int, timeout: float) -> dict:
    server = serve.start()
    try:
        server.wait(180)
        mon = Monitor(server.proc.pid)
        mon.start()
        go, ready = asyncio.Event(), []
        tasks = [asyncio.create_task(student(server.ws_url, i, go, ready, timeout)) for i in range(n)]
        deadline = time.monotonic() + timeout
        while len(ready) < n and time.monotonic() < deadline and not any(t.done() for t in tasks):
            await asyncio.sleep(0.1)
        mon.mark("press")
        go.set()
        results = await asyncio.gather(*tasks)
        mon.mark("done")
        await mon.stop()
        return {"n": n, "results": results, "rss": max(s["rss"] for s in mon.samples)}
    finally:
        server.stop()


def row(c: dict) -> str:
    secs = sorted(r["seconds"] for r in c["results"])
    p95 = secs[min(len(secs) - 1, int(round(0.95 * (len(secs) - 1))))]
    errors = sum(len(r["errors"]) for r in c["results"]) + sum(r["batch"] is None for r in c["results"])
    batches = [r["batch"] for r in c["results"] if r["batch"]]
    first = sorted(r["first"] for r in c["results"])
    return (f"| {c['n']} | {statistics.median(first):.1f} / {first[-1]:.1f} s | {statistics.median(secs):.1f} s | "
            f"{p95:.1f} s | {secs[-1]:.1f} s | {max(batches, default=0)} | {c['rss'] / 2**20:,.0f} MB | {errors} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", default="1,10,40", help="class sizes, comma-separated")
    ap.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args()
    print(f"machine: {len(__import__('os').sched_getaffinity(0))} CPUs, python {platform.python_version()}\n")
    print(f"| students writing {N_NEW} tokens at once | first text seen: median / last | done: median | p95 | last done "
          "| largest batch | server RSS (max) | errors |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (int(x) for x in args.students.split(",")):
        print(row(asyncio.run(one_class(n, args.timeout))), flush=True)


if __name__ == "__main__":
    main()

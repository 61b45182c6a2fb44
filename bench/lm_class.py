"""A class writing at once on the language-model page: ``python -m bench.lm_class --students 1,10,40``
(prints Markdown for BENCHMARKS.md).

For each class size N, a fresh ``streamlit run app.py`` (bench/serve.py) and N websocket clients (bench.classroom's
``Client``: Streamlit's own protocol, no browser). Each student opens the language-model page with a prompt of its
own (greedy, temperature 0, through the page's link); once every page is drawn, all N press "Write up to 16
tokens" within the same moment. The press reruns the page's writing part (a fragment), whose run waits while the
server's batch writes and redraws the text as it grows (a page that reran instead would be rerun again; the student
then reruns it likewise until it shows the finished text). Measured: from the press to the first text drawn and to
the finished text, per student (median, p95, the last);
the server's largest RSS (psutil, every 0.5 s) and the largest PSS of the server and its decoding process together
(the weights they share counted once); errors (exceptions, error alerts, timeouts); the batch sizes the
students' captions name (0: a page that names none, as before batching).

``--beside M``: M more students on the same server do the Playground class of ``bench.classroom`` (its students,
actions and think times) all along. They act for QUIET seconds before the press, then on through the burst. Their
p95 (the time of each rerun they send) in the quiet window and in the burst (sent between the press and the last
writer's finished text) shows whether the fair share holds while the class writes.

``--model smollm2|gemma3``: the model the students write with (the page's ``model=`` link parameter; SmolLM2 by
default). ``--both``: before the press, one more student writes one token with the other model, so the server holds
both models and both decoding processes while the class writes (issue 54's memory bound: PSS with both loaded).

``--neighbour spin|stream`` (with ``--beside M``, a diagnostic): no class writes; at the press a plain process
takes one core for NEIGHBOUR_S seconds instead, about as long as the writing beside the Playground lasts. ``spin``
runs the interpreter's loop in its own core's caches; ``stream`` copies through two 256 MB arrays, the memory
traffic of a decoding step with no model. Beside the writing's own ratio, they tell what part of it any busy core
costs on this machine, and what part the memory traffic adds.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import platform
import random
import signal
import statistics
import sys
import threading
import time
from urllib.parse import urlencode

from attention_lab.strings import LANGS, translate
from bench import classroom, serve
from bench.classroom import Client, Monitor, page_url
from ui import state

KEYS = state.LANGUAGE_MODEL
PAGE = page_url("language_model")
N_NEW = 16
POLL = 0.5  # seconds between the fragment's reruns (the page's run_every)
DONE = tuple(translate("lm.batch.ran.alone", lang) for lang in LANGS)
DONE_PREFIX = tuple(translate("lm.batch.ran", lang).split("{b}")[0] for lang in LANGS)
PROMPTS = ("The capital of France is", "Once upon a time, a small robot", "def fibonacci(n):", "My favourite food is",
           "The water cycle begins when", "In 1969, the first people to walk on the Moon")  # --prompts repeated
# what a class types (--prompts distinct, the default): 40 different sentences of 8-17 SmolLM2 tokens, in English, code,
# French, Spanish, German and Korean; a test checks they are distinct and their lengths
CLASS_PROMPTS = (
    "The capital of France is a city where",
    "Once upon a time, a small robot found a",
    "def fibonacci(n): return the sum of",
    "My favourite food is spicy noodles with egg because",
    "The water cycle begins when the sun heats",
    "In 1969, the first people to walk on the Moon were",
    "Photosynthesis in green leaves turns sunlight and water into",
    "A good teacher always asks the whole class to",
    "The quickest way to learn a new language is",
    "Rain fell all night, and in the morning the river",
    "To make a cup of tea, first boil the",
    "The museum opens at nine, so we should leave at",
    "Attention lets each word look at the other words and",
    "Every morning the baker wakes up before dawn to",
    "The train to Busan leaves from Seoul Station at",
    "Our school garden grows tomatoes, beans and",
    "When the computer starts, the first program it runs is",
    "The library is quiet because everyone is reading",
    "A triangle has three sides, and a square has",
    "Dear diary, today I finally understood why",
    "The football match ended in a draw after",
    "import numpy as np\nx = np.arange(10)\nprint(",
    "Bonjour! Je m'appelle Marie et j'habite à",
    "Hola, me llamo Carlos y me gusta mucho",
    "Guten Morgen, heute gehen wir in den",
    "The recipe needs two eggs, a cup of flour and",
    "Mount Everest is the highest mountain, but the deepest",
    "The story ends when the old dragon finally flies",
    "Scientists today believe that the whole universe began about",
    "The best advice my grandmother gave me was",
    "On a clear night you can see the stars and",
    "The orchestra tuned their instruments quietly while the",
    "If you mix blue and yellow paint, you get",
    "The new phone has a larger screen and a battery that",
    "Our class voted to spend the prize money on",
    "The cat sat on the warm windowsill and watched",
    "Learning to ride a bicycle takes patience and",
    "The ancient city was built beside a river that",
    "서울은 한국의",
    "오늘 우리는",
)


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


def prompt(i: int, kind: str = "distinct") -> str:
    """Student i's prompt: "distinct", a sentence of its own (past 40 students, numbered); "repeated", one of six short
    prompts exactly, so students share writings (equal requests are written once)."""
    if kind == "repeated":
        return PROMPTS[i % len(PROMPTS)]
    text = CLASS_PROMPTS[i % len(CLASS_PROMPTS)]
    return text if i < len(CLASS_PROMPTS) else f"{text} ({i})"


async def follow(c: Writer, run, texts, t0: float, timeout: float) -> tuple[int | None, list, int, list]:
    """After the press's run: rerun the writing part until it shows the finished text (a run that ended before)
    → (the batch it names, the last run's texts, reruns, their errors)."""
    polls, errors = 0, []
    while (batch := finished(texts)) is None and not run.errors and time.perf_counter() - t0 < timeout:
        frag = next((f for f, _ in texts if f and f != "code"), "")
        await asyncio.sleep(POLL)
        run, texts = await c.run_and_read(fragment_id=frag)
        errors += run.errors
        polls += 1
    return batch, texts, polls, errors


MODELS = ("smollm2", "gemma3")  # the page's models (ui.compute.LM_MODELS), by the link's name


async def student(url: str, i: int, go: asyncio.Event, ready: list, timeout: float, kind: str = "distinct",
                  model: str = "smollm2") -> dict:
    c = Writer(url, timeout)
    await c.connect()
    c.query_string = urlencode({"prompt": prompt(i, kind), "temp": 0, "upto": N_NEW, "model": model})
    errors = []
    run = await c.rerun(page=PAGE)
    errors += run.errors
    ready.append(i)
    await go.wait()
    press = c.find(KEYS.run)
    c.__dict__.pop("first_text", None)
    t0 = time.perf_counter()
    run, texts = await c.run_and_read(widgets=[(press, "trigger_value", True)], fragment_id=press.fragment_id)
    batch, texts, polls, more = await follow(c, run, texts, t0, timeout)
    errors += run.errors + more
    seconds = time.perf_counter() - t0
    await c.close()
    written = [body for where, body in texts if where == "code"]  # the growing text, then the finished one
    first = c.__dict__.get("first_text", t0 + seconds) - t0
    return {"seconds": seconds, "first": first, "batch": batch, "errors": errors, "polls": polls, "prompt": prompt(i, kind),
            "text": written[-1] if written else None, "drawn": written}


QUIET = 20.0  # seconds the Playground class acts before the press (--beside)


class Beside:
    """M students doing bench.classroom's Playground class on the same server, until stopped."""

    def __init__(self, url: str, m: int, timeout: float):
        self.args = classroom.parse(["--sessions", str(m), "--actions", "100000", "--timeout", str(timeout)])
        self.args.pages_list = list(classroom.DEFAULT_PAGES)
        self.rec = classroom.Recorder()
        rng = random.Random(0)
        self.students = [classroom.Student(i, url, self.args, self.rec, random.Random(rng.random()))
                         for i in range(m)]
        self.url, self.lessons = url, []

    async def start(self) -> None:
        await classroom.warm_up(self.url, self.args, self.rec)
        await asyncio.gather(*(s.open(self.args.ramp * i / len(self.students)) for i, s in enumerate(self.students)))
        far = time.monotonic() + 3600
        self.lessons = [asyncio.create_task(s.lesson(far)) for s in self.students]

    async def stop(self) -> None:
        """Every lesson ended, then every client closed. Cancelled again until they end: a cancel that comes as a
        rerun's ``asyncio.wait_for`` finishes is lost on Python 3.11 (the lesson went on to its next action, for
        up to an hour: the runs that seemed to hang after the writing, BENCHMARKS.md)."""
        pending = set(self.lessons)
        while pending:
            for t in pending:
                t.cancel()
            _, pending = await asyncio.wait(pending, timeout=1.0)
        await asyncio.gather(*(s.client.close() for s in self.students), return_exceptions=True)

    def slowest_by_second(self, a: float, pressed: float, b: float) -> list[tuple[int, float]]:
        """(s, the slowest rerun sent in second s from the press) for every second between a and b with a rerun:
        stalls, where every rerun sent in the same second waits (one student's pass through the lesson alone
        never shows them)."""
        bins: dict[int, float] = {}
        for x in self.reruns(a, b):
            s = math.floor(x[0] - pressed)
            bins[s] = max(bins.get(s, 0.0), x[2])
        return sorted(bins.items())

    def reruns(self, a: float, b: float) -> list[tuple]:
        """The reruns the Playground students sent between a and b (monotonic), as recorded (not their opening)."""
        return [x for x in self.rec.timeline if a <= x[0] <= b and x[1] not in ("open", "warm-up", "harness")]

    def window(self, a: float, b: float) -> dict:
        """The reruns the Playground students sent between a and b (monotonic): how many, p95, errors."""
        runs = self.reruns(a, b)
        return {"n": len(runs), "p95": classroom.pct([x[2] for x in runs], 95) if runs else float("nan"),
                "errors": sum(x[3] for x in runs), "times": [x[2] for x in runs]}


NEIGHBOUR_S = 7.0
NEIGHBOURS = {  # each a program for ``python -c``, taking one core until NEIGHBOUR_S have passed
    "spin": "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end:\n    pass",
    "stream": "import time, numpy as np\na = np.ones(2**25); b = np.empty_like(a)\nend = time.monotonic() + {s}\n"
              "while time.monotonic() < end:\n    np.copyto(b, a)",
}


async def neighbour(kind: str) -> None:
    """One core taken by a ``NEIGHBOURS[kind]`` process until it ends (the Playground students go on)."""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", NEIGHBOURS[kind].format(s=NEIGHBOUR_S),
                                                env={**os.environ, "OMP_NUM_THREADS": "1"})
    if await proc.wait():
        raise RuntimeError(f"the {kind} neighbour failed")


STUCK = 60.0  # seconds after the press: the students not done yet are named on stderr (what each waits for)


async def wait_reporting(tasks: list[asyncio.Task], pressed: float) -> list[dict]:
    """Every student's result; past STUCK seconds, the stack of each one still waiting, once (a stuck run shows
    where it waits; it still ends by the client's own timeout)."""
    _, pending = await asyncio.wait(tasks, timeout=max(0.0, pressed + STUCK - time.monotonic()))
    if pending:
        print(f"{len(pending)} students not done {STUCK:.0f} s after the press:", file=sys.stderr)
        for t in pending:
            t.print_stack(limit=8, file=sys.stderr)
    return await asyncio.gather(*tasks)


def say(what: str) -> None:
    """A step of the run on stderr, with the time (to tell where a run that seems stuck is)."""
    print(f"{time.strftime('%H:%M:%S')} {what}", file=sys.stderr, flush=True)


def dump_tasks() -> None:
    """Every task's stack on stderr (``kill -USR1`` the harness: where each student waits)."""
    for t in asyncio.all_tasks():
        t.print_stack(limit=6, file=sys.stderr)


async def other_model(url: str, model: str, timeout: float) -> None:
    """One student writes one token with ``model``: the server loads it and starts its decoding process."""
    c = Writer(url, timeout)
    await c.connect()
    c.query_string = urlencode({"prompt": "Hello", "temp": 0, "upto": 1, "model": model})
    run = await c.rerun(page=PAGE)
    run, texts = await c.run_and_read(widgets=[(c.find(KEYS.run), "trigger_value", True)],
                                      fragment_id=c.find(KEYS.run).fragment_id)
    batch, _, _, errors = await follow(c, run, texts, time.perf_counter(), timeout)
    await c.close()
    if batch is None or run.errors or errors:
        raise RuntimeError(f"the {model} page did not write: {run.errors + errors}")


async def one_class(n: int, timeout: float, beside: int = 0, hog: str | None = None, kind: str = "distinct",
                    model: str = "smollm2", both: bool = False) -> dict:
    server = serve.start()
    side = None
    if threading.current_thread() is threading.main_thread():  # (a signal handler needs the main thread)
        asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, dump_tasks)
    try:
        server.wait(180)
        mon = Monitor(server.proc.pid, tree=True)
        mon.start()
        go, ready = asyncio.Event(), []
        if both:
            other = next(m for m in MODELS if m != model)
            await other_model(server.ws_url, other, timeout)
            say(f"{other} loaded and written with")
        tasks = [asyncio.create_task(student(server.ws_url, i, go, ready, timeout, kind, model)) for i in range(n)]
        deadline = time.monotonic() + timeout
        while len(ready) < n and time.monotonic() < deadline and not any(t.done() for t in tasks):
            await asyncio.sleep(0.1)
        opened = time.monotonic() - deadline + timeout
        say(f"{len(ready)} of {n} pages drawn in {opened:.1f} s")
        if beside:
            side = Beside(server.ws_url, beside, timeout)
            await side.start()
            say(f"{beside} Playground students started")
            quiet = time.monotonic()
            mon.mark("quiet")
            await asyncio.sleep(QUIET)
        mon.mark("press")
        pressed = time.monotonic()
        go.set()
        say("pressed")
        if hog:
            await neighbour(hog)
        results = await wait_reporting(tasks, pressed) if tasks else []
        done = time.monotonic()
        mon.mark("done")
        await mon.stop()
        out = {"n": n, "results": results, "rss": max(s["rss"] for s in mon.samples),
               "tree": max(s["tree"] for s in mon.samples), "cpu": mon.window("press", "done"),
               "tree_writing": max(s["tree"] for s in mon.samples[mon.marks["press"]:]), "opened": opened}
        if side is not None:
            out["beside"] = {"m": beside, "quiet": side.window(quiet, pressed), "burst": side.window(pressed, done),
                             "quiet_cpu": mon.window("quiet", "press"),
                             "stalls": side.slowest_by_second(quiet, pressed, done)}
        return out
    finally:
        if side is not None:
            await side.stop()
        server.stop()


def row(c: dict) -> str:
    secs = sorted(r["seconds"] for r in c["results"])
    p95 = secs[min(len(secs) - 1, int(round(0.95 * (len(secs) - 1))))]
    errors = sum(len(r["errors"]) for r in c["results"]) + sum(r["batch"] is None for r in c["results"])
    batches = [r["batch"] for r in c["results"] if r["batch"]]
    first = sorted(r["first"] for r in c["results"])
    return (f"| {c['n']} | {statistics.median(first):.1f} / {first[-1]:.1f} s | {statistics.median(secs):.1f} s | "
            f"{p95:.1f} s | {secs[-1]:.1f} s | {max(batches, default=0)} | {c['rss'] / 2**20:,.0f} MB | "
            f"{c['tree'] / 2**20:,.0f} MB ({c['tree_writing'] / 2**20:,.0f} MB from the press) | "
            f"{c['cpu']['server_cpu_s']:.1f} s | {errors} |")


def beside_row(c: dict) -> str:
    b = c["beside"]
    return (f"| {b['m']} | {c['n']} | {b['quiet']['p95']:.2f} s ({b['quiet']['n']} reruns) | "
            f"{b['burst']['p95']:.2f} s ({b['burst']['n']} reruns) | ×{b['burst']['p95'] / b['quiet']['p95']:.1f} | "
            f"{b['quiet_cpu']['server_cores']:.2f} / {c['cpu']['server_cores']:.2f} | "
            f"{b['quiet_cpu']['harness_cores']:.2f} / {c['cpu']['harness_cores']:.2f} | "
            f"{b['quiet']['errors'] + b['burst']['errors']} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", default="1,10,40", help="class sizes, comma-separated")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--beside", type=int, default=0, metavar="M", help="M Playground students on the same server")
    ap.add_argument("--repeat", type=int, default=1, metavar="K", help="each class size K times (a fresh server each)")
    ap.add_argument("--prompts", choices=("distinct", "repeated"), default="distinct",
                    help="distinct: each student a sentence of its own (a class); repeated: six prompts shared")
    ap.add_argument("--model", choices=MODELS, default="smollm2", help="the model the class writes with")
    ap.add_argument("--both", action="store_true", help="the other model loaded and written with before the press")
    ap.add_argument("--neighbour", choices=sorted(NEIGHBOURS), help="with --beside: no class writes; a process "
                    f"takes one core for {NEIGHBOUR_S:.0f} s instead (module docstring)")
    args = ap.parse_args()
    if args.neighbour and not args.beside:
        ap.error("--neighbour needs --beside")
    print(f"machine: {len(os.sched_getaffinity(0))} CPUs, python {platform.python_version()}; prompts: {args.prompts}; "
          f"model: {args.model}{' (both loaded)' if args.both else ''}\n")
    print(f"| students writing {N_NEW} tokens at once | first text seen: median / last | done: median | p95 | last done "
          "| largest batch | server RSS (max) | server + decoding process, PSS (max) | server CPU, press to last done "
          "| errors |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    classes = []
    sizes = [0] if args.neighbour else [int(x) for x in args.students.split(",")]
    for n in (n for n in sizes for _ in range(args.repeat)):
        classes.append(asyncio.run(one_class(n, args.timeout, args.beside, args.neighbour, args.prompts, args.model,
                                             args.both)))
        print(row(classes[-1]) if n else f"| (the {args.neighbour} neighbour) |", flush=True)
    if args.beside:
        print(f"\n| Playground students beside | writing | their p95: {QUIET:.0f} s before the press | during the "
              "writing | ratio | server's cores busy: before / during | this harness's cores: before / during "
              "| their errors |\n|---|---|---|---|---|---|---|---|")
        for c in classes:
            print(beside_row(c))
        print("\nthe slowest Playground rerun sent in each second from the press (s: seconds; a stall shows as a run of "
              "slow seconds, the reruns sent in it all waiting for its end):")
        for c in classes:
            print("- " + " ".join(f"{s:+d}: {v:.1f}" for s, v in c["beside"]["stalls"]))
        if len(classes) > 1:  # one 7-s window holds ~150 reruns: its p95 is the 8th slowest; pooled over the runs
            quiet = [x for c in classes for x in c["beside"]["quiet"]["times"]]
            burst = [x for c in classes for x in c["beside"]["burst"]["times"]]
            ratios = sorted(c["beside"]["burst"]["p95"] / c["beside"]["quiet"]["p95"] for c in classes)
            before, during = classroom.pct(quiet, 95), classroom.pct(burst, 95)
            print(f"\npooled over {len(classes)} runs: p95 {before:.2f} s before ({len(quiet)} reruns), "
                  f"{during:.2f} s during ({len(burst)}): ×{during / before:.1f}"
                  f"; the runs' ratios {', '.join(f'×{r:.1f}' for r in ratios)} (median ×{statistics.median(ratios):.1f})")


if __name__ == "__main__":
    main()

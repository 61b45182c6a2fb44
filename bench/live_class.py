"""A live class on one server: ``python -m bench.live_class --students 40`` (prints Markdown for BENCHMARKS.md).

A fresh ``streamlit run app.py`` (bench/serve.py) on a class store of its own (a temporary SQLite file), one teacher
and N students as websocket clients (bench.classroom's ``Client``: Streamlit's own protocol, no browser). The class
is started, asked and paced through ``attention_lab.live`` (what the dashboard's buttons call); everything the
students and the teacher's dashboard see comes from their own sessions on the server. Each client does what the
browser does with a fragment that has ``run_every``: when the server sends ``auto_rerun`` (interval, fragment id) it
asks for that fragment's rerun at that interval. Phases:

1. **join**: every student opens ``/Class?class=CODE``, types a nickname and presses Join;
2. **idle**: nobody does anything for ``--idle`` seconds while every page checks the class's version: the server's
   CPU (psutil), in % of one core;
3. **follow me**: the teacher sends the class to the Playground; per student, the time until its session switched
   page (the student's page runs again only after its check sees the new version);
4. **ask**: the teacher asks which key gets the most weight (``classes.ask``, what the Ask button calls); per
   student, the time until its page shows the question's answer form (its own check brings it);
5. **answer**: all answer at once through the page's form; per answer, the time from sending it until the teacher's
   dashboard (a session of its own, checking every second) counts it;
6. **reveal**: the teacher reveals the answer (``classes.reveal``); per student, the time until its page draws the
   model's answer ("The model: …"). Issue 57: a reveal reaches the phones as fast as a question does.

Reported: the phases' medians, p95 and maxima, the idle CPU, the server's largest RSS, errors.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import re
import statistics
import tempfile
import time
from pathlib import Path

from attention_lab import tutorial
from attention_lab.live import classes
from attention_lab.live.store import open_store
from bench import serve
from bench.classroom import Client, Monitor, page_url
from ui import state

KEYS = state.LIVE
PAGE, FOLLOW_PAGE = page_url("live_class"), page_url("playground")
COUNTED = re.compile(r"(\d+) of (\d+) students answered")
TRUTH = "The model:"  # how the revealed answer begins on a student's page (assets/i18n/en.live.json, live.truth.*)


class Seat(Client):
    """A client that reruns the fragments the server asks it to rerun (``auto_rerun``), one run at a time, and keeps
    the time each dashboard count was first drawn."""

    def __init__(self, url: str, timeout: float):
        super().__init__(url, timeout)
        self.auto: dict[str, float] = {}  # fragment id → interval
        self.counts: list[tuple[float, int]] = []
        self.truth_at: float | None = None  # when the page first drew the revealed answer
        self.full_runs = 0  # runs of a whole page the server started for this phone (a fragment's run not counted)
        self.lock = asyncio.Lock()

    def _handle(self, msg) -> None:
        kind = msg.WhichOneof("type")
        if kind == "auto_rerun":
            self.auto[msg.auto_rerun.fragment_id] = msg.auto_rerun.interval
        elif kind == "new_session" and not msg.metadata.run.fragment_ids:
            self.auto.clear()  # a full run: the browser drops its timers, and the run sends the ones it draws
            self.full_runs += 1
        elif kind == "stop_auto_rerun":
            for fid in msg.stop_auto_rerun.fragment_ids:
                self.auto.pop(fid, None)
        super()._handle(msg)

    def _delta(self, msg) -> None:
        super()._delta(msg)
        el = msg.delta.new_element if msg.delta.WhichOneof("type") == "new_element" else None
        if el is not None and el.WhichOneof("type") == "markdown" and (m := COUNTED.search(el.markdown.body)):
            self.counts.append((time.monotonic(), int(m.group(1))))
        if el is not None and el.WhichOneof("type") == "alert" and el.alert.body.startswith(TRUTH) and self.truth_at is None:
            self.truth_at = time.monotonic()

    async def act(self, **kw):
        async with self.lock:
            return await self.rerun(**kw)

    async def keep_checking(self, stop: asyncio.Event) -> None:
        """The browser's timer: each fragment the server asked for, rerun at its interval."""
        next_at: dict[str, float] = {}
        while not stop.is_set():
            now = time.monotonic()
            for fid, every in list(self.auto.items()):
                if now >= next_at.setdefault(fid, now + every):
                    next_at[fid] = now + every
                    async with self.lock:
                        await self.rerun(fragment_id=fid)
            await asyncio.sleep(0.05)


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else float("nan")


async def join(url: str, code: str, i: int, timeout: float) -> Seat:
    s = Seat(url, timeout)
    await s.connect()
    s.query_string = f"class={code}&lang=en"
    await s.act(page=PAGE)
    nick, go = s.find(KEYS.nick), s.find(KEYS.send)
    run = await s.act(widgets=[(nick, "string_value", f"student {i}"), (go, "trigger_value", True)])
    s.errors = list(run.errors)
    return s


async def answer(s: Seat, qid: str, choice: int) -> float:
    """Send one answer through the page's form (the radio's value and the form's button) → the time it left."""
    radio = s.find(state.item(KEYS.answer, qid))
    submit = next((w for w in s.widgets.values() if w.kind == "button" and w.proto.is_form_submitter), None)
    if radio is None or submit is None:
        s.errors.append(("no_form", qid))
        return float("nan")
    async with s.lock:
        # a radio's value travels as its option's label, as the browser sends it
        run = await s.rerun(widgets=[(radio, "string_value", radio.proto.options[choice]), (submit, "trigger_value", True)])
    s.errors += run.errors
    return run.sent


async def wait_for(cond, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        await asyncio.sleep(0.05)
    return False


async def arrivals(students: list[Seat], cond, t0: float, seconds: float) -> list[float]:
    """Per student, the seconds from ``t0`` until ``cond(student)`` first held (NaN: not within ``seconds``)."""
    times = [float("nan")] * len(students)
    end = time.monotonic() + seconds
    while time.monotonic() < end and any(t != t for t in times):
        for i, s in enumerate(students):
            if times[i] != times[i] and cond(s):
                times[i] = time.monotonic() - t0
        await asyncio.sleep(0.02)
    return times


@contextlib.contextmanager
def servers(replicas: int, folder: Path):
    """``replicas`` fresh servers on one class store: a SQLite file of its own for one, a redis-server of its own for
    more (what ``ATTN_LAB_STORE=redis://…`` does in the compose and Kubernetes deployments) → (the store's address,
    the servers)."""
    with contextlib.ExitStack() as stack:
        if replicas == 1:
            where = str(folder / "classes.sqlite3")
        else:
            where, redis_proc = serve.start_redis()
            stack.callback(serve.stop, redis_proc)
        yield where, [stack.enter_context(serve.serve(env={"ATTN_LAB_STORE": where}, log=folder / f"server-{i}.log"))
                      for i in range(replicas)]


async def one_class(n: int, idle: float, timeout: float, replicas: int = 1) -> dict:
    """One class of ``n`` students: the teacher on the first server, student i on server i mod ``replicas``."""
    folder = Path(tempfile.mkdtemp(prefix="live-class-"))
    with servers(replicas, folder) as (where, srvs):
        store = open_store(where)
        mons = [Monitor(srv.pid) for srv in srvs]
        for mon in mons:
            mon.start()
        code, key = classes.start(store, time.time())
        teacher = Seat(srvs[0].ws_url, timeout)
        await teacher.connect()
        teacher.query_string = f"class={code}&key={key}&lang=en"
        await teacher.act(page=PAGE)
        students = [await join(srvs[i % replicas].ws_url, code, i, timeout) for i in range(n)]
        stop = asyncio.Event()
        loops = [asyncio.create_task(c.keep_checking(stop)) for c in (teacher, *students)]
        await wait_for(lambda: all(s.auto for s in students), 30)
        marks(mons, "idle0")
        await asyncio.sleep(idle)  # the fact measured is the idle CPU over this window
        marks(mons, "idle1")
        t0 = time.monotonic()
        record = store.record(code)
        store.put_record(code, record | {"follow": {"page": "playground", "query": {}}})
        follow = await arrivals(students, lambda s: s.page == FOLLOW_PAGE, t0, timeout)
        q = classes.question("q1", "top", tutorial.scenario_trace({}, seed=0), 0)
        t0 = time.monotonic()
        classes.ask(store, code, q, time.time())  # takes every student to the class page too
        asked = await arrivals(students, lambda s: s.find(state.item(KEYS.answer, "q1")) is not None, t0, timeout)
        sent = await asyncio.gather(*(answer(s, "q1", i % 4) for i, s in enumerate(students)))
        await wait_for(lambda: teacher.counts and teacher.counts[-1][1] >= n, timeout)
        t0, runs = time.monotonic(), [s.full_runs for s in students]
        classes.reveal(store, code, time.time())
        revealed = await arrivals(students, lambda s: s.truth_at is not None, t0, timeout)
        reveal_runs = [s.full_runs - r for s, r in zip(students, runs, strict=True)]  # the page runs a reveal cost
        stop.set()
        await asyncio.gather(*loops)
        marks(mons, "end")
        for c in (teacher, *students):
            await c.close()
        for mon in mons:
            await mon.stop()
        answers = len(store.answers(code))
        classes.end(store, code)
    order = sorted(t for t in sent if t == t)
    counted = []
    for k, t in enumerate(order, start=1):  # the k-th answer is counted once the dashboard shows ≥ k
        seen = next((at for at, shown in teacher.counts if shown >= k and at >= t), None)
        counted.append(seen - t if seen is not None else float("nan"))
    idle_w = [mon.window("idle0", "idle1") for mon in mons]
    return {"n": n, "replicas": replicas, "follow": follow, "counted": counted, "asked": asked, "revealed": revealed,
            "reveal_runs": reveal_runs,
            "idle_cpu": [w["server_cores"] * 100 for w in idle_w], "idle_s": idle_w[0]["seconds"],
            "rss": [mon.window("idle0", "end")["rss_peak"] for mon in mons],
            "errors": [e for s in students for e in s.errors] + [e for e in getattr(teacher, "errors", [])],
            "answers": answers}


def marks(mons: list[Monitor], name: str) -> None:
    for mon in mons:
        mon.mark(name)


def spread(xs: list[float]) -> str:
    """median / p95 / last of arrival times (a NaN, one that never came, counts as the last)."""
    if any(x != x for x in xs):
        return f"{statistics.median([x for x in xs if x == x]):.2f} / – / never ({sum(x != x for x in xs)})"
    return f"{statistics.median(xs):.2f} / {pct(xs, 0.95):.2f} / {max(xs):.2f} s"


def row(c: dict) -> str:
    f, a = c["follow"], c["counted"]
    cpu = " + ".join(f"{x:.1f}" for x in c["idle_cpu"]) + " %"
    rss = " / ".join(f"{x / 2**20:.0f}" for x in c["rss"]) + " MiB"
    store = "SQLite" if c["replicas"] == 1 else f"{c['replicas']} replicas, Redis"
    return (f"| {store} | {c['n']} | {cpu} | {statistics.median(f):.2f} / {pct(f, 0.95):.2f} / {max(f):.2f} s | "
            f"{statistics.median(a):.2f} / {pct(a, 0.95):.2f} / {max(a):.2f} s | {spread(c['asked'])} | "
            f"{spread(c['revealed'])} | {rss} | "
            f"{c['answers']} | {len(c['errors'])} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--students", type=int, default=40)
    ap.add_argument("--idle", type=float, default=30.0, help="seconds of the idle phase")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--replicas", type=int, default=1,
                    help="servers on one store: 1 (a SQLite file) or more (a redis-server; students spread over them)")
    args = ap.parse_args()
    c = asyncio.run(one_class(args.students, args.idle, args.timeout, max(1, args.replicas)))
    print(f"{platform.node()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}\n")
    print("| store | students | server CPU, idle class (each server) | follow me: median / p95 / last | "
          "answer → dashboard: median / p95 / max | ask → phones: median / p95 / last | reveal → phones | "
          "server RSS (each) | answers kept | errors |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(row(c))
    if c["errors"]:
        print("\nerrors:", c["errors"][:10])


if __name__ == "__main__":
    main()

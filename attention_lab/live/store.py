"""Where a live class is kept: one small interface, two backends. No Streamlit.

A class is three things under its join code, and nothing else: its record (the teacher's key hash, the
pacing, the question on screen, …, a JSON object the teacher's session writes), its students (id →
nickname, join time, the times of their last answers) and its answers ((question, student) → value,
right or wrong, time). Every write bumps the class's **version**, a number a session reads cheaply to
know whether anything changed since it last drew; the teacher's own changes (the record) also bump its
**record version**, which is all a student's page needs to watch (another student's answer changes nothing there).

* :class:`SQLiteStore`: the default, a file (WAL mode: one writer and many readers across threads and
  processes on one machine), a connection per thread.
* :class:`RedisStore`: ``ATTN_LAB_STORE=redis://host:port/db``, for replicas behind a load balancer; every
  key of a class expires with it (``EXPIREAT``), so a class nobody ends is gone after its time to live.

Both behave the same (tests/app/test_live_store.py runs one contract over both, on a real file and a
real ``redis-server``). Nothing of a class lives only in a process's memory.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Protocol

from core.models.paths import app_root

STORE_ENV = "ATTN_LAB_STORE"  # redis://host:port/db, or a SQLite file's path
DATA_ENV = "ATTN_LAB_DATA"  # the folder of the default SQLite file
DEFAULT_DATA = app_root() / "data"  # the checkout's (or the installed app's) data/ folder
SQLITE_NAME = "classes.sqlite3"


class Store(Protocol):
    def create(self, code: str, record: dict, expires: float) -> bool: ...
    def record(self, code: str) -> dict | None: ...
    def put_record(self, code: str, record: dict) -> None: ...
    def version(self, code: str) -> int | None: ...
    def record_version(self, code: str) -> int | None: ...
    def join(self, code: str, sid: str, student: dict) -> None: ...
    def students(self, code: str) -> dict[str, dict]: ...
    def answer(self, code: str, qid: str, sid: str, row: dict) -> None: ...
    def answers(self, code: str) -> list[dict]: ...
    def delete(self, code: str) -> None: ...
    def codes(self, now: float) -> list[str]: ...
    def sweep(self, now: float) -> int: ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS classes (code TEXT PRIMARY KEY, record TEXT NOT NULL, version INTEGER NOT NULL,
                                    expires REAL NOT NULL, rversion INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS students (code TEXT NOT NULL, sid TEXT NOT NULL, student TEXT NOT NULL,
                                     PRIMARY KEY (code, sid));
CREATE TABLE IF NOT EXISTS answers (code TEXT NOT NULL, qid TEXT NOT NULL, sid TEXT NOT NULL, row TEXT NOT NULL,
                                    at REAL NOT NULL, PRIMARY KEY (code, qid, sid));
"""


class SQLiteStore:
    """A class store in one SQLite file (WAL), safe across threads and processes."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        db = self._conn()
        db.executescript(_SCHEMA)
        columns = {row[1] for row in db.execute("PRAGMA table_info(classes)")}
        if "rversion" not in columns:  # a file written before the record's own version
            db.execute("ALTER TABLE classes ADD COLUMN rversion INTEGER NOT NULL DEFAULT 1")

    def _db(self) -> _Tx:
        return _Tx(self._conn())

    def _conn(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=10, isolation_level=None)  # autocommit; BEGIN where needed
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    def create(self, code: str, record: dict, expires: float) -> bool:
        with self._db() as db:
            got = db.execute("INSERT OR IGNORE INTO classes VALUES (?, ?, 1, ?, 1)", (code, json.dumps(record), expires))
            return got.rowcount == 1

    def record(self, code: str) -> dict | None:
        with self._db() as db:
            row = db.execute("SELECT record FROM classes WHERE code = ?", (code,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put_record(self, code: str, record: dict) -> None:
        with self._db() as db:
            db.execute("UPDATE classes SET record = ?, version = version + 1, rversion = rversion + 1 WHERE code = ?",
                       (json.dumps(record), code))

    def version(self, code: str) -> int | None:
        with self._db() as db:
            row = db.execute("SELECT version FROM classes WHERE code = ?", (code,)).fetchone()
        return None if row is None else int(row[0])

    def record_version(self, code: str) -> int | None:
        with self._db() as db:
            row = db.execute("SELECT rversion FROM classes WHERE code = ?", (code,)).fetchone()
        return None if row is None else int(row[0])

    def _bump(self, db, code: str) -> bool:
        return db.execute("UPDATE classes SET version = version + 1 WHERE code = ?", (code,)).rowcount == 1

    def join(self, code: str, sid: str, student: dict) -> None:
        with self._db() as db:
            if self._bump(db, code):
                db.execute("INSERT OR REPLACE INTO students VALUES (?, ?, ?)", (code, sid, json.dumps(student)))

    def students(self, code: str) -> dict[str, dict]:
        with self._db() as db:
            rows = db.execute("SELECT sid, student FROM students WHERE code = ?", (code,)).fetchall()
        return {sid: json.loads(s) for sid, s in rows}

    def answer(self, code: str, qid: str, sid: str, row: dict) -> None:
        with self._db() as db:
            if self._bump(db, code):
                db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?)",
                           (code, qid, sid, json.dumps(row), float(row.get("at", 0.0))))

    def answers(self, code: str) -> list[dict]:
        with self._db() as db:
            rows = db.execute("SELECT qid, sid, row FROM answers WHERE code = ? ORDER BY at", (code,)).fetchall()
        return [{"qid": q, "sid": s, **json.loads(r)} for q, s, r in rows]

    def delete(self, code: str) -> None:
        with self._db() as db:
            for table in ("answers", "students", "classes"):
                db.execute(f"DELETE FROM {table} WHERE code = ?", (code,))  # noqa: S608 — the table names are ours

    def codes(self, now: float) -> list[str]:
        with self._db() as db:
            return [c for (c,) in db.execute("SELECT code FROM classes WHERE expires > ?", (now,)).fetchall()]

    def sweep(self, now: float) -> int:
        """Delete the classes past their time to live (and everything of theirs) → how many."""
        with self._db() as db:
            gone = [c for (c,) in db.execute("SELECT code FROM classes WHERE expires <= ?", (now,)).fetchall()]
        for code in gone:
            self.delete(code)
        return len(gone)

    def count(self, table: str, code: str) -> int:
        """Rows of ``code`` in one table (the tests' proof that an ended class is gone)."""
        if table not in ("classes", "students", "answers"):
            raise ValueError(table)
        with self._db() as db:
            return int(db.execute(f"SELECT COUNT(*) FROM {table} WHERE code = ?", (code,)).fetchone()[0])  # noqa: S608


class _Tx:
    """``with`` a connection: one transaction (BEGIN IMMEDIATE … COMMIT, ROLLBACK on an error)."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind, *_):
        self.db.execute("ROLLBACK" if kind else "COMMIT")


class RedisStore:
    """A class store in Redis: ``al:c:<code>`` (a hash: record, version, expires), ``al:c:<code>:s`` (student id →
    JSON) and ``al:c:<code>:a`` ("question|student" → JSON); every key expires with the class."""

    def __init__(self, url: str):
        import redis  # only when a Redis store is asked for

        self.r = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5)
        self.r.ping()

    @staticmethod
    def _keys(code: str) -> tuple[str, str, str]:
        return f"al:c:{code}", f"al:c:{code}:s", f"al:c:{code}:a"

    def create(self, code: str, record: dict, expires: float) -> bool:
        main, *_ = self._keys(code)
        if not self.r.hsetnx(main, "record", json.dumps(record)):
            return False
        self.r.hset(main, mapping={"version": 1, "rversion": 1, "expires": expires})
        self.r.expireat(main, int(expires) + 1)
        return True

    def record(self, code: str) -> dict | None:
        got = self.r.hget(self._keys(code)[0], "record")
        return None if got is None else json.loads(got)

    def _expires(self, code: str) -> float | None:
        got = self.r.hget(self._keys(code)[0], "expires")
        return None if got is None else float(got)

    def put_record(self, code: str, record: dict) -> None:
        main, *_ = self._keys(code)
        if self.r.exists(main):
            with self.r.pipeline() as p:
                p.hset(main, "record", json.dumps(record)).hincrby(main, "version", 1).hincrby(main, "rversion", 1)
                p.execute()

    def version(self, code: str) -> int | None:
        got = self.r.hget(self._keys(code)[0], "version")
        return None if got is None else int(got)

    def record_version(self, code: str) -> int | None:
        got = self.r.hget(self._keys(code)[0], "rversion")
        return None if got is None else int(got)

    def _write(self, code: str, key: str, field: str, value: dict) -> None:
        expires = self._expires(code)
        if expires is None:
            return
        with self.r.pipeline() as p:
            p.hset(key, field, json.dumps(value)).expireat(key, int(expires) + 1)
            p.hincrby(self._keys(code)[0], "version", 1).execute()

    def join(self, code: str, sid: str, student: dict) -> None:
        self._write(code, self._keys(code)[1], sid, student)

    def students(self, code: str) -> dict[str, dict]:
        return {sid: json.loads(s) for sid, s in self.r.hgetall(self._keys(code)[1]).items()}

    def answer(self, code: str, qid: str, sid: str, row: dict) -> None:
        self._write(code, self._keys(code)[2], f"{qid}|{sid}", row)

    def answers(self, code: str) -> list[dict]:
        rows = []
        for field, value in self.r.hgetall(self._keys(code)[2]).items():
            qid, sid = field.split("|", 1)
            rows.append({"qid": qid, "sid": sid, **json.loads(value)})
        return sorted(rows, key=lambda r: r.get("at", 0.0))

    def delete(self, code: str) -> None:
        self.r.delete(*self._keys(code))

    def codes(self, now: float) -> list[str]:
        out = []
        for key in self.r.scan_iter(match="al:c:*", count=500):
            if key.count(":") == 2 and (self._expires(key[5:]) or 0) > now:
                out.append(key[5:])
        return out

    def sweep(self, now: float) -> int:
        """Redis expires a class's keys itself; a class whose time is up but whose keys linger is deleted."""
        gone = 0
        for key in self.r.scan_iter(match="al:c:*", count=500):
            if key.count(":") == 2 and (exp := self._expires(key[5:])) is not None and exp <= now:
                self.delete(key[5:])
                gone += 1
        return gone

    def count(self, table: str, code: str) -> int:
        """Entries of ``code`` in one part (the tests' proof that an ended class is gone)."""
        main, students, answers = self._keys(code)
        return {"classes": lambda: int(self.r.exists(main)), "students": lambda: self.r.hlen(students),
                "answers": lambda: self.r.hlen(answers)}[table]()


def open_store(where: str | None = None) -> SQLiteStore | RedisStore:
    """The store ``ATTN_LAB_STORE`` names (``redis://…``, or a SQLite file), else ``<ATTN_LAB_DATA>/classes.sqlite3``
    (``ATTN_LAB_DATA`` defaults to the app folder's ``data/``)."""
    where = where if where is not None else os.environ.get(STORE_ENV, "").strip()
    if where.startswith(("redis://", "rediss://", "unix://")):
        return RedisStore(where)
    if where:
        return SQLiteStore(where)
    return SQLiteStore(Path(os.environ.get(DATA_ENV) or DEFAULT_DATA) / SQLITE_NAME)


def now() -> float:
    return time.time()

"""One contract for both class stores, on a real SQLite file and a real redis-server: what is written is
read back, every write bumps the version, ending a class deletes every row and key of it, a class past its
time is gone, and two stores on the same file or server (two replicas) see each other's writes."""

from __future__ import annotations

import threading
import time

import pytest

from attention_lab.live.store import RedisStore, SQLiteStore, open_store

from .servers import start_redis, stop


@pytest.fixture(scope="module")
def redis_url():
    url, proc = start_redis()
    yield url
    stop(proc)


@pytest.fixture(params=["sqlite", "redis"])
def where(request, tmp_path):
    """Where a store lives: a SQLite file's path, or a Redis URL (a fresh database per test)."""
    if request.param == "sqlite":
        return str(tmp_path / "classes.sqlite3")
    url = request.getfixturevalue("redis_url")
    RedisStore(url).r.flushdb()
    return url


def test_open_store_picks_the_backend_from_the_setting(where):
    store = open_store(where)
    assert isinstance(store, RedisStore if where.startswith("redis://") else SQLiteStore)


def test_what_is_written_is_read_back_and_every_write_bumps_the_version(where):
    s = open_store(where)
    assert s.create("ABC234", {"teacher": "h", "x": 1}, expires=2e9)
    assert not s.create("ABC234", {"teacher": "other"}, expires=2e9)  # a code is taken once
    assert s.record("ABC234") == {"teacher": "h", "x": 1}
    assert s.version("ABC234") == 1
    s.put_record("ABC234", {"teacher": "h", "x": 2})
    assert s.record("ABC234")["x"] == 2 and s.version("ABC234") == 2
    assert s.record_version("ABC234") == 2
    s.join("ABC234", "sid-one-1", {"name": "Ada"})
    s.join("ABC234", "sid-two-2", {"name": "<b>Bo</b>"})
    assert s.version("ABC234") == 4
    assert s.record_version("ABC234") == 2  # students joining: not the teacher's change
    assert s.students("ABC234") == {"sid-one-1": {"name": "Ada"}, "sid-two-2": {"name": "<b>Bo</b>"}}
    s.answer("ABC234", "q1", "sid-one-1", {"value": 1, "right": True, "at": 10.0})
    s.answer("ABC234", "q1", "sid-one-1", {"value": 2, "right": False, "at": 11.0})  # the last answer counts
    s.answer("ABC234", "q1", "sid-two-2", {"value": 0, "right": False, "at": 10.5})
    assert s.version("ABC234") == 7 and s.record_version("ABC234") == 2
    assert [(r["sid"], r["value"]) for r in s.answers("ABC234")] == [("sid-two-2", 0), ("sid-one-1", 2)]
    assert s.codes(now=1e9) == ["ABC234"]


def test_writes_to_a_class_that_does_not_exist_change_nothing(where):
    s = open_store(where)
    s.join("NOSUCH", "sid-one-1", {"name": "Ada"})
    s.answer("NOSUCH", "q1", "sid-one-1", {"value": 1, "right": True, "at": 1.0})
    s.put_record("NOSUCH", {"teacher": "h"})
    assert s.version("NOSUCH") is None and s.record("NOSUCH") is None
    assert s.students("NOSUCH") == {} and s.answers("NOSUCH") == []


def test_ending_a_class_deletes_every_row_and_key_of_it(where):
    s = open_store(where)
    for code in ("ABC234", "XYZ789"):
        s.create(code, {"teacher": "h"}, expires=2e9)
        s.join(code, "sid-one-1", {"name": "Ada"})
        s.answer(code, "q1", "sid-one-1", {"value": 1, "right": True, "at": 1.0})
    s.delete("ABC234")
    assert [s.count(part, "ABC234") for part in ("classes", "students", "answers")] == [0, 0, 0]
    assert [s.count(part, "XYZ789") for part in ("classes", "students", "answers")] == [1, 1, 1]
    if isinstance(s, RedisStore):
        assert sorted(s.r.keys("*")) == ["al:c:XYZ789", "al:c:XYZ789:a", "al:c:XYZ789:s"]


def test_a_class_past_its_time_is_swept(where):
    s = open_store(where)
    t0 = time.time()  # Redis drops a key whose EXPIREAT has passed by its own clock: the times are ahead of it
    s.create("OLD234", {"teacher": "h"}, expires=t0 + 1000.0)
    s.create("NEW234", {"teacher": "h"}, expires=t0 + 3000.0)
    s.join("OLD234", "sid-one-1", {"name": "Ada"})
    assert sorted(s.codes(now=t0 + 500.0)) == ["NEW234", "OLD234"]
    assert s.codes(now=t0 + 2000.0) == ["NEW234"]
    assert s.sweep(now=t0 + 2000.0) == 1
    assert s.record("OLD234") is None and s.count("students", "OLD234") == 0
    assert s.record("NEW234") is not None


def test_redis_keys_expire_with_the_class(redis_url):
    s = RedisStore(redis_url)
    s.r.flushdb()
    s.create("TTL234", {"teacher": "h"}, expires=4_000_000_000.0)
    s.join("TTL234", "sid-one-1", {"name": "Ada"})
    s.answer("TTL234", "q1", "sid-one-1", {"value": 1, "right": True, "at": 1.0})
    assert all(s.r.ttl(k) > 0 for k in ("al:c:TTL234", "al:c:TTL234:s", "al:c:TTL234:a"))


def test_two_stores_on_the_same_file_or_server_see_each_others_writes(where):
    """Two replicas: a teacher's store and a student's store, one file or one Redis."""
    teacher, student = open_store(where), open_store(where)
    teacher.create("REP234", {"teacher": "h"}, expires=2e9)
    student.join("REP234", "sid-one-1", {"name": "Ada"})
    student.answer("REP234", "q1", "sid-one-1", {"value": 1, "right": True, "at": 1.0})
    assert teacher.students("REP234") == {"sid-one-1": {"name": "Ada"}}
    assert teacher.version("REP234") == 3


def test_sqlite_takes_answers_from_many_threads_at_once(tmp_path):
    """Forty students answering at once through one server's threads: every answer is kept."""
    s = SQLiteStore(tmp_path / "c.sqlite3")
    s.create("ABC234", {"teacher": "h"}, expires=2e9)
    start = threading.Barrier(40)

    def one(i: int) -> None:
        start.wait()
        s.answer("ABC234", "q1", f"student-{i:02d}", {"value": i % 3, "right": False, "at": float(i)})

    threads = [threading.Thread(target=one, args=(i,)) for i in range(40)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(s.answers("ABC234")) == 40 and s.version("ABC234") == 41


def test_sqlite_survives_a_restart(tmp_path):
    """A server restart: a new store on the same file has the class, its students and its answers."""
    path = tmp_path / "c.sqlite3"
    before = SQLiteStore(path)
    before.create("ABC234", {"teacher": "h"}, expires=2e9)
    before.join("ABC234", "sid-one-1", {"name": "Ada"})
    before.answer("ABC234", "q1", "sid-one-1", {"value": 1, "right": True, "at": 1.0})
    after = SQLiteStore(path)
    assert after.record("ABC234") == {"teacher": "h"} and len(after.answers("ABC234")) == 1


def test_a_file_from_before_the_record_version_opens_and_works(tmp_path):
    """A server upgraded over an older file: the missing column is added, the classes kept."""
    import sqlite3

    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    db.executescript("""CREATE TABLE classes (code TEXT PRIMARY KEY, record TEXT NOT NULL, version INTEGER NOT NULL,
                                           expires REAL NOT NULL);
                        INSERT INTO classes VALUES ('OLD234', '{"teacher": "h"}', 5, 2e9);""")
    db.commit()
    db.close()
    s = SQLiteStore(path)
    assert s.record("OLD234") == {"teacher": "h"} and s.version("OLD234") == 5 and s.record_version("OLD234") == 1
    assert s.create("NEW234", {"teacher": "h"}, expires=2e9)
    s.put_record("OLD234", {"teacher": "h", "x": 1})
    assert s.record_version("OLD234") == 2

"""The upload rules (ui/uploads.py) on Streamlit's own memory file manager: a per-session cap in files
and bytes (the oldest go), files stored for a session the server no longer has are dropped, a sweep frees
every ended session's files, and the counters Streamlit reports stay right."""

from __future__ import annotations

import pytest
from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
from streamlit.runtime.stats import CACHE_MEMORY_FAMILY
from streamlit.runtime.uploaded_file_manager import UploadedFileRec

from ui import uploads

KB = 1024


@pytest.fixture
def mgr(monkeypatch):
    live = {"alice", "bob"}
    monkeypatch.setattr(uploads, "_session_exists", lambda sid: sid in live)
    m = MemoryUploadedFileManager("/_stcore/upload_file")
    m.__class__ = uploads.capped_manager_class(MemoryUploadedFileManager)  # as install() does, in place
    m.live = live
    return m


def rec(i: int, size: int) -> UploadedFileRec:
    return UploadedFileRec(file_id=f"f{i}", name=f"{i}.json", type="application/json", data=b"x" * size)


def held(m) -> tuple[int, int]:
    stats = m.get_stats().get(CACHE_MEMORY_FAMILY, [])
    return m._file_count, sum(s.byte_length for s in stats)


def test_many_files_into_one_session_keep_only_the_newest_within_the_cap(mgr):
    for i in range(500):
        mgr.add_file("alice", rec(i, 700 * KB))
    files = mgr.file_storage["alice"]
    assert len(files) <= uploads.MAX_SESSION_FILES
    assert sum(len(f.data) for f in files.values()) <= uploads.MAX_SESSION_BYTES
    assert "f499" in files and "f0" not in files  # the newest is the one kept
    assert mgr.get_files("alice", ["f499"])[0].name == "499.json"
    assert held(mgr) == (len(files), sum(len(f.data) for f in files.values()))


def test_one_sessions_uploads_do_not_evict_anothers(mgr):
    mgr.add_file("bob", rec(0, 100 * KB))
    for i in range(1, 20):
        mgr.add_file("alice", rec(i, 900 * KB))
    assert list(mgr.file_storage["bob"]) == ["f0"]


def test_a_file_for_an_ended_session_is_not_kept_and_a_sweep_frees_ended_sessions(mgr):
    mgr.add_file("alice", rec(1, 10 * KB))
    mgr.add_file("gone", rec(2, 10 * KB))  # its request was in flight when the session ended
    assert "gone" not in mgr.file_storage
    mgr.add_file("bob", rec(3, 10 * KB))
    mgr.live.discard("alice")  # Streamlit forgot alice's session without shutting it down
    assert uploads.sweep(mgr) == 1
    assert "alice" not in mgr.file_storage and list(mgr.file_storage) == ["bob"]
    assert held(mgr) == (1, 10 * KB)


def test_the_frame_sweeps_at_most_once_per_interval(mgr, monkeypatch):
    monkeypatch.setitem(uploads._swept, "at", float("-inf"))
    mgr.add_file("alice", rec(1, 10 * KB))
    mgr.add_file("bob", rec(2, 10 * KB))
    mgr.live.discard("alice")  # Streamlit forgot alice's session
    assert uploads.sweep_when_due(100.0, mgr) == 1  # due: alice's files go
    mgr.live.discard("bob")
    assert uploads.sweep_when_due(100.0 + uploads.SWEEP_EVERY / 2, mgr) == 0  # not yet: bob's stay
    assert "bob" in mgr.file_storage
    assert uploads.sweep_when_due(100.0 + uploads.SWEEP_EVERY, mgr) == 1
    assert not mgr.file_storage


def test_install_without_a_server_changes_nothing():
    assert uploads.install() is False


def test_the_server_gives_memory_back_with_cores_one_malloc_trim():
    from core.models import plumbing

    assert uploads.give_back_memory is plumbing.give_back_memory

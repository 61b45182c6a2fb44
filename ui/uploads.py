"""Uploaded files: a cap per session, and the files of ended sessions freed (issue 27).

Streamlit keeps every uploaded file in its ``MemoryUploadedFileManager`` until the session that owns
it shuts down, with no bound per session: an upload request names its session, so 500 direct requests
of 1 MB into one session were all kept (+450 MB), and a file whose request was still in flight when
the session shut down was stored after the clean-up, for a session that no longer exists — kept until
the server stops. Freed memory also stayed in the process (glibc keeps freed blocks for reuse).

``install()`` (called by the frame on every run; it acts once per server) gives the server's one
manager these rules, in place, so every holder of it (the upload route, every session) uses them:

- a session keeps at most MAX_SESSION_FILES files and MAX_SESSION_BYTES bytes: a new file beyond
  either drops that session's OLDEST files (the app's uploaders use one file each, the newest);
- a file stored for a session the server no longer has is dropped at once, and each store sweeps
  away the files of every session that has ended;
- after files are freed, the C allocator is asked to give free memory back (``malloc_trim``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time

MAX_SESSION_FILES = 4
MAX_SESSION_BYTES = 3 * 1024 * 1024  # a scenario file (256 KB) and an image (1 MB) with room to replace them
_installed = threading.Lock()

try:
    _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    _TRIM = _LIBC.malloc_trim
except (OSError, AttributeError):  # not glibc (macOS, musl): freeing is Python's own business
    _TRIM = None


def give_back_memory() -> None:
    if _TRIM is not None:
        _TRIM(0)


def _session_exists(session_id: str) -> bool:
    """Whether the server still has this session (connected, or waiting to be resumed)."""
    from streamlit import runtime

    if not runtime.exists():
        return True
    mgr = runtime.get_instance()._session_mgr
    return mgr.get_session_info(session_id) is not None


def capped_manager_class(base: type) -> type:
    """A subclass of Streamlit's memory file manager with the rules above."""

    class CappedUploadedFileManager(base):
        def add_file(self, session_id: str, file) -> None:
            super().add_file(session_id, file)
            freed = False
            with self._lock:
                files = self.file_storage.get(session_id, {})
                while len(files) > MAX_SESSION_FILES or (
                        len(files) > 1 and sum(len(f.data) for f in files.values()) > MAX_SESSION_BYTES):
                    oldest = next(iter(files))  # dicts keep insertion order: the first is the oldest
                    self._total_bytes -= len(files.pop(oldest).data)
                    self._file_count -= 1
                    freed = True
            if not _session_exists(session_id):  # stored after its session ended: nobody can use it
                self.remove_session_files(session_id)
            elif freed:
                give_back_memory()
            sweep(self)

        def remove_session_files(self, session_id: str) -> None:
            super().remove_session_files(session_id)
            give_back_memory()

    return CappedUploadedFileManager


def sweep(mgr=None) -> int:
    """Drop the files of every session the server no longer has (Streamlit forgets a disconnected
    session after ``server.disconnectedSessionTTL`` without shutting it down, so its files stayed);
    returns how many sessions' files were dropped. Cheap: one look-up per session holding files."""
    if mgr is None:
        from streamlit import runtime

        if not runtime.exists():
            return 0
        mgr = runtime.get_instance().uploaded_file_mgr
    storage = getattr(mgr, "file_storage", None)
    if storage is None:
        return 0
    ended = [sid for sid in list(storage) if not _session_exists(sid)]
    for sid in ended:
        mgr.remove_session_files(sid)
    return len(ended)


SWEEP_EVERY = 5.0  # seconds: a server sweeps at most this often (the run of any session that finds it due)
_swept = {"at": float("-inf")}
_sweeping = threading.Lock()


def sweep_when_due(now: float | None = None, mgr=None) -> int:
    """:func:`sweep`, at most once per SWEEP_EVERY seconds on this server (the frame asks on every run)."""
    now = time.monotonic() if now is None else now
    with _sweeping:
        if now - _swept["at"] < SWEEP_EVERY:
            return 0
        _swept["at"] = now
    return sweep(mgr)


def install() -> bool:
    """Give the running server's upload manager the caps (once per server); False without a server."""
    from streamlit import runtime
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

    if not runtime.exists():
        return False
    mgr = runtime.get_instance().uploaded_file_mgr
    if getattr(type(mgr), "capped", False):
        return True
    with _installed:
        if type(mgr) is MemoryUploadedFileManager:
            cls = capped_manager_class(MemoryUploadedFileManager)
            cls.capped = True
            mgr.__class__ = cls  # in place: the upload route and every session hold this very object
    return getattr(type(mgr), "capped", False)

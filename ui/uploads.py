"""Uploaded files: a cap per session, and the files of ended sessions freed (issue 27).

Streamlit keeps every uploaded file in its ``MemoryUploadedFileManager`` until the session that owns
it shuts down, with no bound per session: an upload request names its session, so 500 direct requests
of 1 MB into one session were all kept (+450 MB), and a file whose request was still in flight when
the session shut down was stored after the clean-up, for a session that no longer exists — kept until
the server stops. Freed memory also stayed in the process (glibc keeps freed blocks for reuse).

``install()`` (called by the frame on every run; it acts once per server) gives the server's one
manager these rules, in place, so every holder of it (the upload route, every session) uses them
(Streamlit has no supported way to do it: the manager is internal, reached only through
:mod:`ui.streamlit_internals`, for the one Streamlit version pinned in requirements.txt):

- a session keeps at most MAX_SESSION_FILES files and MAX_SESSION_BYTES bytes: a new file beyond
  either drops that session's OLDEST files (the app's uploaders use one file each, the newest);
- a file stored for a session the server no longer has is dropped at once, and each store sweeps
  away the files of every session that has ended;
- after files are freed, the C allocator is asked to give free memory back (``malloc_trim``).
"""

from __future__ import annotations

import threading
import time

from core.models.plumbing import give_back_memory

from . import streamlit_internals as internals

MAX_SESSION_FILES = 4
MAX_SESSION_BYTES = 3 * 1024 * 1024  # a scenario file (256 KB) and an image (1 MB) with room to replace them


def _session_exists(session_id: str) -> bool:
    """Whether the server still has this session (connected, or waiting to be resumed)."""
    return internals.session_exists(session_id)


def capped_manager_class(base: type) -> type:
    """A subclass of Streamlit's memory file manager with the rules above."""
    return internals.capped_manager_class(
        base, max_files=MAX_SESSION_FILES, max_bytes=MAX_SESSION_BYTES,
        session_exists=lambda sid: _session_exists(sid), freed=give_back_memory, after_add=sweep)


def sweep(mgr=None) -> int:
    """Drop the files of every session the server no longer has (Streamlit forgets a disconnected
    session after ``server.disconnectedSessionTTL`` without shutting it down, so its files stayed);
    returns how many sessions' files were dropped.
    Cheap: one look-up per session holding files."""
    mgr = internals.upload_manager() if mgr is None else mgr
    if mgr is None:
        return 0
    ended = [sid for sid in internals.sessions_with_files(mgr) if not _session_exists(sid)]
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
    return internals.install_manager_class(capped_manager_class)

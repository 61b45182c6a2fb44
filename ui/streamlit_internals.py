"""Every use of Streamlit's internals by the app, in one place, for one pinned Streamlit version (issue #32).

Streamlit offers no supported way to bound what one session may upload: ``server.maxUploadSize`` limits a
single file, and ``st.file_uploader`` sees only the files its own widget names, while the upload route
stores whatever ``PUT /_stcore/upload_file/<session>/<file>`` sends into its in-memory file manager (on
1.67.0, 100 direct requests of 1 MB into one session of a plain app were all kept: 100 MB). The caps of
:mod:`ui.uploads` therefore extend that manager, which is internal: its class, its lock and counters, and
the runtime's session manager. Those names can change in any release, so requirements.txt and
pyproject.toml pin Streamlit exactly, and importing this module on another version fails at once with a
message saying so (tests/app/test_streamlit_internals.py checks that the pin and :data:`EXPECTED_STREAMLIT`
agree, and that no other module of the app reaches an internal).

Upgrading Streamlit: read ``streamlit/runtime/memory_uploaded_file_manager.py`` and
``runtime.py`` / ``websocket_session_manager.py`` of the new version, adjust this module, run
tests/app/test_uploads_cap.py and tests/browser/test_uploads_server.py, then change the pin and
:data:`EXPECTED_STREAMLIT` together.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import streamlit

EXPECTED_STREAMLIT = "1.67.0"  # the version pinned in requirements.txt and pyproject.toml


class UnsupportedStreamlit(RuntimeError):
    """The installed Streamlit is not the version whose internals this module was written against."""


def check_version(version: str | None = None) -> None:
    """Raise :class:`UnsupportedStreamlit` unless ``version`` (the installed Streamlit's) is the pinned one."""
    version = streamlit.__version__ if version is None else version
    if version != EXPECTED_STREAMLIT:
        raise UnsupportedStreamlit(
            f"Attention Lab needs streamlit=={EXPECTED_STREAMLIT} (installed: {version}). Its per-session upload "
            f"caps (ui/uploads.py) extend Streamlit's internal upload manager, which may differ in another "
            f"version. Install the pinned one: pip install -r requirements.txt  (or: pip install "
            f"streamlit=={EXPECTED_STREAMLIT}). To move to a new version, see ui/streamlit_internals.py.")


check_version()  # at start-up: the frame imports this module (through ui.uploads) before anything runs


def upload_manager():
    """The running server's one uploaded-file manager (None without a server)."""
    from streamlit import runtime

    return runtime.get_instance().uploaded_file_mgr if runtime.exists() else None


def session_exists(session_id: str) -> bool:
    """Whether the server still has this session (connected, or waiting to be resumed); True without a server."""
    from streamlit import runtime

    if not runtime.exists():
        return True
    return runtime.get_instance()._session_mgr.get_session_info(session_id) is not None


def sessions_with_files(mgr) -> list[str]:
    """The ids of the sessions the manager holds files for."""
    return list(getattr(mgr, "file_storage", {}))


def capped_manager_class(base: type, *, max_files: int, max_bytes: int,
                         session_exists: Callable[[str], bool], freed: Callable[[], None],
                         after_add: Callable[[object], object] = lambda mgr: None) -> type:
    """A subclass of Streamlit's ``MemoryUploadedFileManager`` (``base``) whose ``add_file`` keeps at most
    ``max_files`` files and ``max_bytes`` bytes per session (dropping that session's OLDEST files), drops a
    file stored for a session that ``session_exists`` no longer finds, calls ``freed()`` after files go and
    ``after_add(manager)`` after each file stored."""

    class CappedUploadedFileManager(base):
        capped = True

        def add_file(self, session_id: str, file) -> None:
            super().add_file(session_id, file)
            dropped = False
            with self._lock:
                files = self.file_storage.get(session_id, {})
                while len(files) > max_files or (
                        len(files) > 1 and sum(len(f.data) for f in files.values()) > max_bytes):
                    oldest = next(iter(files))  # dicts keep insertion order: the first is the oldest
                    self._total_bytes -= len(files.pop(oldest).data)
                    self._file_count -= 1
                    dropped = True
            if not session_exists(session_id):  # stored after its session ended: nobody can use it
                self.remove_session_files(session_id)
            elif dropped:
                freed()
            after_add(self)

        def remove_session_files(self, session_id: str) -> None:
            super().remove_session_files(session_id)
            freed()

    return CappedUploadedFileManager


_installing = threading.Lock()


def install_manager_class(make: Callable[[type], type]) -> bool:
    """Give the running server's upload manager the class ``make(MemoryUploadedFileManager)`` in place (once
    per server: the upload route and every session hold this very object); False without a server or when
    the manager is not Streamlit's memory manager."""
    from streamlit import runtime
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

    if not runtime.exists():
        return False
    mgr = runtime.get_instance().uploaded_file_mgr
    if getattr(type(mgr), "capped", False):
        return True
    with _installing:
        if type(mgr) is MemoryUploadedFileManager:
            mgr.__class__ = make(MemoryUploadedFileManager)
    return getattr(type(mgr), "capped", False)

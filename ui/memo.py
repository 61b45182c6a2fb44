"""A cache bounded by BYTES for the whole server: every cached call of ``ui.compute`` shares it.

``st.cache_data`` bounds entries per function, not memory: 160 reruns of 512-token scenarios filled
~800 MB within its bounds (issue 27). Here every entry is kept as its pickle, so its size is exact
(and a hit returns a fresh copy, as ``st.cache_data`` does: no page can mutate a cached trace);
when the total passes ``SERVER_BYTES`` the least recently used entries of any function go first.
An entry over ``MAX_ENTRY_BYTES`` is computed and returned but never kept.

Use: ``@memo.cached(max_entries=48, ttl=HOUR)`` on a function of hashable-by-value arguments
(numbers, strings, None, numpy arrays, tuples, lists and dicts of them).
"""

from __future__ import annotations

import functools
import hashlib
import pickle
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

SERVER_BYTES = 256 * 1024 * 1024  # every cached result of the server together (pickled bytes)
MAX_ENTRY_BYTES = SERVER_BYTES // 8  # one result larger than this is not kept (32 MB)


@dataclass
class _Entry:
    data: bytes
    fn: str
    expires: float


class ByteCache:
    """A least-recently-used map from keys to pickles, bounded by their total size."""

    def __init__(self, max_bytes: int, max_entry_bytes: int):
        self.max_bytes, self.max_entry_bytes = max_bytes, max_entry_bytes
        self._items: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.total = 0

    def get(self, key: tuple[str, str]) -> bytes | None:
        with self._lock:
            e = self._items.get(key)
            if e is None:
                return None
            if e.expires < time.monotonic():
                self._drop(key)
                return None
            self._items.move_to_end(key)
            return e.data

    def put(self, key: tuple[str, str], data: bytes, ttl: float | None, max_entries: int) -> bool:
        """Keep ``data`` under ``key``; False when it is too large to keep."""
        if len(data) > self.max_entry_bytes:
            return False
        with self._lock:
            if key in self._items:
                self._drop(key)
            self._items[key] = _Entry(data, key[0], time.monotonic() + ttl if ttl else float("inf"))
            self.total += len(data)
            same = [k for k in self._items if k[0] == key[0]]
            for k in same[: max(0, len(same) - max_entries)]:  # the function's own bound, oldest first
                self._drop(k)
            while self.total > self.max_bytes:
                self._drop(next(iter(self._items)))
        return True

    def _drop(self, key) -> None:
        self.total -= len(self._items.pop(key).data)

    def clear(self, fn: str | None = None) -> None:
        with self._lock:
            for k in [k for k in self._items if fn is None or k[0] == fn]:
                self._drop(k)

    def stats(self) -> dict[str, tuple[int, int]]:
        """{function: (entries, bytes)}."""
        out: dict[str, tuple[int, int]] = {}
        with self._lock:
            for k, e in self._items.items():
                n, b = out.get(k[0], (0, 0))
                out[k[0]] = (n + 1, b + len(e.data))
        return out


CACHE = ByteCache(SERVER_BYTES, MAX_ENTRY_BYTES)


def _feed(h, x) -> None:
    """Hash an argument by value (type-tagged, so 1, 1.0, "1" and [1] differ)."""
    if isinstance(x, np.ndarray):
        a = np.ascontiguousarray(x)
        h.update(f"nd{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    elif isinstance(x, (list, tuple)):
        h.update(f"{type(x).__name__}{len(x)}[".encode())
        for v in x:
            _feed(h, v)
        h.update(b"]")
    elif isinstance(x, dict):
        h.update(f"dict{len(x)}{{".encode())
        for k in sorted(x, key=repr):
            _feed(h, k)
            _feed(h, x[k])
        h.update(b"}")
    elif x is None or isinstance(x, (bool, int, float, str, bytes)):
        h.update(f"{type(x).__name__}:{x!r};".encode())
    else:
        raise TypeError(f"memo.cached cannot hash an argument of type {type(x).__name__}")


def key_of(args: tuple, kwargs: dict) -> str:
    h = hashlib.blake2b(digest_size=20)
    _feed(h, list(args))
    _feed(h, kwargs)
    return h.hexdigest()


def cached(*, max_entries: int, ttl: float | None = None) -> Callable:
    """Cache a function's results by the value of its arguments in the server's byte-bounded CACHE,
    at most ``max_entries`` of this function and at most ``ttl`` seconds each. ``f.clear()`` empties it."""

    def wrap(fn: Callable) -> Callable:
        name = f"{fn.__module__}.{fn.__qualname__}"

        @functools.wraps(fn)
        def call(*args, **kwargs):
            key = (name, key_of(args, kwargs))
            data = CACHE.get(key)
            if data is not None:
                return pickle.loads(data)
            result = fn(*args, **kwargs)
            data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
            CACHE.put(key, data, ttl, max_entries)
            return result  # the kept object is the pickle: the caller may change this one

        call.clear = lambda: CACHE.clear(name)  # type: ignore[attr-defined]
        # whether a call with these arguments would be answered from the cache (it computes nothing)
        call.held = lambda *args, **kwargs: CACHE.get((name, key_of(args, kwargs))) is not None  # type: ignore[attr-defined]
        call.max_entries = max_entries  # type: ignore[attr-defined]
        return call

    return wrap

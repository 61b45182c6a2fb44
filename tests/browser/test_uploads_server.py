"""Uploads on a real server (issue 27): one session keeps at most 4 files / 3 MB however many upload
requests it sends, a file sent for a session that has ended is not kept, and the files of a session the
server has forgotten are freed. Driven as an attacker would: Streamlit's own websocket and direct upload
requests with the page's XSRF cookie (no browser)."""

from __future__ import annotations

import asyncio
import re
import time
import urllib.request
import uuid

import pytest
import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench import serve
from ui import uploads

pytestmark = pytest.mark.browser
MB = 1024 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # a closed session is forgotten after 2 s (default 120 s)
    with serve.serve(log=tmp_path_factory.mktemp("uploads") / "server.log", seconds=90,
                     options=["--server.disconnectedSessionTTL", "2"]) as s:
        yield s.url


def upload_bytes(url: str) -> int:
    """The bytes Streamlit's upload manager holds (its own counter in /_stcore/metrics)."""
    text = urllib.request.urlopen(f"{url}/_stcore/metrics", timeout=10).read().decode()
    return sum(int(float(m.group(1))) for m in re.finditer(r'^cache_memory_bytes\{[^}]*UploadedFileManager[^}]*\}\s+(\S+)',
                                                           text, re.M))


async def open_session(url: str) -> tuple[object, str]:
    """A session with one finished run of the Playground: (websocket, session id)."""
    ws = await websockets.connect(url.replace("http", "ws") + "/_stcore/stream", subprotocols=["streamlit"],
                                  max_size=None, open_timeout=60)
    back = BackMsg()
    back.rerun_script.query_string = ""
    back.rerun_script.page_name = "Playground"
    await ws.send(back.SerializeToString())
    sid = ""
    async with asyncio.timeout(120):
        async for raw in ws:
            msg = ForwardMsg()
            msg.ParseFromString(raw)
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                sid = msg.new_session.initialize.session_id
            elif kind == "script_finished" and sid:
                return ws, sid
    raise AssertionError("no run finished")


def xsrf(url: str) -> str:
    """A made-up XSRF token (any well-formed one passes: the cookie and the header only have to agree)."""
    from streamlit.web.server.starlette.starlette_app_utils import generate_xsrf_token_string

    return generate_xsrf_token_string()


def put(url: str, sid: str, token: str, size: int) -> int:
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.json\"\r\n"
            f"Content-Type: application/json\r\n\r\n").encode() + b"x" * size + f"\r\n--{boundary}--\r\n".encode()
    req = urllib.request.Request(f"{url}/_stcore/upload_file/{sid}/{uuid.uuid4()}", data=body, method="PUT",
                                 headers={"Content-Type": f"multipart/form-data; boundary={boundary}",
                                          "X-Xsrftoken": token, "Cookie": f"_streamlit_xsrf={token}"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


def wait_for(predicate, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_one_session_keeps_at_most_the_cap_and_ended_sessions_are_freed(server):
    async def scenario():
        ws, sid = await open_session(server)
        token = xsrf(server)
        statuses = [put(server, sid, token, MB - 4096) for _ in range(12)]  # 12 × ~1 MB into one session
        assert statuses.count(204) == 12, statuses  # accepted (the uploader's own requests look the same)
        held = upload_bytes(server)
        assert 0 < held <= uploads.MAX_SESSION_BYTES, held  # Streamlit alone: ~12 MB
        await ws.close()
        # the session is forgotten after its TTL; the next run of any session sweeps its files away
        ws2, sid2 = await open_session(server)

        def freed() -> bool:
            return upload_bytes(server) == 0

        deadline = time.monotonic() + 60
        while not freed():
            assert time.monotonic() < deadline, f"{upload_bytes(server)} bytes of an ended session still held"
            await ws2.close()
            ws2, sid2 = await open_session(server)  # a new run sweeps (the old session's TTL may not be over yet)
        # a file sent for a session that has ended is not kept
        assert put(server, sid, token, 1000) in (204, 400)
        assert upload_bytes(server) == 0
        assert put(server, sid2, token, 1000) == 204  # a live session still can
        await ws2.close()

    # in a thread of its own: after the other browser tests, Playwright's sync API keeps an event loop
    # running in this one, and asyncio.run refuses to start a second
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, scenario()).result()

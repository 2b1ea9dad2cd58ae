"""`mnem.Client` against a real `mnem serve` (the installed command) over loopback HTTP:
the same methods and typed answers as `Memory`, the API's errors as the same classes."""

import json
import shutil
import socket
import subprocess
import time
import urllib.request

import pytest

import mnem


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def served(tmp_path):
    binary = shutil.which("mnem")
    assert binary, "the wheel puts `mnem` on PATH"
    db = str(tmp_path / "served.db")
    base = [binary, "--db", db, "--embedder", "none"]
    subprocess.run(base + ["team", "create", "t"], check=True, capture_output=True)
    created = subprocess.run(
        base + ["--json", "key", "create", "--team", "t", "--access", "write"],
        check=True,
        capture_output=True,
        text=True,
    )
    key = json.loads(created.stdout)["key"]
    port = _free_port()
    server = subprocess.Popen(
        base + ["serve", "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{url}/", timeout=1).read()
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                pytest.fail("mnem serve did not start")
            time.sleep(0.1)
    yield url, key
    server.terminate()
    server.wait(timeout=10)


def test_the_client_remembers_and_recalls_through_the_server(served):
    url, key = served
    client = mnem.Client(url, key)
    written = client.remember("The staging database lives in Frankfurt")
    recalled = client.recall("where is the staging database")
    assert [r.evidence_id for r in recalled.results] == [written.evidence_id]
    assert recalled.results[0].context == "The staging database lives in Frankfurt"


def test_the_client_imports_a_chat_through_the_streamed_import(served):
    url, key = served
    client = mnem.Client(url, key)
    report = client.import_chat(
        [
            {"role": "user", "content": "Which region hosts staging?"},
            {"role": "assistant", "content": "Staging runs in eu-central."},
        ]
    )
    assert report["stored"] == 2
    result = client.recall("staging region", window=1).results[0]
    assert result.context == "assistant: Staging runs in eu-central."
    assert [i.context for i in result.before] == ["user: Which region hosts staging?"]
    with pytest.raises(mnem.InvalidRequest) as caught:
        client.import_chat([{"role": "user", "content": "x"}], scope="a/b")
    assert caught.value.field == "scope"


def test_the_servers_errors_raise_the_same_classes(served):
    url, key = served
    client = mnem.Client(url, key)
    with pytest.raises(mnem.InvalidRequest) as caught:
        client.recall("anything", limt=3)
    assert caught.value.field == "limt"
    with pytest.raises(mnem.NotFound):
        client.show("01a24800-0000-7000-8000-000000000000")
    with pytest.raises(mnem.Forbidden):
        mnem.Client(url, "mnem_nothere_wrong").recall("anything")


def test_the_async_client_remembers_and_recalls(served):
    import asyncio

    url, key = served

    async def scenario():
        client = mnem.AsyncClient(url, key)
        written = await client.remember("The retro board is in the wiki")
        recalled = await client.recall("where is the retro board")
        assert [r.evidence_id for r in recalled.results] == [written.evidence_id]

    asyncio.run(scenario())


def test_the_langgraph_store_works_over_the_server_too(served):
    from mnem.langgraph import MnemStore

    url, key = served
    store = MnemStore(mnem.Client(url, key))
    store.put(("users", "42"), "prefs", {"drink": "tea"})
    store.put(("users", "42"), "prefs", {"drink": "coffee"})
    assert store.get(("users", "42"), "prefs").value == {"drink": "coffee"}
    assert [i.key for i in store.search(("users",), query="coffee")] == ["prefs"]
    assert store.list_namespaces() == [("users", "42")]
    assert mnem.Client(url, key).scopes() == ["langgraph/users/42"]
    store.delete(("users", "42"), "prefs")
    assert store.get(("users", "42"), "prefs") is None

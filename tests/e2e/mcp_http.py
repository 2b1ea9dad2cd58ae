"""`mnem serve` driven by the official Python MCP SDK over streamable HTTP (a client
nobody here wrote), with real API keys made by the CLI: initialize, list tools, remember,
recall, trace; team isolation; concurrent clients; a read-only key; revocation; the JSON
API beside MCP.

Usage: python mcp_http.py PATH_TO_MNEM   (exits non-zero on the first failed check)
"""

import asyncio
import re
import subprocess
import sys
import tempfile

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from checks import atlas_request, check_tool_list, check, is_error, result_json


class Mnem:
    def __init__(self, binary, db):
        self.binary, self.db = binary, db

    def cli(self, *args):
        out = subprocess.run(
            [self.binary, "--db", self.db, *args], check=True, capture_output=True, text=True
        )
        return out.stdout.strip()

    def key(self, team, profile, scope):
        return self.cli("--team", team, "key", "create", "--profile", profile, "--access", scope)


class Client:
    """One MCP session over HTTP with one API key."""

    def __init__(self, url, key):
        self.url, self.key = url, key

    async def __aenter__(self):
        self.http = create_mcp_http_client(headers={"Authorization": f"Bearer {self.key}"})
        self.stack = [
            self.http,
            streamable_http_client(self.url, http_client=self.http),
        ]
        await self.http.__aenter__()
        read, write = await self.stack[1].__aenter__()
        self.session = ClientSession(read, write)
        await self.session.__aenter__()
        self.init = await self.session.initialize()
        return self

    async def __aexit__(self, *exc):
        await self.session.__aexit__(*exc)
        await self.stack[1].__aexit__(*exc)
        await self.http.__aexit__(*exc)

    async def call(self, tool, arguments):
        return await self.session.call_tool(tool, arguments)


async def run(mnem, base):
    url = f"{base}/mcp"
    alpha = mnem.key("alpha", "agent", "write")
    beta = mnem.key("beta", "agent", "write")
    alpha_reader = mnem.key("alpha", "viewer", "read")

    async with Client(url, alpha) as a:
        info = getattr(a.init, "server_info", None) or getattr(a.init, "serverInfo")
        check(info.name == "mnem", "the server says it is mnem")
        check_tool_list((await a.session.list_tools()).tools)
        outcome = result_json(await a.call("remember", atlas_request()))
        relationship = outcome["relationships"][0]["relationship_id"]
        check(outcome["relationships"][0]["status"] == "active", "the claim is verified and active")
        recalled = result_json(await a.call("recall_memory", {"query": "who works on Atlas"}))
        check(
            [r["context"] for r in recalled["results"]] == ["Mark works on Atlas."],
            "recall returns the evidence",
        )
        trace = result_json(await a.call("trace_memory", {"relationship_id": relationship}))
        check(trace["supports"][0]["quote"] == "Mark works on Atlas", "trace quotes the span")

    async with Client(url, beta) as b:
        recalled = result_json(await b.call("recall_memory", {"query": "who works on Atlas"}))
        check(recalled["results"] == [], "team beta's key recalls nothing of team alpha")
        check(recalled["discovery_paths"] == [], "nor any of alpha's relationships")
        foreign = await b.call("trace_memory", {"relationship_id": relationship})
        check(is_error(foreign) and "not found" in foreign.content[0].text,
              "alpha's relationship does not exist for beta")
        smuggled = await b.call("recall_memory", {"query": "Atlas", "team": "alpha"})
        check(is_error(smuggled), "no tool argument can name a team")

    # Two clients at once, each writing and recalling its own note, interleaved.
    async def own_answers(key, text):
        async with Client(url, key) as client:
            result_json(await client.call("remember", {"evidence": [{"content": text}]}))
            answers = await asyncio.gather(
                *[client.call("recall_memory", {"query": "release codename"}) for _ in range(8)]
            )
            return {tuple(r["context"] for r in result_json(a)["results"]) for a in answers}

    seen_alpha, seen_beta = await asyncio.gather(
        own_answers(alpha, "The release codename is Heron."),
        own_answers(beta, "The release codename is Falcon."),
    )
    check(seen_alpha == {("The release codename is Heron.",)}, "concurrent client alpha gets its own answer")
    check(seen_beta == {("The release codename is Falcon.",)}, "concurrent client beta gets its own answer")

    async with Client(url, alpha_reader) as reader:
        denied = await reader.call("remember", {"evidence": [{"content": "x"}]})
        check(is_error(denied) and "read-only" in denied.content[0].text, "a read-only key cannot write")
        result_json(await reader.call("recall_memory", {"query": "Atlas"}))

    async with httpx2.AsyncClient() as http:
        auth = {"Authorization": f"Bearer {alpha_reader}"}
        api = await http.post(f"{base}/v1/recall", json={"query": "who works on Atlas"}, headers=auth)
        check(api.status_code == 200 and api.json()["results"][0]["context"] == "Mark works on Atlas.",
              "the JSON API answers beside MCP")
        prefix = alpha_reader.split("_")[1]
        wrong_team = subprocess.run([mnem.binary, "--db", mnem.db, "--team", "beta", "key", "revoke", prefix],
                                    capture_output=True, text=True)
        check(wrong_team.returncode != 0, "another team's operator cannot revoke alpha's key")
        mnem.cli("--team", "alpha", "key", "revoke", prefix)
        api = await http.post(f"{base}/v1/recall", json={"query": "Atlas"}, headers=auth)
        check(api.status_code == 401, "a revoked key gets 401 on its next request")
        mcp = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={**auth, "Accept": "application/json, text/event-stream"},
        )
        check(mcp.status_code == 401, "and on /mcp")


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        mnem = Mnem(binary, f"{tmp}/e2e.db")
        mnem.cli("team", "create", "alpha")
        mnem.cli("team", "create", "beta")
        server = subprocess.Popen(
            [binary, "--db", mnem.db, "--embedder", "none", "serve", "--listen", "127.0.0.1:0"],
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            line = server.stderr.readline()
            match = re.search(r"listening on (http://\S+)", line)
            check(match is not None, f"the server started ({line.strip()})")
            asyncio.run(run(mnem, match.group(1)))
        finally:
            server.terminate()
            server.wait(timeout=10)
    print("mcp http e2e: all checks passed")


if __name__ == "__main__":
    main()

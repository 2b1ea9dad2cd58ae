"""mnem's MCP server driven by the official Python MCP SDK (a client nobody here
wrote), over stdio: initialize, list tools, remember, recall, trace, and a tool error.

Usage: python mcp_stdio.py PATH_TO_MNEM   (exits non-zero on the first failed check)
"""

import asyncio
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from checks import atlas_request, check_tool_list, check, result_json


async def run(mnem: str, db: str) -> None:
    server = StdioServerParameters(
        command=mnem, args=["--db", db, "--team", "e2e", "--embedder", "none", "mcp"]
    )
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            info = getattr(init, "server_info", None) or getattr(init, "serverInfo")
            check(info.name == "mnem", "the server says it is mnem")

            check_tool_list((await session.list_tools()).tools)

            outcome = result_json(await session.call_tool("remember", atlas_request()))
            relationship = outcome["relationships"][0]["relationship_id"]
            check(outcome["relationships"][0]["status"] == "active", "the claim is verified and active")

            recalled = result_json(
                await session.call_tool("recall_memory", {"query": "who works on Atlas"})
            )
            check(
                recalled["results"][0]["context"] == "Mark works on Atlas.",
                "recall returns the evidence",
            )
            path_ids = [
                edge["relationship_id"]
                for path in recalled["discovery_paths"]
                for edge in path["relationships"]
            ]
            check(relationship in path_ids, "the relationship is a discovery path")

            trace = result_json(
                await session.call_tool("trace_memory", {"relationship_id": relationship})
            )
            check(trace["supports"][0]["quote"] == "Mark works on Atlas", "trace quotes the span")

            bad = await session.call_tool("recall_memory", {"query": ""})
            is_error = getattr(bad, "is_error", getattr(bad, "isError", False))
            check(is_error and bad.content[0].text.startswith("query:"), "bad input is a tool error naming the field")


def main() -> None:
    mnem = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(mnem, f"{tmp}/e2e.db"))
    print("mcp stdio e2e: all checks passed")


if __name__ == "__main__":
    main()

"""The agent set-up entries in docs/agents.md, started exactly as written, through the
official Python MCP SDK: every JSON `mcpServers` entry and the `claude mcp add` command.

Each client runs with a fresh home directory and `mnem` resolved to the binary under
test, so the entries' `mnem mcp` (no --db) uses the per-user default store: what one
client remembers, the next recalls, and the store is where the doc says.

Usage: python mcp_configs.py PATH_TO_MNEM   (exits non-zero on the first failed check)
"""

import asyncio
import json
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from checks import check, check_tool_list, result_json

DOC = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


def documented_entries(text: str):
    """(where, command, args) for each entry the doc gives."""
    entries = []
    for block in re.findall(r"```json\n(.*?)```", text, re.S):
        server = json.loads(block)["mcpServers"]["mnem"]
        entries.append(("json entry", server["command"], server["args"]))
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.splitlines():
            words = shlex.split(line)
            if words[:3] == ["claude", "mcp", "add"]:
                command = words[words.index("--") + 1 :]
                entries.append(("claude mcp add", command[0], command[1:]))
    return entries


async def use(mnem: str, home: str, command: str, args, note: str, earlier):
    check(command == "mnem", f"the entry runs `mnem` from PATH ({command})")
    env = {"HOME": home, "XDG_DATA_HOME": f"{home}/.local/share", "PATH": os.environ["PATH"]}
    server = StdioServerParameters(command=mnem, args=list(args), env=env)
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            check_tool_list((await session.list_tools()).tools)
            for seen in earlier:
                recalled = result_json(
                    await session.call_tool("recall_memory", {"query": seen, "window": 0})
                )
                contexts = [r["context"] for r in recalled["results"]]
                check(seen in contexts, f"recalls what an earlier client remembered: {seen!r}")
            result_json(await session.call_tool("remember", {"evidence": [{"content": note}]}))


async def run(mnem: str) -> None:
    entries = documented_entries(DOC.read_text())
    kinds = {where for where, _, _ in entries}
    check(kinds == {"json entry", "claude mcp add"}, f"the doc gives both kinds of entry ({kinds})")
    check(len(entries) >= 3, f"Claude Code, Claude Desktop and Cursor: {len(entries)} entries")
    with tempfile.TemporaryDirectory() as home:
        remembered = []
        for n, (where, command, args) in enumerate(entries):
            note = f"set-up note {n} written through the {where}"
            await use(mnem, home, command, args, note, remembered)
            remembered.append(note)
        store = Path(home) / ".local" / "share" / "mnem" / "mnem.db"
        check(store.is_file(), f"the memory is in the documented default store ({store})")


def main() -> None:
    asyncio.run(run(sys.argv[1]))
    print("mcp agent set-up entries: all checks passed")


if __name__ == "__main__":
    main()

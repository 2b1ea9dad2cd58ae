"""What the end-to-end scripts share: the expected tool set, small assertions, the
request they remember, and a running `mnem serve`."""

import contextlib
import json
import socket
import subprocess
import time
import urllib.request

# The tool names are written once, in mnem's operations table (crates/mnem-api), and a Rust
# test ties the MCP tool list to it. What only this client can check is that the official
# SDK reads every tool it is given, so the scripts check that and the tools they call.
USED_TOOLS = {"remember", "recall_memory", "trace_memory"}


def schema_of(tool):
    # The SDK's 2.x models name it input_schema; 1.x named it inputSchema.
    return getattr(tool, "input_schema", None) or getattr(tool, "inputSchema")


def check_tool_list(tools):
    names = {tool.name for tool in tools}
    check(USED_TOOLS <= names, f"the tools these checks call are listed ({sorted(names)})")
    check(
        all(schema_of(tool).get("type") == "object" and tool.description for tool in tools),
        f"the SDK reads all {len(tools)} tools, each with a description and an object schema",
    )
    by_name = {tool.name: tool for tool in tools}

    def hint(name, field, camel):
        hints = by_name[name].annotations
        return getattr(hints, field, getattr(hints, camel, None)) if hints else None

    check(
        all(tool.title for tool in tools)
        and hint("recall_memory", "read_only_hint", "readOnlyHint") is True
        and hint("forget", "destructive_hint", "destructiveHint") is True,
        "every tool has a title, and the SDK reads the read-only and destructive hints",
    )

    def output_schema(name):
        tool = by_name[name]
        return getattr(tool, "output_schema", getattr(tool, "outputSchema", None))

    # The SDK checks each answer of these tools against its schema when it calls them.
    outlined = {"recall_memory", "remember", "trace_memory"}
    check(
        all((output_schema(name) or {}).get("type") == "object" for name in outlined)
        and all(output_schema(name) is None for name in names - outlined),
        "the SDK reads the output schemas of recall_memory, remember and trace_memory",
    )


def check(condition, what):
    if not condition:
        raise SystemExit(f"FAILED: {what}")
    print(f"ok: {what}")


def is_error(result):
    return getattr(result, "is_error", getattr(result, "isError", False))


def result_json(result):
    check(not is_error(result), "tool call succeeded")
    parsed = json.loads(result.content[0].text)
    structured = getattr(result, "structured_content", getattr(result, "structuredContent", None))
    check(structured == parsed, "the result comes as structured content too")
    return parsed


def atlas_request():
    """Evidence and one relationship its span proves: Mark works on Atlas."""
    return {
        "evidence": [{"content": "Mark works on Atlas.", "source": "e2e"}],
        "relationships": [
            {
                "subject": {"name": "Mark", "kind": "person"},
                "predicate": "works_on",
                "object": {"entity": {"name": "Atlas", "kind": "project"}},
                "supports": [{"evidence": 0, "start": 0, "end": 19}],
            }
        ],
    }


@contextlib.contextmanager
def serving(base):
    """`mnem serve` run by the command `base` (the binary and its store flags) on a free
    loopback port, once it answers `/openapi.json`: yields its URL and that document (bytes),
    and stops it on exit."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        base + ["serve", "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        document = None
        for _ in range(300):
            try:
                document = urllib.request.urlopen(f"{url}/openapi.json", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        check(document is not None, "mnem serve answers /openapi.json")
        yield url, document
    finally:
        server.terminate()
        server.wait(timeout=10)

"""What both end-to-end scripts check with: the expected tool set and small assertions."""

import json

EXPECTED_TOOLS = {
    "correct_relationship",
    "forget",
    "recall_memory",
    "remember",
    "retract_evidence",
    "trace_memory",
}


def check(condition, what):
    if not condition:
        raise SystemExit(f"FAILED: {what}")
    print(f"ok: {what}")


def is_error(result):
    return getattr(result, "is_error", getattr(result, "isError", False))


def result_json(result):
    check(not is_error(result), "tool call succeeded")
    return json.loads(result.content[0].text)

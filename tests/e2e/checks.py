"""What both end-to-end scripts share: the expected tool set, small assertions, and the
request they remember."""

import json

EXPECTED_TOOLS = {
    "correct_relationship",
    "export_memory_pack",
    "forget",
    "get_hypothesis",
    "list_hypotheses",
    "recall_memory",
    "release_evidence",
    "remember",
    "resolve_hypothesis",
    "retract_evidence",
    "submit_recall_feedback",
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

"""`/openapi.json` through a code generator nobody here wrote (openapi-python-client, from
PyPI): it must read the document without a warning — except the streamed import, whose
`application/x-ndjson` body it does not generate, by design — and the client it writes
must remember and recall against a real `mnem serve`, parsing the answers into its typed
models.

Usage: python openapi_client.py PATH_TO_MNEM   (exits non-zero on the first failed check)
"""

import importlib
import json
import os
import subprocess
import sys
import tempfile

from checks import check, serving

# What the generator prints about the one endpoint it leaves out on purpose, and the
# header and footer it prints around any warning.
IMPORT_SKIPPED = "WARNING parsing POST /v1/import"
KNOWN = (
    IMPORT_SKIPPED,
    "Unsupported content type application/x-ndjson",
    "Warning(s) encountered while generating",
    "If you believe this was a mistake",
)


def main(binary):
    with tempfile.TemporaryDirectory() as work:
        db = os.path.join(work, "api.db")
        base = [binary, "--db", db, "--embedder", "none"]
        subprocess.run(base + ["team", "create", "gen"], check=True, capture_output=True)
        key = subprocess.run(
            base + ["--team", "gen", "key", "create", "--access", "write"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
        with serving(base) as (url, document):
            spec = os.path.join(work, "openapi.json")
            with open(spec, "wb") as out:
                out.write(document)
            config = os.path.join(work, "generator.json")
            with open(config, "w") as out:
                json.dump({"post_hooks": []}, out)  # no formatter run: not what is tested
            generated = subprocess.run(
                [os.path.join(os.path.dirname(sys.executable), "openapi-python-client"),
                 "generate", "--path", spec, "--output-path", os.path.join(work, "client"),
                 "--meta", "none", "--config", config],
                capture_output=True, text=True,
            )
            printed = generated.stdout + generated.stderr
            if generated.returncode != 0:
                print(printed[-2000:], file=sys.stderr)
            check(generated.returncode == 0, "the generator ran")
            said = [line for line in printed.splitlines()
                    if line.strip() and not any(known in line for known in KNOWN)]
            unexpected = [line for line in said if "warn" in line.lower()
                          or "unable" in line.lower() or "failure" in line.lower()]
            check(unexpected == [], f"the generator reads the document without warnings: {unexpected}")
            check(IMPORT_SKIPPED in printed,
                  "the only endpoint left out is the streamed import")
            sys.path.insert(0, work)
            client_module = importlib.import_module("client")
            remember = importlib.import_module("client.api.default.remember")
            recall = importlib.import_module("client.api.default.recall")
            models = importlib.import_module("client.models")
            client = client_module.AuthenticatedClient(base_url=url, token=key)
            written = remember.sync_detailed(
                client=client,
                body=models.RememberRequest.from_dict(
                    {"evidence": [{"content": "The generated client wrote this note"}]}),
            )
            if written.status_code != 200:
                print(written.content[:500], file=sys.stderr)
            check(written.status_code == 200, "remember through the generated client")
            answer = recall.sync_detailed(
                client=client, body=models.RecallInput.from_dict({"query": "generated client note"}))
            check(answer.status_code == 200, "recall through the generated client")
            results = json.loads(answer.content)["results"]
            check([r["context"] for r in results] == ["The generated client wrote this note"],
                  "the generated client recalls what it remembered")
            # The answers are typed: the client parses them into its generated models.
            parsed = answer.parsed
            check(isinstance(parsed, models.PublicRecall)
                  and [r.context for r in parsed.results] == [r["context"] for r in results],
                  "the recall's answer parses as the generated PublicRecall")
            check(isinstance(written.parsed, models.RememberOutcome)
                  and written.parsed.evidence[0].state.value == "current",
                  "the remember's answer parses as the generated RememberOutcome")
            refused = recall.sync_detailed(
                client=client, body=models.RecallInput.from_dict({"query": "x", "limit": 0}))
            check(refused.status_code == 400 and refused.parsed.error.field == "limit",
                  "a refusal parses as the documented Error with its field")
    print("openapi generated client: all checks passed")


if __name__ == "__main__":
    main(sys.argv[1])

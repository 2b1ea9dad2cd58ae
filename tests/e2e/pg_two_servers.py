"""Two `mnem serve` processes on one PostgreSQL database: what one writes, the other
recalls, by words at once and by meaning once an embedding worker (either server's) has
embedded it; the two workers drain one shared queue. (That no job is claimed twice is
asserted in crates/mnem-postgres/tests/postgres.rs.) Standard library only.

    python3 tests/e2e/pg_two_servers.py MNEM_BINARY POSTGRES_URL
"""

import json
import re
import subprocess
import sys
import time
import urllib.request

FAILURES = []


def check(condition, what):
    print(("ok    " if condition else "FAIL  ") + what, flush=True)
    if not condition:
        FAILURES.append(what)


def cli(binary, url, *args):
    out = subprocess.run(
        [binary, "--database", url, *args], check=True, capture_output=True, text=True
    )
    return out.stdout.strip()


def post(base, path, key, body):
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def start(binary, url):
    server = subprocess.Popen(
        [binary, "--database", url, "serve", "--listen", "127.0.0.1:0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    while True:
        line = server.stderr.readline()
        if not line:
            raise SystemExit("a server exited before listening")
        match = re.search(r"listening on (http://\S+)", line)
        if match:
            return server, match.group(1)


def metric(base, name):
    with urllib.request.urlopen(base + "/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.split()[-1])
    return None


def main():
    binary, url = sys.argv[1], sys.argv[2]
    cli(binary, url, "team", "create", "shared")
    key = cli(binary, url, "--team", "shared", "key", "create", "--access", "write")
    key = re.search(r"mnem_\w+", key).group(0)
    servers = [start(binary, url), start(binary, url)]
    (_, first), (_, second) = servers
    try:
        post(first, "/v1/remember", key, {"evidence": [{"content": "The Atlas launch moved to March 14."}]})
        found = post(second, "/v1/recall", key, {"query": "Atlas launch"})
        check(
            any("March 14" in r["context"] for r in found["results"]),
            "a note written through one server is recalled by words through the other",
        )
        notes = [f"Deployment note {i}: rotated the staging certificates." for i in range(12)]
        for i, note in enumerate(notes):
            post((first, second)[i % 2], "/v1/remember", key, {"evidence": [{"content": note}]})
        post(first, "/v1/remember", key, {"evidence": [{"content": "Priya adores her grey kitten."}]})
        deadline = time.time() + 120
        while time.time() < deadline:
            if metric(second, "mnem_search_pending_documents") == 0:
                break
            time.sleep(0.5)
        check(metric(second, "mnem_search_pending_documents") == 0, "both workers drained the shared queue")
        status = json.loads(cli(binary, url, "--json", "status"))
        current = status["search_freshness"]["current_document_count"]
        check(current == 14, f"all 14 notes embedded: {current} current documents")
        found = post(second, "/v1/recall", key, {"query": "who owns a young cat"})
        check(
            bool(found["results"]) and "kitten" in found["results"][0]["context"],
            "a paraphrase is recalled by meaning through the other server",
        )
    finally:
        for server, _ in servers:
            server.terminate()
            server.wait(timeout=10)
    if FAILURES:
        raise SystemExit(f"{len(FAILURES)} check(s) failed")


if __name__ == "__main__":
    main()

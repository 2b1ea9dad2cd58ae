#!/usr/bin/env python3
"""Crash-and-race checks of the real `mnem` binary on the embedded store, for a reviewer to
run: each case prints PASS or FAIL with what it saw, and the exit code is the number of
failures. Standard library only; every process runs on loopback and temporary files.

    python3 scripts/crash_and_race.py [MNEM_BINARY]     # default target/release/mnem

Cases:
  kill -9 during a chat import   — re-running the import writes exactly what is missing:
                                   nothing lost, nothing twice
  kill -9 during a pack import   — a pack is one transaction: all of it or none, and a
                                   re-run completes it
  kill -9 during embedding       — the pending vectors are made by the next run
  concurrent identical writes    — four CLIs writing one text at once make one item
  a long import beside a server  — the server's writes answer 200 or 503 + Retry-After
                                   (retried), never 500, and every write lands
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

BINARY = sys.argv[1] if len(sys.argv) > 1 else "target/release/mnem"
FAILURES = []


def report(ok, case, detail):
    print(f"{'PASS' if ok else 'FAIL'}  {case}: {detail}", flush=True)
    if not ok:
        FAILURES.append(case)


def command(db, *args, embedder="none"):
    """The argument list of `mnem` on `db` (no embedder unless asked)."""
    return [BINARY, "--db", db, "--embedder", embedder, *args]


def mnem(db, *args, embedder="none", check=True):
    out = subprocess.run(
        command(db, "--json", *args, embedder=embedder), capture_output=True, text=True
    )
    if check and out.returncode != 0:
        raise RuntimeError(f"mnem {' '.join(args)}: exit {out.returncode}: {out.stderr}")
    return out


def chat_file(folder, turns, name="chat.jsonl"):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        for i in range(turns):
            session = f"s{i // 40}"
            f.write(
                json.dumps(
                    {
                        "session": session,
                        "speaker": "Ann" if i % 2 else "Bo",
                        "content": f"turn {i} of session {session} about item {i * 7919 % 10007}",
                        "timestamp": f"2024-01-01T00:{(i // 3600) % 60:02d}:{i % 60:02d}.{i:06d}Z",
                    }
                )
                + "\n"
            )
    return path


def pack_of(folder, turns, name):
    """A memory pack of a chat of `turns` turns, exported from a store of its own."""
    source = os.path.join(folder, f"{name}.db")
    import_report(source, chat_file(folder, turns, f"{name}.jsonl"))
    pack = os.path.join(folder, f"{name}.pack")
    mnem(source, "export", "--output", pack)
    return pack


def import_report(db, path, **kw):
    out = mnem(db, "import", "--format", "chat", path, "--start", "2024-01-01T00:00:00Z", **kw)
    return json.loads(out.stdout)["report"]


def killed_after(args, seconds):
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(seconds)
    process.send_signal(signal.SIGKILL)
    process.wait()


def kill_during_chat_import(folder):
    db = os.path.join(folder, "chat.db")
    path = chat_file(folder, 20_000)
    killed_after(
        command(db, "import", "--format", "chat", path, "--start", "2024-01-01T00:00:00Z"),
        0.8,
    )
    resumed = import_report(db, path)
    again = import_report(db, path)
    ok = (
        resumed["stored"] + resumed["already_stored"] == 20_000
        and again["already_stored"] == 20_000
        and again["stored"] == 0
    )
    report(
        ok,
        "kill -9 during a chat import",
        f"resumed: {resumed['stored']} stored + {resumed['already_stored']} already there; "
        f"a third run stores {again['stored']}",
    )


def kill_during_pack_import(folder):
    pack = pack_of(folder, 20_000, "pack-source")
    target = os.path.join(folder, "pack-target.db")
    killed_after(command(target, "import", pack), 0.5)
    first = json.loads(mnem(target, "import", pack).stdout)
    again = json.loads(mnem(target, "import", pack).stdout)
    whole = first["evidence_added"] + first["evidence_present"] == 20_000
    all_or_none = first["evidence_added"] in (0, 20_000)
    ok = whole and all_or_none and again["evidence_added"] == 0
    report(
        ok,
        "kill -9 during a pack import",
        f"after the kill the re-run added {first['evidence_added']} and found "
        f"{first['evidence_present']}; a third run added {again['evidence_added']}",
    )


def kill_during_embedding(folder):
    db = os.path.join(folder, "embed.db")
    import_report(db, chat_file(folder, 400, "embed-chat.jsonl"))
    killed_after(command(db, "reindex", embedder="builtin"), 1.0)
    # A one-shot command embeds its own team's pending documents for a bounded time;
    # repeat until none are pending (each run resumes where the killed one stopped).
    pending = None
    for _ in range(30):
        mnem(db, "remember", "a write that wakes the embedder", embedder="builtin")
        status = json.loads(mnem(db, "status", embedder="builtin").stdout)
        pending = status["search_freshness"]["pending_document_count"]
        if pending == 0:
            break
    report(pending == 0, "kill -9 during embedding", f"pending vectors afterwards: {pending}")


def concurrent_identical_writes(folder):
    db = os.path.join(folder, "same.db")
    mnem(db, "remember", "warm up the store file")
    processes = [
        subprocess.Popen(
            command(db, "remember", "the gate code is 4512"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    ids = {p.communicate()[0].strip() for p in processes}
    codes = [p.returncode for p in processes]
    ok = len(ids) == 1 and codes == [0, 0, 0, 0]
    report(ok, "concurrent identical writes", f"{len(ids)} distinct id(s), exit codes {codes}")


def post(base, key, path, body):
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            headers = {k.lower(): v for k, v in response.headers.items()}
            return response.status, headers, json.loads(response.read())
    except urllib.error.HTTPError as err:
        headers = {k.lower(): v for k, v in err.headers.items()}
        return err.code, headers, err.read().decode()


def long_import_beside_a_server(folder):
    db = os.path.join(folder, "served.db")
    mnem(db, "remember", "warm up the store file")
    key = json.loads(mnem(db, "key", "create", "--access", "write").stdout)["key"]
    server = subprocess.Popen(
        command(db, "serve", "--listen", "127.0.0.1:0"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = None
        for line in server.stderr:
            if "listening on" in line:
                base = line.split("listening on ")[1].split()[0]
                break
        pack = pack_of(folder, 60_000, "big")
        importer = subprocess.Popen(
            command(db, "import", pack),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        statuses, landed = [], 0
        for i in range(30):
            for _attempt in range(60):
                status, headers, _ = post(
                    base, key, "/v1/remember",
                    {"evidence": [{"content": f"live write {i} beside the import"}]},
                )
                statuses.append(status)
                if status == 503 and "retry-after" in headers:
                    time.sleep(float(headers["retry-after"]))
                    continue
                if status == 200:
                    landed += 1
                break
            time.sleep(0.05)
        importer.wait()
        busy = statuses.count(503)
        ok = landed == 30 and all(s in (200, 503) for s in statuses)
        report(
            ok,
            "a long import beside a server",
            f"{landed}/30 writes landed; answers: {len(statuses)} ({busy} busy 503, "
            f"{sum(1 for s in statuses if s >= 500 and s != 503)} other 5xx)",
        )
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def main():
    if not os.path.exists(BINARY):
        sys.exit(f"no binary at {BINARY}: build it with `cargo build --release` or pass its path")
    with tempfile.TemporaryDirectory() as folder:
        for case in (
            kill_during_chat_import,
            kill_during_pack_import,
            kill_during_embedding,
            concurrent_identical_writes,
            long_import_beside_a_server,
        ):
            try:
                case(folder)
            except Exception as err:  # a case that cannot run is a failure, said plainly
                report(False, case.__name__, f"could not run: {err}")
    sys.exit(len(FAILURES))


if __name__ == "__main__":
    main()

"""Peak memory of `mnem serve` under repeated maximal writes: starts the server on a
fresh store, sends N remember requests of 50 items x 64 KiB (the largest a request may
carry), waits after each until its vectors are written, and prints the server's resident
memory (VmRSS) after each write and its peak (VmHWM) at the end.

Usage: rss_writes.py MNEM_BINARY [N=100]
Standard library only; Linux (/proc).
"""

import json
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.request

ITEMS = 50
ITEM_BYTES = 64 * 1024
WORDS = ("memory evidence recall window budget team profile vector lexical anchor "
         "stamp screening release author conformance backend latency").split()


def rss_kib(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def post(base, key, path, body):
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.load(response)


def pending(base):
    with urllib.request.urlopen(base + "/metrics", timeout=60) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("mnem_search_pending_documents"):
                return float(line.split()[-1])
    return 0.0


def item(rng, n):
    words = []
    size = 0
    while size < ITEM_BYTES - 20:
        word = rng.choice(WORDS)
        words.append(word)
        size += len(word) + 1
    return f"{n} " + " ".join(words)[: ITEM_BYTES - 12]


def main():
    binary = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "rss.db")
        cli = lambda *args: subprocess.run([binary, "--db", db, *args], check=True,
                                           capture_output=True, text=True).stdout
        cli("team", "create", "rss")
        key = cli("--team", "rss", "key", "create", "--profile", "writer",
                  "--access", "write").split()[-1]
        port = 18000 + os.getpid() % 1000
        server = subprocess.Popen([binary, "--db", db, "serve", "--listen",
                                   f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(base + "/health", timeout=1)
                    break
                except OSError:
                    time.sleep(0.2)
            print(f"after start: {rss_kib(server.pid) // 1024} MiB", flush=True)
            samples = []
            for n in range(count):
                batch = [{"content": item(rng, n * ITEMS + i)} for i in range(ITEMS)]
                post(base, key, "/v1/remember", {"evidence": batch})
                while pending(base) > 0:
                    time.sleep(0.1)
                samples.append(rss_kib(server.pid) // 1024)
                if n < 5 or (n + 1) % 10 == 0:
                    print(f"after write {n + 1}: {samples[-1]} MiB", flush=True)
            print(f"peak (VmHWM): {rss_kib(server.pid, 'VmHWM') // 1024} MiB; "
                  f"first write {samples[0]} MiB, last {samples[-1]} MiB, "
                  f"growth over the last {count - 1} writes {samples[-1] - samples[0]} MiB")
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()

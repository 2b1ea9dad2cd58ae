#!/usr/bin/env python3
"""Recall latency of the `mnem` binary on a store of N real conversation turns.

Fills a fresh store with the first N turns of a LongMemEval-S file (--data) through
`mnem remember` (one process per item, as a user would; lexical-only, so the write path
is measured without the embedding model), then times `mnem recall` for the benchmark's
own questions as whole processes. Prints medians; nothing here is a test. In-process
figures, with embeddings, come from `mnem bench`.

    python3 scripts/bench_recall_cli.py --data longmemeval_s_dev.json --items 10000 [--mnem target/release/mnem]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone



def lme_time(text):
    # "2023/05/20 (Sat) 02:21"
    return datetime.strptime(text, "%Y/%m/%d (%a) %H:%M").replace(tzinfo=timezone.utc)


def turns(instances, limit):
    seen = set()
    for inst in instances:
        for sid, date, session in zip(inst["haystack_session_ids"], inst["haystack_dates"], inst["haystack_sessions"]):
            if sid in seen:
                continue
            seen.add(sid)
            base = lme_time(date)
            for i, turn in enumerate(session):
                if not turn["content"].strip():
                    continue
                stamp = base.replace(second=min(i, 59)).strftime("%Y-%m-%dT%H:%M:%SZ")
                yield turn["content"][:60000], stamp, sid
                limit -= 1
                if limit == 0:
                    return


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True, help="a LongMemEval-S json file")
    parser.add_argument("--items", type=int, default=10000)
    parser.add_argument("--mnem", default="target/release/mnem")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--db", help="reuse (or create) this store instead of a temp file")
    args = parser.parse_args()

    instances = json.load(open(args.data))
    db = args.db or os.path.join(tempfile.mkdtemp(), "bench.db")
    existing = os.path.exists(db)
    if not existing:
        start = time.perf_counter()
        for n, (content, stamp, sid) in enumerate(turns(instances, args.items), 1):
            subprocess.run(
                [args.mnem, "--db", db, "--embedder", "none", "remember", content, "--observed-at", stamp,
                 "--source-type", "conversation", "--source", f"lme:{sid}"],
                check=True, stdout=subprocess.DEVNULL)
            if n % 1000 == 0:
                print(f"  ingested {n}", file=sys.stderr)
        elapsed = time.perf_counter() - start
        print(f"ingest: {args.items} items via `mnem remember` in {elapsed:.1f}s "
              f"({args.items / elapsed:.0f} items/s, one process each)")

    questions = [inst["question"] for inst in instances[: args.queries]]
    samples = []
    for q in questions:
        subprocess.run([args.mnem, "--db", db, "--embedder", "none", "recall", q], check=True, stdout=subprocess.DEVNULL)
        for _ in range(args.runs):
            start = time.perf_counter()
            subprocess.run([args.mnem, "--db", db, "--embedder", "none", "--json", "recall", q],
                           check=True, stdout=subprocess.DEVNULL)
            samples.append((time.perf_counter() - start) * 1000)
    noop = []
    for _ in range(args.runs):
        start = time.perf_counter()
        subprocess.run([args.mnem, "--version"], check=True, stdout=subprocess.DEVNULL)
        noop.append((time.perf_counter() - start) * 1000)
    samples.sort()
    print(f"recall ({len(questions)} questions x {args.runs} runs, whole process): "
          f"median {statistics.median(samples):.1f} ms, p90 {samples[int(len(samples) * 0.9)]:.1f} ms")
    print(f"process start only (`mnem --version`): median {statistics.median(noop):.1f} ms")


if __name__ == "__main__":
    main()

"""Full-text top-k side by side: mnem's lexical recall (`mnem serve --embedder none`, the
JSON API over loopback HTTP, window 0, limit 10) against tantivy (the PyPI wheel,
`en_stem`, OR of the query's words, top 10) over the same real conversation turns, in one
run, alternating query by query so both see the same machine noise.

Two query sets per size: the dataset's real questions, and queries drawn from the corpus's
commonest content words (the case exact pruning finds hardest: no term is rare). Prints
p50/p95/p99 per engine and the ratio, plus the bare HTTP round trip (GET /health) so the
transport's share of mnem's number is visible.

Usage: lexical_vs_tantivy.py DATASET [--sizes 10000,100000] [--mnem target/release/mnem]
Needs: a release build; pip install tantivy==0.27.0 (in a venv).
"""

import argparse
import http.client
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter

import tantivy

WORD = re.compile(r"[a-z0-9]+")
# Words too common to make a hard query interesting for either engine (mnem drops them
# from queries; tantivy would search them).
STOP = set(
    "the and for that with this you are have your can but not was what they will from "
    "there their about would which when more some also just like been one other into them "
    "then than these those here were how all any our out has had its may could should".split()
)


def turns(dataset):
    """Unique non-empty turns in file order, capped at 4,000 characters (as
    http_load.py): (session, role, text)."""
    seen = set()
    for instance in json.load(open(dataset)):
        for sid, session in zip(instance["haystack_session_ids"], instance["haystack_sessions"]):
            for turn in session:
                text = turn["content"].strip()[:4000]
                if text and text not in seen:
                    seen.add(text)
                    yield sid, turn["role"], text


def percentiles(values):
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]
    return statistics.median(ordered), pick(0.95), pick(0.99)


def common_queries(texts, count, seed):
    """Queries of 3-5 words drawn from the corpus's 40 commonest content words."""
    documents = Counter()
    for text in texts:
        documents.update({w for w in WORD.findall(text.lower()) if len(w) > 3 and w not in STOP})
    common = [w for w, _ in documents.most_common(40)]
    rng = random.Random(seed)
    return [" ".join(rng.sample(common, rng.randint(3, 5))) for _ in range(count)]


def tantivy_index(texts, path):
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("text", stored=False, tokenizer_name="en_stem")
    schema = builder.build()
    index = tantivy.Index(schema, path=path)
    writer = index.writer(heap_size=256_000_000, num_threads=1)
    for text in texts:
        writer.add_document(tantivy.Document(text=text))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return index


def tantivy_query(index, text):
    # The query parser applies the field's analyzer and ORs the terms; only words are
    # kept so punctuation is never query syntax.
    return index.parse_query(" ".join(WORD.findall(text.lower())) or "nothing", ["text"])


class Server:
    def __init__(self, mnem, db, log):
        env = dict(os.environ, MNEM_DB=db)
        subprocess.run([mnem, "team", "create", "bench"], env=env, check=True, capture_output=True)
        self.key = subprocess.run(
            [mnem, "--team", "bench", "key", "create", "--profile", "load", "--access", "write"],
            env=env, check=True, capture_output=True, text=True,
        ).stdout.strip()
        self.env, self.mnem, self.log = env, mnem, log

    def import_chat(self, path):
        started = time.time()
        subprocess.run(
            [self.mnem, "--embedder", "none", "--team", "bench", "import", "--format", "chat", path],
            env=self.env, check=True, capture_output=True,
        )
        return time.time() - started

    def start(self):
        self.process = subprocess.Popen(
            [self.mnem, "--embedder", "none", "serve", "--listen", "127.0.0.1:0",
             "--rate-limit", "1000000", "--burst", "1000000"],
            env=self.env, stderr=open(self.log, "w"),
        )
        while True:
            found = re.search(r"http://([0-9.]+):([0-9]+)", open(self.log).read())
            if found:
                break
            time.sleep(0.2)
        self.connection = http.client.HTTPConnection(found.group(1), int(found.group(2)))

    def recall(self, query):
        body = json.dumps({"query": query, "limit": 10, "window": 0})
        self.connection.request(
            "POST", "/v1/recall", body,
            {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"},
        )
        response = self.connection.getresponse()
        payload = response.read()
        if response.status != 200:
            raise SystemExit(f"recall failed: {response.status} {payload[:200]}")
        return payload

    def health(self):
        self.connection.request("GET", "/health")
        self.connection.getresponse().read()

    def stop(self):
        self.process.terminate()
        self.process.wait()


def run_size(args, corpus, questions, size, work):
    texts = [f"{role}: {text}" for _, role, text in corpus[:size]]
    chat = os.path.join(work, "turns.jsonl")
    with open(chat, "w") as f:
        for session, role, text in corpus[:size]:
            f.write(json.dumps({"session": session, "role": role, "content": text}) + "\n")
    server = Server(args.mnem, os.path.join(work, "bench.db"), os.path.join(work, "serve.log"))
    import_seconds = server.import_chat(chat)
    started = time.time()
    index = tantivy_index(texts, tempfile.mkdtemp(dir=work))
    tantivy_seconds = time.time() - started
    searcher = index.searcher()
    server.start()
    try:
        sets = [("real questions", questions), ("commonest terms", common_queries(texts, args.queries, args.seed))]
        for query in questions[:10]:  # warm both
            server.recall(query)
            searcher.search(tantivy_query(index, query), 10)
        print(f"\n{size} turns: mnem import {import_seconds:.1f} s, tantivy index {tantivy_seconds:.1f} s")
        for name, queries in sets:
            timings = {"mnem": [], "tantivy": [], "http": []}
            for round_ in range(args.rounds):
                for n, query in enumerate(queries):
                    # Alternate which engine goes first, so neither always meets a warm cache.
                    order = ["mnem", "tantivy"] if (n + round_) % 2 == 0 else ["tantivy", "mnem"]
                    for engine in order:
                        started = time.perf_counter()
                        if engine == "mnem":
                            server.recall(query)
                        else:
                            searcher.search(tantivy_query(index, query), 10)
                        timings[engine].append((time.perf_counter() - started) * 1000)
                    started = time.perf_counter()
                    server.health()
                    timings["http"].append((time.perf_counter() - started) * 1000)
            m, t, h = (percentiles(timings[k]) for k in ("mnem", "tantivy", "http"))
            print(f"  {name} ({len(queries)} queries x {args.rounds}):")
            print(f"    mnem    p50 {m[0]:7.2f}  p95 {m[1]:7.2f}  p99 {m[2]:7.2f} ms")
            print(f"    tantivy p50 {t[0]:7.2f}  p95 {t[1]:7.2f}  p99 {t[2]:7.2f} ms")
            print(f"    ratio   p50 {m[0] / t[0]:7.1f}x p95 {m[1] / t[1]:7.1f}x p99 {m[2] / t[2]:7.1f}x")
            print(f"    (bare HTTP round trip p50 {h[0]:.2f} ms, p95 {h[1]:.2f} ms)")
            sys.stdout.flush()
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--mnem", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release", "mnem"))
    parser.add_argument("--queries", type=int, default=200, help="commonest-terms queries")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    corpus = list(turns(args.dataset))
    questions = [q["question"][:500] for q in json.load(open(args.dataset))]
    print(f"{len(corpus)} unique turns, {len(questions)} questions; tantivy {tantivy.__version__ if hasattr(tantivy, '__version__') else ''}")
    for size in (int(s) for s in args.sizes.split(",")):
        if size > len(corpus):
            print(f"size {size}: the file has only {len(corpus)} turns; using them all")
            size = len(corpus)
        work = tempfile.mkdtemp(prefix="mnem-lexbench-")
        try:
            run_size(args, corpus, questions, size, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""The web console in a real browser (headless Chromium driven by Playwright): `mnem ui`
on a fresh embedded store, the key taken from the printed address, a search with its
selectors and score parts, an evidence page, a relationship's trace with its highlighted
span and neighbourhood picture, the status page, and a key typed by hand. Stored
evidence holding <script> and HTML must render as inert text. Screenshots are written
to docs/screenshots/ (the README shows them; CI keeps them as artifacts).

usage: ui_browser.py MNEM_BINARY [CHROMIUM]
"""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile

from playwright.sync_api import sync_playwright

MNEM = sys.argv[1]
CHROMIUM = sys.argv[2] if len(sys.argv) > 2 else "/usr/bin/chromium"
SHOTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "screenshots")
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)


def mnem(db, *args, stdin=None):
    out = subprocess.run([MNEM, "--db", db, "--embedder", "none", *args], input=stdin,
                         capture_output=True, text=True, check=True)
    return out.stdout


def claim(text, subject, predicate, obj, end=None):
    return json.dumps({
        "evidence": [{"content": text, "source": "standup"}],
        "relationships": [{"subject": {"name": subject}, "predicate": predicate,
                           "object": {"entity": {"name": obj}},
                           "supports": [{"evidence": 0, "start": 0, "end": end or len(text)}]}],
    })


XSS = ('Atlas note <script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'
       '<b>bold</b> & "quotes"')

with tempfile.TemporaryDirectory() as tmp:
    db = os.path.join(tmp, "console.db")
    for text, subject, predicate, obj, end in [
        ("Mark works on Atlas since March", "Mark", "works_on", "Atlas", 19),
        ("Atlas uses Redis for its job queue", "Atlas", "uses", "Redis", None),
        ("Lena maintains Atlas", "Lena", "maintains", "Atlas", None),
    ]:
        mnem(db, "--team", "acme", "remember", "--file", "-",
             stdin=claim(text, subject, predicate, obj, end))
    mnem(db, "--team", "acme", "remember", XSS, "--kind", "note")
    mnem(db, "--team", "acme", "remember", "The Atlas restore runbook lives in the ops wiki",
         "--kind", "decision", "--scope", "acme/ops")
    mnem(db, "--team", "other", "remember", "Atlas secret of another team")

    server = subprocess.Popen(
        [MNEM, "--db", db, "--embedder", "none", "--team", "acme", "ui", "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = server.stdout.readline()
        match = re.search(r"(http://\S+/ui)#key=(\S+)", line)
        check(match is not None, "mnem ui prints the console's address with a key")
        base, token = match.group(1), match.group(2)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            errors = []
            page.on("pageerror", lambda err: errors.append(str(err)))
            page.goto(base + "#key=" + token)
            check("key=" not in page.url, "the key leaves the address bar")
            check(page.inner_text("#key-state") == "key set for this tab", "the key is kept for the tab")

            page.fill("#q", "Atlas")
            page.click("#search-go")
            page.wait_for_selector(".result")
            contexts = page.locator(".result .context").all_inner_texts()
            check(any(XSS in c for c in contexts), "stored HTML is shown as the text it is")
            check(page.evaluate("window.__xss") is None, "no stored script ran")
            check(page.locator("#results b, #results img, #results script").count() == 0,
                  "no stored markup became an element")
            check(not any("another team" in c for c in contexts), "another team's evidence never shows")
            check(page.locator(".path .trace-link").count() > 0, "discovery paths link to traces")
            page.screenshot(path=os.path.join(SHOTS, "console-search.png"), full_page=True)

            page.fill("#scope", "acme/ops")
            page.check("#explain")
            page.click("#search-go")
            page.wait_for_selector(".result .score")
            scoped = page.locator(".result .context").all_inner_texts()
            check(scoped == ["The Atlas restore runbook lives in the ops wiki"],
                  "the scope selector narrows the search: %r" % scoped)
            check(page.locator(".result .score").first.inner_text().startswith("score "),
                  "explain shows score parts")
            page.fill("#scope", "")
            page.uncheck("#explain")
            page.fill("#q", "Mark Atlas")
            page.click("#search-go")
            page.wait_for_selector(".path .trace-link")

            page.locator(".result .evidence-link").first.click()
            page.wait_for_selector(".lifecycle li")
            check(page.locator(".lifecycle li .kind").first.inner_text() == "current",
                  "the evidence page shows its lifecycle")

            page.go_back()
            page.wait_for_selector(".path .trace-link")
            page.locator(".path .trace-link").first.click()
            page.wait_for_selector("#view-relationship .timeline li")
            page.wait_for_selector("#neighbourhood svg circle")
            marks = page.locator("#view-relationship mark").all_inner_texts()
            check(marks == ["Mark works on Atlas"], "the trace highlights the cited span: %r" % marks)
            check(page.locator("#view-relationship .timeline li").count() >= 2,
                  "the timeline shows verification and transitions")
            check(page.locator("#neighbourhood svg circle").count() >= 2, "the neighbourhood is drawn")
            page.screenshot(path=os.path.join(SHOTS, "console-trace.png"), full_page=True)

            page.click("#nav-status")
            page.wait_for_selector("#status-table")
            check("lexical-only" in page.inner_text("#status-table"), "the status page shows the contract")
            page.screenshot(path=os.path.join(SHOTS, "console-status.png"), full_page=True)
            check(errors == [], "no script errors: %r" % errors)

            fresh = browser.new_page()
            fresh.goto(base)
            fresh.fill("#q", "Atlas")
            fresh.click("#search-go")
            fresh.wait_for_selector("#error:not([hidden])")
            check("API key" in fresh.inner_text("#error"), "without a key the console asks for one")
            fresh.fill("#key", "mnem_aaaaaaaaaaaa_" + "b" * 32)
            fresh.click("#key-save")
            fresh.click("#search-go")
            fresh.wait_for_selector("#error:not([hidden])")
            check("recall" in fresh.inner_text("#error"), "a wrong key is refused")
            fresh.fill("#key", token)
            fresh.click("#key-save")
            fresh.click("#search-go")
            fresh.wait_for_selector(".result")
            check(fresh.locator(".result").count() > 0, "a key typed by hand works")
            browser.close()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)

print("screenshots in", os.path.normpath(SHOTS))
if failures:
    print(f"{len(failures)} check(s) failed", file=sys.stderr)
    sys.exit(1)

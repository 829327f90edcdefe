"""Drives `gauntlet view` as people and scripts use it, and prints what it saw as JSON.

Usage: check_view.py URL PLAN.json

PLAN: {"suite": NAME, "run": RUN_ID (a finished run with failures), "other": RUN_ID (another
finished run of the suite), "live": RUN_ID (a run still going), "evil": RUN_ID (a run whose text
carries script payloads), "label": [[ITEM, RATER, "pass"|"fail", NOTE], ...], "shot": PNG}.

The API is read with urllib (the token as a query parameter and as a bearer header, and
without it); the pages in headless Chromium through Playwright, through their own controls.
Exit 3 with a message on stderr when Playwright or Chromium is missing (the Rust test skips).
"""
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

try:
    from playwright.sync_api import sync_playwright
except ImportError:
    print("playwright is not installed (pip install playwright)", file=sys.stderr)
    sys.exit(3)

CHROMIUM = os.environ.get("GAUNTLET_CHROMIUM", "/usr/bin/chromium")
if not os.path.exists(CHROMIUM):
    print(f"no Chromium at {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
    sys.exit(3)

url, plan = sys.argv[1], json.load(open(sys.argv[2]))
parts = urllib.parse.urlsplit(url)
base = f"{parts.scheme}://{parts.netloc}"
token = urllib.parse.parse_qs(parts.query)["token"][0]
out = {}


def get(path, auth="query"):
    """(status, JSON body) of GET path, the token given as `auth` says (query, bearer, none)."""
    headers = {}
    if auth == "query":
        path += ("&" if "?" in path else "?") + "token=" + token
    elif auth == "bearer":
        headers["Authorization"] = "Bearer " + token
    elif auth == "wrong":
        headers["Authorization"] = "Bearer " + "0" * len(token)
    req = urllib.request.Request(base + path, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read()
            kind = r.headers.get("Content-Type", "")
            headers = {k.lower(): v for k, v in r.headers.items()}
            return r.status, (json.loads(body) if "json" in kind else body.decode()), headers
    except urllib.error.HTTPError as e:
        body = e.read()
        try:
            return e.code, json.loads(body), {}
        except ValueError:
            return e.code, body.decode(errors="replace"), {}


# The API, as scripts read it ----------------------------------------------------------------------
run, other, live, evil = plan["run"], plan["other"], plan["live"], plan["evil"]
routes = ["/", "/api/runs", f"/api/runs/{run}", f"/api/runs/{run}/trials",
          f"/api/runs/{run}/trial?case=x&epoch=0", f"/api/compare?a={run}&b={other}",
          "/api/labels", "/api/lakes", "/api/lakes/candidates?lake=0&day=2026-01-01", "/nothing"]
out["unauthorised"] = {r: get(r, "none")[0] for r in routes}
out["wrong_token"] = {r: get(r, "wrong")[0] for r in routes}
status, runs, headers = get("/api/runs", "bearer")
out["runs_status"], out["runs"] = status, runs
out["csp"] = get("/", "query")[2].get("content-security-policy")
status, page, _ = get(f"/api/runs/{run}/trials?offset=0&limit=5&status=failed")
out["failed_page"] = {"status": status, "body": page}
status, page, _ = get(f"/api/runs/{run}/trials?offset=0&limit=1000")
out["all_trials"] = page
out["bad_status"] = get(f"/api/runs/{run}/trials?status=maybe")[0]
out["unknown_run"] = get("/api/runs/no-such-run/trials")[0]
status, body, _ = get(f"/api/runs/{live}")
out["live_first"] = body.get("trials") if status == 200 else body

# The pages, as people use them --------------------------------------------------------------------
with sync_playwright() as p:
    browser = p.chromium.launch(
        executable_path=CHROMIUM,
        args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    )
    ctx = browser.new_context(viewport={"width": 1300, "height": 900})
    page = ctx.new_page()
    console_errors, dialogs, foreign = [], [], []
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: console_errors.append(str(e)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: foreign.append(r.url) if not r.url.startswith(base) and not r.url.startswith("data:") else None)

    def go(hash_, wait):
        page.goto(url + hash_)
        page.wait_for_selector(wait, timeout=15000)

    # A live run: its counts move while it runs.
    go(f"#/run/{live}", "#trial-table")
    out["live_badge"] = page.locator("#live").count()
    before = page.inner_text("#counts")
    changed = None
    for _ in range(40):
        page.wait_for_timeout(500)
        if page.inner_text("#counts") != before:
            changed = page.inner_text("#counts")
            break
    out["live_before"], out["live_after"] = before, changed

    # Runs and the suite's trend.
    go("#/", "table.runs")
    out["suites"] = page.eval_on_selector_all("section.suite", "ss => ss.map(s => s.dataset.suite)")
    suite = page.locator(f'section.suite[data-suite="{plan["suite"]}"]')
    out["trend_points"] = suite.locator("svg.trend circle.point").count()
    out["trend_has_line"] = suite.locator("svg.trend polyline").count()
    out["run_rows"] = suite.locator("tr.run").count()

    # A run: open it from the list, filter, page, open a trajectory.
    page.click(f'tr.run[data-run="{run}"] td a')
    page.wait_for_selector("#trial-table")
    out["verdict"] = page.inner_text("#verdict")
    out["gate_rows"] = page.locator("table.gates tr.gate").count()
    out["plots"] = page.locator("figure.plot svg").count()
    out["rows_unfiltered"] = page.locator("#trial-table tbody tr").count()
    page.select_option("#filter-status", "failed")
    page.wait_for_function("() => [...document.querySelectorAll('#trial-table tbody tr')].every(r => r.classList.contains('failed'))")
    out["rows_failed"] = page.locator("#trial-table tbody tr").count()
    out["shown_failed"] = page.inner_text("#shown")
    first = page.locator("#trial-table tbody tr a").first
    item = first.inner_text()
    first.click()
    page.wait_for_selector("ol.rv-transcript li.rv-entry")
    out["opened"] = item
    out["trial_title"] = page.inner_text("h1")
    out["events"] = page.locator("ol.rv-transcript li.rv-entry").count()
    out["tool_events"] = page.locator("ol.rv-transcript li.rv-entry.tool_call").count()
    out["verdict_rows"] = page.locator("li.rv-verdict").count()
    pointer = page.locator("button.rv-goto").first
    if pointer.count():
        pointer.click()
        out["pointed"] = page.locator("li.rv-entry.pointed").count()

    # Compare two runs picked in the list.
    go("#/", "table.runs")
    page.check(f'input.pick[value="{run}"]')
    page.check(f'input.pick[value="{other}"]')
    page.click("#compare")
    page.wait_for_selector("#compare-pass")
    out["compare_verdict"] = page.inner_text("#compare-verdict")
    out["compare_p"] = page.inner_text("#p-value")
    out["compare_moved"] = page.locator("#moved tbody tr").count()

    # Labelling: two raters, each through the page.
    by_rater = {}
    for item_, rater, verdict, note in plan["label"]:
        by_rater.setdefault(rater, []).append((item_, verdict, note))
    for rater, items in by_rater.items():
        go(f"#/label/{run}", "#label-table")
        page.fill("#rater", rater)
        page.dispatch_event("#rater", "change")
        for item_, verdict, note in items:
            row = page.locator(f'#label-table tr[data-item="{item_}"]')
            row.locator("input.note").fill(note)
            row.locator(f"button.label-{verdict}").click()
            page.wait_for_function(
                "([item, rater]) => { const r = document.querySelector(`#label-table tr[data-item=\"${item}\"]`);"
                " return r && [...r.querySelectorAll('td.others .badge')].some(b => b.textContent.startsWith(rater + ':')); }",
                arg=[item_, rater])
    out["label_saved_text"] = page.inner_text("#saved")

    # Script payloads in a run's text: shown as text, never run.
    go(f"#/run/{evil}", "#trial-table")
    evil_first = page.locator("#trial-table tbody tr a").first
    evil_first.click()
    page.wait_for_selector("ol.rv-transcript li.rv-entry")
    page.wait_for_timeout(300)
    out["pwned"] = page.evaluate("() => window.__pwned === undefined ? null : window.__pwned")
    out["evil_text"] = page.inner_text("main")
    out["injected_elements"] = page.evaluate(
        "() => document.querySelectorAll('img[src=x], svg[onload], iframe, object, embed, a[href^=\"javascript\"]').length")
    out["scripts"] = page.evaluate("() => document.scripts.length")
    page.screenshot(path=plan["shot"], full_page=True)

    out["console_errors"], out["dialogs"], out["foreign_requests"] = console_errors, dialogs, foreign
    browser.close()

status, body, _ = get(f"/api/runs/{live}")
out["live_last"] = body
json.dump(out, sys.stdout)

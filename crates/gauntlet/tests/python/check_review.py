"""Reviews two runs as a person would, in `gauntlet view` and the HTML report, and prints what
it saw as JSON.

Usage: check_review.py URL PLAN.json

PLAN: {"a": RUN (a name), "b": RUN (a name; B has cases that flipped from A), "report": HTML
(B's report with A as its baseline), "shots": DIR (the four screenshots are written there)}.

The API is read with urllib; the pages are opened in headless Chromium through Playwright.
Exit 3 with a message on stderr when Playwright or Chromium is missing (the Rust test skips).
"""
import json
import os
import sys
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
a, b, shots = plan["a"], plan["b"], plan["shots"]
q = urllib.parse.quote
out = {}


def get(path):
    req = urllib.request.Request(base + path, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


# The API, by the runs' names -------------------------------------------------------------------
compare = get(f"/api/compare?a={q(a)}&b={q(b)}")
out["flips"] = compare["flips"]
out["matrix"] = [{"case_id": r["case_id"], "epoch": r["epoch"], "flipped": r["flipped"]}
                 for r in compare["matrix"]]
# The flipped trial with the most state changes is the one to read.
trials = {}
for f in compare["flips"]:
    trials[(f["case_id"], f["epoch"])] = get(
        f"/api/runs/{q(b)}/trial?case={q(f['case_id'])}&epoch={f['epoch']}")
case_id, epoch = max(trials, key=lambda k: (len(trials[k]["diff"]), k[0]))
trial = trials[(case_id, epoch)]
out["case_id"], out["epoch"] = case_id, epoch
out["api_trial"] = {k: trial[k] for k in ("diff", "transcript", "verdicts", "request", "case")}

with sync_playwright() as p:
    browser = p.chromium.launch(
        executable_path=CHROMIUM,
        args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    )
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = ctx.new_page()
    console_errors = []
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: console_errors.append(str(e)))

    # The run, by its name: its trials come before its plots.
    page.goto(url + f"#/run/{q(b)}")
    page.wait_for_selector("#trial-table tbody tr")
    page.wait_for_selector("figure.plot svg")
    out["run_title"] = page.inner_text("h1")
    out["table_before_plots"] = page.evaluate(
        "() => !!(document.querySelector('#trial-table').compareDocumentPosition("
        "document.querySelector('figure.plot')) & Node.DOCUMENT_POSITION_FOLLOWING)")
    out["folded_metrics"] = page.locator("#folded-metrics").count()
    page.screenshot(path=os.path.join(shots, "run.png"), full_page=True)

    # The trajectory of the flipped trial.
    page.goto(url + f"#/trial/{q(b)}/{q(case_id)}/{epoch}")
    page.wait_for_selector("ol.rv-transcript li.rv-entry")
    out["request"] = page.inner_text(".rv-request")
    out["cards"] = page.locator("li.rv-entry.tool_call .rv-card").count()
    out["card_tools"] = page.eval_on_selector_all(
        "li.rv-entry.tool_call .rv-tool", "ts => ts.map(t => t.textContent)")
    out["diff_rows"] = page.eval_on_selector_all(
        "table.rv-state-diff tbody tr", "rs => rs.map(r => r.dataset.path)")
    out["verdict_order"] = page.eval_on_selector_all(
        "li.rv-verdict", "vs => vs.map(v => [v.dataset.name, v.dataset.status])")
    out["first_verdict_visible"] = page.eval_on_selector(
        "li.rv-verdict", "v => v.getBoundingClientRect().height > 0")
    out["case_file"] = page.inner_text(".rv-case .rv-file") if page.locator(".rv-case").count() else None
    out["flagged"] = page.locator("li.rv-entry.flagged").count()
    page.screenshot(path=os.path.join(shots, "trajectory.png"), full_page=False)
    page.screenshot(path=os.path.join(shots, "trajectory-full.png"), full_page=True)
    # The next failing trial is a key away.
    page.wait_for_selector("#next-failed, #prev-failed")
    out["failed_position"] = page.inner_text("#review-nav")
    page.keyboard.press("j")
    page.wait_for_function("(t) => document.querySelector('h1') && !document.querySelector('h1').textContent.startsWith(t)", arg=f"{case_id}#{epoch}")
    page.wait_for_selector("ol.rv-transcript li.rv-entry")
    out["after_j"] = page.inner_text("h1")

    # The two runs compared: flipped cases first; a row opens both trajectories side by side.
    page.goto(url + f"#/compare/{q(a)}/{q(b)}")
    page.wait_for_selector("#matrix tbody tr")
    out["page_matrix"] = page.eval_on_selector_all(
        "#matrix tbody tr", "rs => rs.map(r => [r.dataset.case, r.classList.contains('flipped')])")
    out["cell_titles"] = page.eval_on_selector_all(
        "#matrix tbody tr.flipped td.cell", "cs => cs.map(c => c.title)")
    page.click(f'#matrix tbody tr[data-case="{case_id}"]')
    page.wait_for_function("() => document.querySelectorAll('#side-by-side .rv').length === 2")
    out["side_by_side"] = page.locator("#side-by-side .rv").count()
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=os.path.join(shots, "compare.png"), full_page=True)

    # The HTML report of B against A: the same trajectory, drawn by the same script.
    page.goto("file://" + os.path.abspath(plan["report"]))
    page.wait_for_load_state("load")
    anchor = page.evaluate(
        "([c, e]) => { const d = [...document.querySelectorAll('details.trajectory')].find(d =>"
        " d.querySelector('summary b').textContent === c && d.querySelector('summary').textContent.includes('epoch ' + e));"
        " return d ? d.id : null; }", [case_id, epoch])
    out["report_anchor"] = anchor
    if anchor:
        page.goto("file://" + os.path.abspath(plan["report"]) + "#" + anchor)
        page.wait_for_selector(f"#{anchor} li.rv-entry")
        out["report_cards"] = page.locator(f"#{anchor} li.rv-entry.tool_call .rv-card").count()
        out["report_diff_rows"] = page.locator(f"#{anchor} table.rv-state-diff tbody tr").count()
        out["report_verdict_order"] = page.eval_on_selector_all(
            f"#{anchor} li.rv-verdict", "vs => vs.map(v => [v.dataset.name, v.dataset.status])")
        out["report_flips"] = page.locator("table.flips tbody tr").count()
        page.screenshot(path=os.path.join(shots, "report-full.png"), full_page=True)
        page.evaluate("(id) => document.getElementById(id).scrollIntoView()", anchor)
        page.screenshot(path=os.path.join(shots, "report.png"))
    out["console_errors"] = console_errors
    browser.close()
json.dump(out, sys.stdout)

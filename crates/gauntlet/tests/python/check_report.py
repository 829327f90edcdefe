"""Opens a gauntlet HTML report in headless Chromium (Playwright driving Debian's chromium) and
prints what a person would see, as JSON. Usage: check_report.py render|xss REPORT.html SCREENSHOT.png,
or check_report.py label REPORT.html SCREENSHOT.png PLAN.json LABELS_OUT.jsonl: label trials as a
person would (PLAN maps an item `CASE#EPOCH` to "pass"/"fail" and an optional note), reload the
page to see the labels kept, export them with the page's button and save the download.

Exit 3 with a message on stderr when Playwright or Chromium is missing (the Rust test skips).
"""
import json
import os
import sys
import time
import zlib

try:
    from playwright.sync_api import sync_playwright
except ImportError:
    print("playwright is not installed (pip install playwright)", file=sys.stderr)
    sys.exit(3)

CHROMIUM = os.environ.get("GAUNTLET_CHROMIUM", "/usr/bin/chromium")
if not os.path.exists(CHROMIUM):
    print(f"no Chromium at {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
    sys.exit(3)

mode, report, shot = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]


def label(page, plan, out):
    """Labels each planned trial through the page's own controls, then exports."""
    page.fill("#rater", "alice")
    for item, (verdict, note) in plan.items():
        box = page.locator(f'fieldset.labelling[data-item="{item}"]')
        box.evaluate("f => f.closest('details').open = true")
        box.locator(f'input[type=radio][value="{verdict}"]').check()
        if note:
            box.locator("input.note").fill(note)
    out["labelled_text"] = page.inner_text("#labelled")
    out["table_labels"] = page.eval_on_selector_all(
        "td.your-label", "tds => tds.filter(t => t.textContent).length")
    # Labels survive a reload (kept in the browser until exported).
    page.reload()
    page.wait_for_load_state("load")
    out["restored"] = page.eval_on_selector_all(
        "fieldset.labelling input[type=radio]:checked", "rs => rs.filter(r => r.value).length")
    with page.expect_download() as info:
        page.click("#export-labels")
    download = info.value
    out["download_name"] = download.suggested_filename
    download.save_as(sys.argv[5])
    out["textarea"] = page.eval_on_selector("#labels-jsonl", "t => t.value")


def png_is_blank(path):
    """True when the decoded pixel data has (almost) a single byte value."""
    data = open(path, "rb").read()
    pos, idat = 8, b""
    while pos < len(data):
        length = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(idat)
    return len(set(raw)) < 8


with sync_playwright() as p:
    browser = p.chromium.launch(
        executable_path=CHROMIUM,
        args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    )
    page = browser.new_page(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    console_errors, dialogs, requests = [], [], []
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: console_errors.append(str(e)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith("file:") and not r.url.startswith("data:") else None)
    t0 = time.time()
    page.goto("file://" + report)
    page.wait_for_load_state("load")
    load_s = time.time() - t0
    out = {"load_seconds": load_s, "console_errors": console_errors, "dialogs": dialogs, "requests": requests}
    out["title"] = page.title()
    out["verdict"] = page.inner_text("#verdict")
    out["gate_rows"] = page.locator("table.gates tr.gate").count()
    out["failed_gate_rows"] = page.locator("tr.gate.fail").count()
    out["charts"] = page.eval_on_selector_all(
        "svg.chart", "els => els.filter(e => { const r = e.getBoundingClientRect(); return r.width > 50 && r.height > 20 && e.querySelectorAll('rect,path').length > 0; }).length")
    out["trial_rows"] = page.locator("#trial-table tbody tr").count()
    # Filter the table to failed trials, then open the first failed trial's trajectory from it.
    page.select_option("#filter-status", "failed")
    out["visible_failed_rows"] = page.eval_on_selector_all("#trial-table tbody tr", "rs => rs.filter(r => !r.hidden).length")
    first = page.locator("#trial-table tbody tr:not([hidden]) a").first
    if first.count():
        first.click()
        page.wait_for_timeout(200)
        anchor = first.get_attribute("href")[1:]
        out["opened"] = page.eval_on_selector("#" + anchor, "d => d.open")
        page.wait_for_selector("#" + anchor + " li.rv-entry")
        out["timeline_events"] = page.locator("#" + anchor + " li.rv-entry").count()
        out["visible_timeline_events"] = page.eval_on_selector_all(
            "#" + anchor + " li.rv-entry", "es => es.filter(e => e.getBoundingClientRect().height > 0).length")
        out["tool_call_events"] = page.locator("#" + anchor + " li.rv-entry.tool_call").count()
        out["evaluator_rows"] = page.locator("#" + anchor + " li.rv-verdict").count()
    if mode == "label":
        plan = json.load(open(sys.argv[4]))
        label(page, plan, out)
    if mode == "xss":
        for d in page.locator("details.trajectory").all():
            d.evaluate("d => d.open = true")
        page.wait_for_timeout(300)
        out["pwned"] = page.evaluate("() => window.__pwned === undefined ? null : window.__pwned")
        out["body_text"] = page.inner_text("body")
        out["injected_elements"] = page.evaluate(
            "() => document.querySelectorAll('img[src=x], svg[onload], iframe, object, embed, a[href^=\"javascript\"]').length")
        out["scripts"] = page.evaluate("() => document.scripts.length")
    page.screenshot(path=shot, full_page=True)
    out["screenshot_blank"] = png_is_blank(shot)
    browser.close()
json.dump(out, sys.stdout)

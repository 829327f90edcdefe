"""Feeds two `gauntlet online` receivers of one lake at once, as the OpenTelemetry Collector's
load-balancing exporter would (every span of a trace to one receiver, chosen by trace id), then
reads the lake back with DuckDB.

usage:
  two_receivers.py feed TRACES.json N URL1 TOKEN1 URL2 TOKEN2  -> {"accepted": [ids], "refused": n}
  two_receivers.py lake LAKE                                   -> {"rows", "distinct", "ids", "files"}

`feed` makes N traces from the exported run in TRACES.json (OTLP/JSON): the spans of each of its
traces again under a fresh random trace id, posted as one request per trace from four threads.
"""

import glob
import json
import os
import secrets
import sys
import threading
import urllib.error
import urllib.request


def post(url, token, body):
    req = urllib.request.Request(url + "/v1/traces", data=body, method="POST")
    req.add_header("Authorization", f"Bearer {token}")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def feed(path, n, receivers):
    doc = json.load(open(path))
    rs = doc["resourceSpans"][0]
    scope = rs["scopeSpans"][0]
    traces = {}
    for span in scope["spans"]:
        traces.setdefault(span["traceId"], []).append(span)
    templates = list(traces.values())
    jobs = []
    for i in range(n):
        trace_id = secrets.token_hex(16)
        spans = [dict(s, traceId=trace_id) for s in templates[i % len(templates)]]
        body = {"resourceSpans": [{"resource": rs["resource"],
                                   "scopeSpans": [{"scope": scope["scope"], "spans": spans}]}]}
        # The collector's rule: the receiver is a function of the trace id.
        jobs.append((trace_id, receivers[int(trace_id, 16) % len(receivers)],
                     json.dumps(body).encode()))
    accepted, refused, lock = [], [0], threading.Lock()

    def worker(k):
        for trace_id, (url, token), body in jobs[k::4]:
            status = post(url, token, body)
            with lock:
                if status == 200:
                    accepted.append(trace_id)
                else:
                    refused[0] += 1

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"accepted": sorted(accepted), "refused": refused[0]}))


def lake(root):
    import duckdb

    traces = f"read_parquet('{root}/traces/**/*.parquet', hive_partitioning = true)"
    con = duckdb.connect()
    rows, distinct = con.execute(f"SELECT count(*), count(DISTINCT trace_id) FROM {traces}").fetchone()
    ids = [r[0] for r in con.execute(f"SELECT trace_id FROM {traces} ORDER BY trace_id").fetchall()]
    files = sorted(os.path.basename(f) for f in glob.glob(f"{root}/traces/**/*", recursive=True)
                   if os.path.isfile(f))
    print(json.dumps({"rows": rows, "distinct": distinct, "ids": ids, "files": files}))


if sys.argv[1] == "feed":
    feed(sys.argv[2], int(sys.argv[3]),
         [(sys.argv[4], sys.argv[5]), (sys.argv[6], sys.argv[7])])
elif sys.argv[1] == "lake":
    lake(sys.argv[2])

"""The online receiver's test client: HTTP requests to it, and DuckDB reading its lake.

usage:
  online_client.py post URL TOKEN FILE CONTENT_TYPE [gzip]   -> {"status": N, "body": ...}
  online_client.py feedback URL TOKEN JSON                    -> {"status": N, "body": ...}
  online_client.py status URL TOKEN                           -> the receiver's /v1/status
  online_client.py lake LAKE [FORBIDDEN...]                   -> rows and what leaked where
"""

import glob
import gzip
import json
import os
import sys
import urllib.error
import urllib.request


def request(url, token, body, headers):
    req = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    for k, v in headers.items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


cmd = sys.argv[1]
if cmd == "post":
    url, token, path, ctype = sys.argv[2:6]
    body = open(path, "rb").read()
    headers = {"Content-Type": ctype}
    if len(sys.argv) > 6 and sys.argv[6] == "gzip":
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    status, text = request(url + "/v1/traces", token, body, headers)
    print(json.dumps({"status": status, "body": text}))
elif cmd == "feedback":
    url, token, doc = sys.argv[2:5]
    status, text = request(url + "/v1/feedback", token, doc.encode(), {"Content-Type": "application/json"})
    print(json.dumps({"status": status, "body": text}))
elif cmd == "status":
    url, token = sys.argv[2:4]
    status, text = request(url + "/v1/status", token, None, {})
    print(text if status == 200 else json.dumps({"status": status, "body": text}))
elif cmd == "lake":
    import duckdb

    lake, forbidden = sys.argv[2], sys.argv[3:]
    con = duckdb.connect()
    traces = f"read_parquet('{lake}/traces/**/*.parquet', hive_partitioning = true)"
    feedback = f"read_parquet('{lake}/feedback/**/*.parquet', hive_partitioning = true)"
    rows = con.execute(
        f"SELECT trace_id, status, agent, service, tool_calls, tool_errors, input_tokens, "
        f"output_tokens, tools, failed_evaluators, trajectory, CAST(day AS VARCHAR) "
        f"FROM {traces} ORDER BY trace_id"
    ).fetchall()
    out = {
        "count": con.execute(f"SELECT count(*) FROM {traces}").fetchone()[0],
        "rows": [
            {"trace_id": r[0], "status": r[1], "agent": r[2], "service": r[3],
             "tool_calls": r[4], "tool_errors": r[5], "input_tokens": r[6],
             "output_tokens": r[7], "tools": r[8], "failed_evaluators": r[9],
             "trajectory": json.loads(r[10]), "day": r[11]}
            for r in rows
        ],
    }
    if glob.glob(f"{lake}/feedback/**/*.parquet", recursive=True):
        out["feedback"] = [
            {"trace_id": r[0], "rating": r[1], "comment": r[2], "status": r[3]}
            for r in con.execute(
                f"SELECT f.trace_id, f.rating, f.comment, t.status FROM {feedback} f "
                f"LEFT JOIN {traces} t USING (trace_id)"
            ).fetchall()
        ]
    # Every value of every column, as text, and every file's bytes.
    text = "\n".join(
        str(v)
        for table in [traces] + ([feedback] if "feedback" in out else [])
        for row in con.execute(
            f"SELECT * REPLACE (CAST(received_at AS VARCHAR) AS received_at) FROM {table}"
        ).fetchall()
        for v in row
    )
    leaks = []
    files = [p for p in glob.glob(f"{lake}/**", recursive=True) if os.path.isfile(p)]
    for s in forbidden:
        if s in text:
            leaks.append({"value": s, "where": "a column"})
        for p in files:
            if s.encode() in open(p, "rb").read():
                leaks.append({"value": s, "where": p})
    out["leaks"] = leaks
    out["files"] = len(files)
    print(json.dumps(out))

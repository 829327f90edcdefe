"""Reads gauntlet's OTLP/JSON export with OpenTelemetry's own protobuf classes and checks it
against the run it came from.

Usage: check_otlp.py TRACES.jsonl RUN_DIR   (prints a JSON report; exits 1 on a problem)
The official `opentelemetry-proto` package parses the file strictly (an unknown field or a wrong
type fails). OTLP/JSON writes trace and span ids in hex where protobuf's JSON mapping expects
base64, so ids are read from the JSON text and checked to be 32 and 16 hex digits.
"""
import json
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

# OTLP/JSON Lines: one request per line (a single-document export is one line too).
lines = [line for line in open(sys.argv[1]) if line.strip()]
requests = [json_format.Parse(line, ExportTraceServiceRequest()) for line in lines]
spans = [s for request in requests for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
raw = [s for line in lines for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
problems = []
HEX = set("0123456789abcdef")


def hex_id(value, digits):
    if len(value) != digits or not set(value) <= HEX:
        problems.append(f"malformed id {value!r}")
    return value


class Spanned:
    """A parsed span with its ids as written: (trace, span, parent or "")."""

    def __init__(self, span, r):
        self.span = span
        self.ids = (hex_id(r["traceId"], 32), hex_id(r["spanId"], 16), r["parentSpanId"] and hex_id(r["parentSpanId"], 16))

    def __getattr__(self, name):
        return getattr(self.span, name)


by_trace = {}
for s, r in zip(spans, raw):
    w = Spanned(s, r)
    by_trace.setdefault(w.ids[0], []).append(w)

trials = [json.loads(line) for line in open(sys.argv[2] + "/trials.jsonl") if line.strip()]
counts = {"trials": len(trials), "spans": len(spans), "chat": 0, "execute_tool": 0, "evaluations": 0, "errors": 0}
for t in trials:
    mine = by_trace.get(t["trace_id"], [])
    roots = [s for s in mine if not s.ids[2]]
    if len(roots) != 1 or not roots[0].name.startswith("invoke_agent "):
        problems.append(f"{t['case_id']}#{t['epoch']}: {len(roots)} root spans")
        continue
    root = roots[0]
    events = t["trajectory"]["events"]
    calls = [e for e in events if e["type"] in ("tool_call", "model_call")]
    children = [s for s in mine if s.ids[2] == root.ids[1]]
    if len(children) != len(calls) or len(mine) != len(calls) + 1:
        problems.append(f"{t['case_id']}#{t['epoch']}: {len(children)} child spans for {len(calls)} calls")
    for c, s in zip(calls, children):
        want = ("execute_tool " + c["tool"]) if c["type"] == "tool_call" else ("chat " + c["model"])
        if s.name != want:
            problems.append(f"{t['case_id']}: span {s.name!r}, expected {want!r}")
        if not (root.start_time_unix_nano <= s.start_time_unix_nano <= s.end_time_unix_nano <= root.end_time_unix_nano):
            problems.append(f"{t['case_id']}: span {s.name} is not within its trial")
        attrs = {a.key: a.value for a in s.attributes}
        if c["type"] == "model_call":
            counts["chat"] += 1
            if attrs["gen_ai.usage.input_tokens"].int_value != c["prompt_tokens"]:
                problems.append(f"{t['case_id']}: input tokens differ")
        else:
            counts["execute_tool"] += 1
            if attrs["gen_ai.tool.call.id"].string_value != c["id"]:
                problems.append(f"{t['case_id']}: tool call id differs")
            if "result" in c and json.loads(attrs["gen_ai.tool.call.result"].string_value) != c["result"]:
                problems.append(f"{t['case_id']}: tool call result differs")
        failed = (c.get("error") is not None)
        if failed != (s.status.code == 2):
            problems.append(f"{t['case_id']}: span {s.name} error status {s.status.code} for error {c.get('error')}")
        counts["errors"] += int(failed)
    root_attrs = {a.key: a.value.string_value for a in root.attributes}
    answer = t["trajectory"].get("final_answer")
    if answer is not None:
        out = json.loads(root_attrs.get("gen_ai.output.messages", "[]"))
        if not out or out[0]["parts"][0]["content"] != answer:
            problems.append(f"{t['case_id']}: output messages {out} for answer {answer!r}")
    said = [e["text"] for e in events if e["type"] == "user_message"]
    heard = [m["parts"][0]["content"] for m in json.loads(root_attrs.get("gen_ai.input.messages", "[]"))]
    if heard != said:
        problems.append(f"{t['case_id']}: input messages {heard} for {said}")
    verdicts = [e for e in root.events if e.name == "gen_ai.evaluation.result"]
    names = [{a.key: a.value for a in e.attributes}["gen_ai.evaluation.name"].string_value for e in verdicts]
    if names != [s["name"] for s in t["scores"]]:
        problems.append(f"{t['case_id']}: evaluation events {names} for scores {[s['name'] for s in t['scores']]}")
    counts["evaluations"] += len(verdicts)

print(json.dumps({"counts": counts, "problems": problems}))
sys.exit(1 if problems else 0)

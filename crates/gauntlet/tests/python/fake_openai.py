"""A tiny, deterministic OpenAI-compatible chat server for tests (no model, no network).

It plays an incident-desk agent: asked about an incident (INC-NNNNNN) with a `get_incident` tool
available, it calls the tool; given the tool's result, it answers with the status.
Asked to role-play a user (gauntlet's persona prompt), it plays the persona in its system
message: a question gets the first incident id the persona names ("I don't know." if none); a
confirmation request gets "yes" when the persona says it approves, else a refusal; the greeting
before the conversation gets the persona's first sentence; being told an incident's status ends
the conversation (###STOP###). A system prompt asking "Be terse." gets a bare "yes". It supports
`stream: true` (SSE chunks, the usage in the last chunk when `stream_options.include_usage`).
Usage: fake_openai.py PORT_FILE   (binds 127.0.0.1:0 and writes the port to PORT_FILE)
"""
import hashlib
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def play_user(messages):
    persona = messages[0].get("content") or ""
    asked = messages[-1].get("content") or ""
    if asked == "Hi! How can I help you today?":
        who = persona.split("what you want:")[-1].split("Rules:")[0].strip()
        return {"role": "assistant", "content": who.split(". ")[0].rstrip(".") + "."}
    if "(Please confirm: yes or no.)" in asked:
        if "You approve" in persona:
            return {"role": "assistant", "content": "yes" if "Be terse." in persona else "Yes, go ahead."}
        return {"role": "assistant", "content": "No, leave it as it is."}
    if re.search(r"INC-\d{6} is \w+", asked):
        return {"role": "assistant", "content": "###STOP###"}
    ids = re.findall(r"INC-\d{6}", persona.split("Rules:")[0])
    return {"role": "assistant", "content": f"It is {ids[0]}." if ids else "I don't know."}


def model_of(body):
    return body.get("model", "")


def pairwise(model, prompt):
    """A pairwise judge: `judge-first` always prefers the trajectory shown first (pure position
    bias); any other prefers the trajectory with fewer tool calls, a tie when they make as many."""
    if model == "judge-first":
        return {"role": "assistant", "content": json.dumps({"better": "1", "reason": "the first"})}
    calls = [len(re.findall(r"^Step \d+ call ", part, re.M)) for part in prompt.split("[Trajectory ")[1:]]
    one, two = calls
    better = "tie" if one == two else ("1" if one < two else "2")
    return {"role": "assistant", "content": json.dumps({"better": better, "reason": "fewer tool calls"})}


def judge(body):
    """Plays an LLM judge (gauntlet's judge prompt). By model: `judge-garbled` answers prose
    with no verdict; `judge-fenced` a fenced JSON block; any other a bare JSON verdict, which
    fails safety when the goal's length is odd (so verdicts vary across cases);
    `judge-contrary` turns that safety verdict round when the goal's length is a multiple of 3
    (so two judges agree on some trials and split on others). Every judge
    call is counted in PORT_FILE.judge, one line each."""
    with open(sys.argv[1] + ".judge", "a") as f:
        prompt_hash = hashlib.sha256(body["messages"][0]["content"].encode()).hexdigest()[:16]
        f.write(body.get("model", "") + " " + prompt_hash + "\n")
    prompt = body["messages"][0]["content"]
    if "[Trajectory 1]" in prompt:
        return pairwise(model_of(body), prompt)
    goal = prompt.split("[Goal]\n")[1].split("\n\n[")[0] if "[Goal]" in prompt else ""
    model = body.get("model", "")
    if model == "judge-garbled":
        return {"role": "assistant", "content": "The agent seems to have done a reasonable job overall."}
    safe = len(goal) % 2 == 0
    if model == "judge-contrary" and len(goal) % 3 == 0:
        safe = not safe
    verdict = {"ReasoningQuality": 0.9, "SafetyScore": 1.0 if safe else 0.0,
               "reason": "checked the trajectory"}
    text = json.dumps(verdict)
    if model == "judge-fenced":
        text = "Here is my verdict:\n```json\n" + text + "\n```"
    return {"role": "assistant", "content": text}


def reply(body):
    messages = body.get("messages", [])
    if messages and (messages[0].get("content") or "").startswith("You are an impartial judge"):
        return judge(body)
    if messages and "role-playing a user" in (messages[0].get("content") or ""):
        return play_user(messages)
    tools = {t["function"]["name"] for t in body.get("tools", [])}
    last = messages[-1]
    if last.get("role") == "tool":
        content = last.get("content") or ""
        try:
            status = json.loads(content).get("status", "unknown")
        except ValueError:
            status = "unknown (" + content + ")"
        ids = re.findall(r"INC-\d{6}", " ".join(m.get("content") or "" for m in messages if m.get("role") == "user"))
        return {"role": "assistant", "content": f"{ids[0] if ids else 'The incident'} is {status}."}
    ids = re.findall(r"INC-\d{6}", last.get("content") or "")
    if ids and "get_incident" in tools:
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "get_incident", "arguments": json.dumps({"incident_id": ids[0]})}}]}
    return {"role": "assistant", "content": "I cannot help with that."}


LOCK = threading.Lock()
IN_FLIGHT = 0
MOST_IN_FLIGHT = 0
SEEN = set()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def send_json(self, status, obj):
        out = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        model = body.get("model", "")
        if model == "judge-slow":
            # Takes 0.3 s a call and keeps the most calls it saw at once in PORT_FILE.inflight.
            global IN_FLIGHT, MOST_IN_FLIGHT
            with LOCK:
                IN_FLIGHT += 1
                MOST_IN_FLIGHT = max(MOST_IN_FLIGHT, IN_FLIGHT)
                with open(sys.argv[1] + ".inflight", "w") as f:
                    f.write(str(MOST_IN_FLIGHT))
            time.sleep(0.3)
            with LOCK:
                IN_FLIGHT -= 1
        if model == "judge-flaky":
            # The first time it sees a prompt it answers 429 (counted in PORT_FILE.busy).
            key = hashlib.sha256(json.dumps(body["messages"]).encode()).hexdigest()
            with LOCK:
                first = key not in SEEN
                SEEN.add(key)
            if first:
                with open(sys.argv[1] + ".busy", "a") as f:
                    f.write(key[:16] + "\n")
                self.send_json(429, {"error": {"message": "rate limited", "type": "rate_limit"}})
                return
        if body.get("model") == "judge-noschema" and "response_format" in body:
            # An upstream without structured outputs: it refuses the response format (counted
            # in PORT_FILE.refused, one line each).
            with open(sys.argv[1] + ".refused", "a") as f:
                f.write("response_format\n")
            self.send_json(400, {"error": {"message": "response_format is not supported by this model",
                                           "type": "invalid_request_error", "param": "response_format"}})
            return
        if body.get("model") == "judge-llamacpp" and \
                (body.get("response_format") or {}).get("type") == "json_schema":
            # As llama-cpp-python's server: a 500 with pydantic's validation error for a
            # json_schema response format; a json_object one it takes.
            with open(sys.argv[1] + ".refused", "a") as f:
                f.write("response_format\n")
            self.send_json(500, {"error": {"message": "1 validation error for CreateChatCompletionRequest\n"
                                           "response_format.type\n  Input should be 'text' or 'json_object' "
                                           "[type=literal_error, input_value='json_schema', input_type=str]",
                                           "type": "internal_server_error"}})
            return
        message = reply(body)
        usage = {"prompt_tokens": 20 + 10 * len(body.get("messages", [])), "completion_tokens": 7, "total_tokens": 0}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        model = body.get("model", "fake")
        if not body.get("stream"):
            self.send_json(200, {"id": "cmpl-1", "object": "chat.completion", "created": 0, "model": model,
                                 "choices": [{"index": 0, "message": message,
                                              "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                                 "usage": usage})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()

        def chunk(delta, finish=None, extra=None):
            data = {"id": "cmpl-1", "object": "chat.completion.chunk", "created": 0, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            if extra:
                data.update(extra)
            self.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")
            self.wfile.flush()
            time.sleep(0.05)

        chunk({"role": "assistant", "content": ""})
        if message.get("tool_calls"):
            call = message["tool_calls"][0]
            chunk({"tool_calls": [{"index": 0, **call}]})
            chunk({}, "tool_calls")
        else:
            words = message["content"].split(" ")
            for i, w in enumerate(words):
                chunk({"content": w + (" " if i < len(words) - 1 else "")})
            chunk({}, "stop")
        if (body.get("stream_options") or {}).get("include_usage"):
            self.wfile.write(b"data: " + json.dumps({"id": "cmpl-1", "object": "chat.completion.chunk", "created": 0,
                                                     "model": model, "choices": [], "usage": usage}).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[1], "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()

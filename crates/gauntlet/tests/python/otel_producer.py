"""A real trace producer: an agent loop over the official OpenAI client, instrumented by
OpenTelemetry's GenAI OpenAI instrumentation or by OpenInference's, against a fake
OpenAI-compatible upstream, exported with the OTLP/HTTP exporter.

usage: otel_producer.py (genai|openinference) ENDPOINT TOKEN EXPECTED_JSON [--traces N]
                        [--secret TEXT]

Each trace: the user asks about an order; the model asks for `get_order` (with arguments), the
agent runs the tool (its own span, per the conventions), the model answers. What was produced
(calls, arguments, results, tokens per trace) is written to EXPECTED_JSON for the test to compare.
"""

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

convention, endpoint, token, expected_path = sys.argv[1:5]
traces = int(sys.argv[sys.argv.index("--traces") + 1]) if "--traces" in sys.argv else 3
# Said by the user (a planted canary, personal data): it must never reach the receiver's disk.
secret = sys.argv[sys.argv.index("--secret") + 1] if "--secret" in sys.argv else ""

# Message content on spans, in the latest GenAI conventions.
os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"

from opentelemetry import trace  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402


class FakeOpenAI(BaseHTTPRequestHandler):
    """Chat completions: a tool call while the last message is the user's, then an answer."""

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        last = body["messages"][-1]
        n = body["messages"][0]["content"].split()[-1]
        if last["role"] == "user":
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{n}", "type": "function",
                "function": {"name": "get_order", "arguments": json.dumps({"order_id": f"A-{n}"})},
            }]}
            usage = {"prompt_tokens": 50 + int(n), "completion_tokens": 7, "total_tokens": 57 + int(n)}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": f"Order A-{n} has shipped."}
            usage = {"prompt_tokens": 80 + int(n), "completion_tokens": 9, "total_tokens": 89 + int(n)}
            finish = "stop"
        out = json.dumps({
            "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": "gpt-fake",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage,
        }).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
threading.Thread(target=server.serve_forever, daemon=True).start()

provider = TracerProvider(resource=Resource.create({"service.name": "orders-agent"}))
exporter = OTLPSpanExporter(endpoint=endpoint, headers={"authorization": f"Bearer {token}"})
provider.add_span_processor(BatchSpanProcessor(exporter))
trace.set_tracer_provider(provider)

if convention == "genai":
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    OpenAIInstrumentor().instrument(tracer_provider=provider)
else:
    from openinference.instrumentation.openai import OpenAIInstrumentor
    OpenAIInstrumentor().instrument(tracer_provider=provider)

import openai  # noqa: E402

client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="sk-fake")
tracer = trace.get_tracer("orders-agent")
tools = [{"type": "function", "function": {
    "name": "get_order", "description": "Look up an order.",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                   "required": ["order_id"]}}}]


def get_order(order_id):
    return {"order_id": order_id, "status": "shipped"}


expected = []
for n in range(1, traces + 1):
    request = f"{secret} Where is my order? I am customer {n}".strip()
    if convention == "genai":
        root = tracer.start_as_current_span("invoke_agent orders", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "orders"})
    else:
        root = tracer.start_as_current_span("agent", attributes={
            "openinference.span.kind": "AGENT", "input.value": request})
    with root as span:
        messages = [{"role": "user", "content": request}]
        first = client.chat.completions.create(model="gpt-fake", messages=messages, tools=tools)
        call = first.choices[0].message.tool_calls[0]
        args = json.loads(call.function.arguments)
        if convention == "genai":
            tool_span = tracer.start_as_current_span("execute_tool get_order", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_order",
                "gen_ai.tool.call.id": call.id, "gen_ai.tool.type": "function",
                "gen_ai.tool.call.arguments": call.function.arguments})
        else:
            tool_span = tracer.start_as_current_span("get_order", attributes={
                "openinference.span.kind": "TOOL", "tool.name": "get_order",
                "input.value": call.function.arguments, "input.mime_type": "application/json"})
        with tool_span as ts:
            result = get_order(**args)
            attr = "gen_ai.tool.call.result" if convention == "genai" else "output.value"
            ts.set_attribute(attr, json.dumps(result))
        messages.append(first.choices[0].message.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
        second = client.chat.completions.create(model="gpt-fake", messages=messages, tools=tools)
        answer = second.choices[0].message.content
        if convention == "openinference":
            span.set_attribute("output.value", answer)
        expected.append({
            "trace_id": format(span.get_span_context().trace_id, "032x"),
            "request": request,
            "calls": [{"tool": "get_order", "id": call.id, "arguments": args, "result": result}],
            "input_tokens": first.usage.prompt_tokens + second.usage.prompt_tokens,
            "output_tokens": first.usage.completion_tokens + second.usage.completion_tokens,
            "answer": answer,
        })

provider.force_flush()
provider.shutdown()
with open(expected_path, "w") as f:
    json.dump(expected, f, indent=1)

"""An agent on the official `openai` package, through gauntlet's LLM gateway.

gauntlet gives it OPENAI_BASE_URL (the gateway) and a per-trial OPENAI_API_KEY: the real key
stays with gauntlet, and every model call lands in the trajectory (tokens, cost, latency, time to
first token) and, with --record, in a cassette that --replay serves back without any upstream.
Tools come from the world over MCP (the official `mcp` package).

  gauntlet run examples/incident-desk --agent 'cmd:python3 examples/agents/openai_agent.py' \
      --gateway-upstream https://api.openai.com/v1 --record cassette.jsonl   # OPENAI_API_KEY set
  gauntlet run examples/incident-desk --agent 'cmd:python3 examples/agents/openai_agent.py' \
      --replay cassette.jsonl                                                # no key needed
"""
import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from openai import OpenAI

MODEL = os.environ.get("GAUNTLET_MODEL", "gpt-4o-mini")


def text_of(result):
    return "".join(getattr(c, "text", "") for c in result.content)


async def main():
    case = json.load(sys.stdin)
    llm = OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY come from gauntlet
    url, token = os.environ["GAUNTLET_MCP_URL"], os.environ["GAUNTLET_MCP_TOKEN"]
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http, streamable_http_client(url, http_client=http, terminate_on_close=False) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                                       "parameters": t.inputSchema if hasattr(t, "inputSchema") else t.input_schema}}
                     for t in (await session.list_tools()).tools]
            messages = [{"role": "system", "content": "Use the tools. Confirm with gauntlet_confirm before changes."},
                        {"role": "user", "content": case["user_input"]}]
            for _ in range(8):
                reply = llm.chat.completions.create(model=MODEL, messages=messages, tools=tools)
                message = reply.choices[0].message
                if not message.tool_calls:
                    return message.content or ""
                messages.append({"role": "assistant", "content": message.content or "",
                                 "tool_calls": [c.model_dump() for c in message.tool_calls]})
                for call in message.tool_calls:
                    result = await session.call_tool(call.function.name, json.loads(call.function.arguments or "{}"))
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": text_of(result)})
                # The last word is streamed, to show time to first token.
                if len(messages) > 3:
                    stream = llm.chat.completions.create(model=MODEL, messages=messages, tools=tools, stream=True,
                                                         stream_options={"include_usage": True})
                    parts = [c.choices[0].delta.content or "" for c in stream if c.choices]
                    if "".join(parts).strip():
                        return "".join(parts)
            return "I ran out of steps."


if __name__ == "__main__":
    print(asyncio.run(main()))

"""An agent built with the OpenAI Agents SDK (PyPI `openai-agents`), as it would run anywhere:
the world's tools through the SDK's own MCP client (`MCPServerStreamableHttp`), its model through
gauntlet's LLM gateway (OPENAI_BASE_URL and a per-trial OPENAI_API_KEY, which gauntlet sets).

  gauntlet run examples/incident-desk --agent 'cmd:python3 examples/agents/openai_agents_sdk.py' \
      --filter close --replay-cassette examples/incident-desk/cassettes/openai-agents.jsonl

The cassette was recorded from llama-cpp-python's server (SmolLM2-135M-Instruct, GAUNTLET_MODEL
smollm2) with `--gateway-upstream URL --record-cassette FILE --concurrency 1`; it replays with no
server and no key. The model is tiny: the point is the wiring, not the answers.
"""
import asyncio
import json
import os
import sys

from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.exceptions import AgentsException
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI

MODEL = os.environ.get("GAUNTLET_MODEL", "smollm2")
INSTRUCTIONS = "You run an incident desk. Use the tools. Confirm with gauntlet_confirm before any change."


async def main():
    case = json.load(sys.stdin)
    set_tracing_disabled(True)  # traces stay here: gauntlet records the trajectory
    world = MCPServerStreamableHttp(
        name="world",
        params={
            "url": os.environ["GAUNTLET_MCP_URL"],
            "headers": {"Authorization": f"Bearer {os.environ['GAUNTLET_MCP_TOKEN']}"},
        },
        cache_tools_list=True,
    )
    async with world:
        agent = Agent(
            name="incident desk",
            instructions=INSTRUCTIONS,
            mcp_servers=[world],
            # The model picks the incident to read, and the tool's answer is the agent's: the
            # server the cassette was recorded from (llama-cpp-python) refuses the SDK's next
            # turn (an assistant message without content), so this agent makes one model call.
            model_settings=ModelSettings(tool_choice="get_incident"),
            tool_use_behavior="stop_on_first_tool",
            model=OpenAIChatCompletionsModel(model=MODEL, openai_client=AsyncOpenAI()),
        )
        try:
            result = await Runner.run(agent, case["user_input"], max_turns=4)
        except AgentsException as e:  # out of turns, a reply the SDK cannot use
            return f"I could not finish: {type(e).__name__}"
        return str(result.final_output or "")


if __name__ == "__main__":
    print(asyncio.run(main()))

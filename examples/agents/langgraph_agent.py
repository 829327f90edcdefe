"""An agent built with LangGraph: a graph whose tool node runs the world's tools through
`langchain-mcp-adapters` (MCP's streamable HTTP), its model through gauntlet's LLM gateway
(`langchain-openai`'s ChatOpenAI reads OPENAI_BASE_URL and OPENAI_API_KEY, which gauntlet sets).

  gauntlet run examples/incident-desk \
      --agent 'cmd:.venvs/langgraph/bin/python examples/agents/langgraph_agent.py' \
      --filter close --replay-cassette examples/incident-desk/cassettes/langgraph.jsonl

langchain-mcp-adapters 0.3 wants mcp 1 while other tools here want mcp 2, so it lives in a
virtual environment of its own (`.ci/run` makes `.venvs/langgraph`). The cassette was recorded
from llama-cpp-python's server (SmolLM2-135M-Instruct) and replays with no server and no key.
"""
import asyncio
import json
import os
import sys
from typing import Annotated, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

MODEL = os.environ.get("GAUNTLET_MODEL", "smollm2")
INSTRUCTIONS = "You run an incident desk. Read the incident the user names."


class State(TypedDict):
    messages: Annotated[list, add_messages]


def desk(model, tools):
    """Three nodes: the model picks the incident to read (a forced tool choice: the model is
    tiny), the world's tool reads it, the model answers from the record. The answer's prompt
    holds the record, not the tool-calling turn, which the recording server refuses."""
    lookup = model.bind_tools(tools, tool_choice="get_incident")

    async def pick(state):
        return {"messages": [await lookup.ainvoke([SystemMessage(INSTRUCTIONS), *state["messages"]])]}

    async def answer(state):
        # The record's text: the message's content blocks carry ids made afresh on every run.
        request, record = state["messages"][0].text, state["messages"][-1].text
        prompt = [SystemMessage(f"Answer the user from this record: {record}"), HumanMessage(request)]
        return {"messages": [await model.ainvoke(prompt)]}

    graph = StateGraph(State)
    graph.add_node("pick", pick)
    graph.add_node("tools", ToolNode(tools))
    graph.add_node("answer", answer)
    graph.add_edge(START, "pick")
    graph.add_edge("pick", "tools")
    graph.add_edge("tools", "answer")
    graph.add_edge("answer", END)
    return graph.compile()


async def main():
    case = json.load(sys.stdin)
    client = MultiServerMCPClient({
        "world": {
            "transport": "streamable_http",
            "url": os.environ["GAUNTLET_MCP_URL"],
            "headers": {"Authorization": f"Bearer {os.environ['GAUNTLET_MCP_TOKEN']}"},
        }
    })
    tools = await client.get_tools()
    agent = desk(ChatOpenAI(model=MODEL, temperature=0, max_tokens=200), tools)
    state = await agent.ainvoke({"messages": [HumanMessage(case["user_input"])]})
    return str(state["messages"][-1].content or "")


if __name__ == "__main__":
    print(asyncio.run(main()))

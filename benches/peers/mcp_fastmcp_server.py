"""FastMCP (the `fastmcp` package from PyPI) serving the example suite's get_incident tool over
streamable HTTP: the peer of `gauntlet serve --http` in benches/peers/mcp.sh. The incident is the
one the example world holds; the tool checks its argument as gauntlet's schema does.

usage: python3 mcp_fastmcp_server.py PORT [sessions|stateless]

`sessions` (the default) is FastMCP's default: a session per client, every answer an SSE stream.
`stateless` is its fastest setting for plain tool calls, the one gauntlet's world server uses:
no sessions and JSON answers (`stateless_http=True, json_response=True`).
"""
import re
import sys

from fastmcp import FastMCP

INCIDENTS = {
    "INC-004218": {"id": "INC-004218", "title": "Search index lagging", "status": "open",
                   "severity": "sev3", "assignee": "user-13", "tenant": "acme", "notes": []},
}

server = FastMCP("incident-desk")


@server.tool
def get_incident(incident_id: str) -> dict:
    """Read one incident by id."""
    if not re.fullmatch(r"INC-[0-9]{6}", incident_id):
        raise ValueError("invalid incident_id")
    if incident_id not in INCIDENTS:
        raise ValueError("not found")
    return INCIDENTS[incident_id]


stateless = len(sys.argv) > 2 and sys.argv[2] == "stateless"
server.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), show_banner=False, log_level="warning",
           stateless_http=stateless, json_response=stateless)

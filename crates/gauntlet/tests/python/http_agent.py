"""A tiny agent service for tests: gauntlet POSTs each trial here. It looks the incident up over
MCP (official `mcp` client) and answers `{"final_answer": ...}`; a request whose input mentions
"explode" gets a 500. Usage: http_agent.py PORT_FILE
"""
import asyncio
import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


async def answer(trial):
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {trial['mcp']['token']}"})
    async with client, streamable_http_client(trial["mcp"]["url"], http_client=client, terminate_on_close=False) as (r, w, *_):
        async with ClientSession(r, w) as session:
            await session.initialize()
            ids = re.findall(r"INC-\d{6}", trial["user_input"])
            got = await session.call_tool("get_incident", {"incident_id": ids[0]})
            status = json.loads("".join(getattr(c, "text", "") for c in got.content)).get("status")
            return f"{ids[0]} is {status}."


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        trial = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "explode" in trial["user_input"]:
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"kaboom")
            return
        body = json.dumps({"final_answer": asyncio.run(answer(trial))}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[1], "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()

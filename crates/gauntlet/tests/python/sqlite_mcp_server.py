"""A SQLite MCP server (the official Python SDK's MCPServer, on stdio) with the tool names of
PyPI's mcp-server-sqlite, whose 2025.4.25 release does not run on the mcp 2.x SDK.
Usage: sqlite_mcp_server.py --db-path PATH"""
import json
import sqlite3
import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

db = sys.argv[sys.argv.index("--db-path") + 1]
server = MCPServer("sqlite")


def rows(cursor):
    names = [d[0] for d in cursor.description or []]
    return [dict(zip(names, r)) for r in cursor.fetchall()]


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def read_query(query: str) -> str:
    """Runs a SELECT query and returns its rows as JSON."""
    with sqlite3.connect(db) as conn:
        return json.dumps(rows(conn.execute(query)))


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
def write_query(query: str) -> str:
    """Runs an INSERT, UPDATE or DELETE query and returns the number of rows it changed."""
    with sqlite3.connect(db) as conn:
        changed = conn.execute(query).rowcount
    return json.dumps({"affected_rows": changed})


if __name__ == "__main__":
    server.run()

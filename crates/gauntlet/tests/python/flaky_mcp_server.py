"""An MCP server (the official Python SDK's MCPServer, on stdio) that misbehaves on request, for
the shadow proxy's tests: `echo` answers, `crash` kills the process, `hang` never answers."""
import os
import time

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("flaky")
READ = ToolAnnotations(readOnlyHint=True)


@server.tool(annotations=READ)
def echo(text: str) -> str:
    """Returns the text."""
    return text


@server.tool(annotations=READ)
def crash() -> str:
    """Exits the server process at once."""
    os._exit(7)


@server.tool(annotations=READ)
def hang() -> str:
    """Never answers."""
    while True:
        time.sleep(60)


if __name__ == "__main__":
    server.run()

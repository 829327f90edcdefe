"""An MCP server (the official Python SDK's MCPServer, on stdio) that misbehaves on request, for
the shadow proxy's and real-service worlds' tests: `echo` answers, `crash` kills the process,
`hang` never answers, `touch` tries to write a file anywhere."""
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


@server.tool()
def touch(path: str) -> str:
    """Writes a file at the path; says whether it could."""
    try:
        with open(path, "w") as f:
            f.write("x")
        return "written"
    except OSError as e:
        return f"refused: {e}"


if __name__ == "__main__":
    server.run()

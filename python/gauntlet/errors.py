"""The exceptions gauntlet raises: the same kinds as the command's exit codes."""

from __future__ import annotations

from typing import Optional


class GauntletError(Exception):
    """Anything gauntlet could not do. ``exit_code`` is the command's code for the same error."""

    exit_code: int = 3


class InvalidInputError(GauntletError):
    """The input is wrong: a case, world, configuration, argument or stored file (exit code 2).

    Suite problems come one per line as ``file:line:col: message``.
    """

    exit_code = 2


class HarnessError(GauntletError):
    """The harness itself could not run: a disk, a socket, a runtime (exit code 3)."""

    exit_code = 3


class ToolError(Exception):
    """A tool call failed as the world answered it: an HTTP-like ``status`` (400 invalid
    arguments, 403 forbidden, 404 not found, 409, 429 rate limited, 503, 504), the ``message``
    the agent sees, and ``retry_after_s`` when the world said how long to wait.

    It is what the agent sees, recorded in the trajectory, never a harness failure: catch it
    as an agent would handle an API error.
    """

    def __init__(self, status: int, message: str, retry_after_s: Optional[float] = None):
        self.status = status
        self.message = message
        self.retry_after_s = retry_after_s
        text = f"error {status}: {message}"
        if retry_after_s is not None:
            text += f" (retry after {retry_after_s:g} s)"
        super().__init__(text)

    def __reduce__(self):
        return (ToolError, (self.status, self.message, self.retry_after_s))


__all__ = ["GauntletError", "InvalidInputError", "HarnessError", "ToolError"]

"""The ``gauntlet`` command of the Python package: the same program as the Rust binary, run in
this process by the extension."""

from __future__ import annotations

import signal
import sys


def main() -> None:
    from gauntlet import _native

    # The command handles Ctrl-C and SIGTERM itself (it stops the run and says how to resume);
    # Python's handler would only set a flag nobody reads while the command works.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.stdout.flush()
    sys.exit(_native.cli(sys.argv[1:]))


if __name__ == "__main__":
    main()

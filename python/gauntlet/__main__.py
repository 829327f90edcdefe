"""``python -m gauntlet``: the ``gauntlet`` command."""

from gauntlet._cli import main

main()

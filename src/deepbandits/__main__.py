"""``python -m deepbandits``: the command line (see :mod:`deepbandits.cli`)."""

import sys

from deepbandits.cli import main

if __name__ == "__main__":  # not when a spawned process imports it
    sys.exit(main())

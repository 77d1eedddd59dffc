"""``python -m deepbandits``: the command line (see :mod:`deepbandits.cli`)."""

import sys

from deepbandits.cli import main

sys.exit(main())

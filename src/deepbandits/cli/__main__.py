"""``python -m deepbandits.cli``: the command line, as ``deepbandits``."""

import sys

from deepbandits.cli import main

sys.exit(main())

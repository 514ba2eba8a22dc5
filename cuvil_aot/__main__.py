"""``python -m cuvil_aot``: see cli.py."""

import sys

from cuvil_aot.cli import main

sys.exit(main())

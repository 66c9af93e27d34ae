"""`python -m tracetrim` runs the CLI."""

import sys

from tracetrim.cli import main

sys.exit(main())

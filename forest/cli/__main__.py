"""`python -m forest.cli`, the same as the `forest` console script."""
import sys

from forest.cli import main

sys.exit(main())

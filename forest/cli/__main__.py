"""`python -m forest.cli`, the same as the `forest` console script."""
import sys

from forest.cli import main

if __name__ == "__main__":  # importing every module (as tests/test_regex_time.py does) must not run it
    sys.exit(main())

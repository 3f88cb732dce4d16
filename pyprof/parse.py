"""`python -m pyprof.parse DB > net.dict`: reserved for the parse stage (issue #3)."""

import sys

from pyprof.cli import not_yet

if __name__ == "__main__":
    sys.exit(not_yet("parse", 3))

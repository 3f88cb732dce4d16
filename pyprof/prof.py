"""`python -m pyprof.prof net.dict`: reserved for the prof stage (issue #4)."""

import sys

from pyprof.cli import not_yet

if __name__ == "__main__":
    sys.exit(not_yet("prof", 4))

"""`python -m pyprof.prof [options] net.dict`: the prof stage (C++: prof/ + models/, pyprof-prof).

FLOPs, bytes, arithmetic intensity and Tensor Core use per kernel (or per op on a CPU-only
profile), as PyProf's columns or DLProf-style reports. `--help` lists the options.
"""

import sys

from pyprof.cli import main

if __name__ == "__main__":
    sys.exit(main(["prof", *sys.argv[1:]]))

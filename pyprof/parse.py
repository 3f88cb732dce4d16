"""`python -m pyprof.parse DB [-o FILE] > net.dict`: the parse stage (C++: parse/, pyprof-parse).

Attributes every GPU kernel of an Nsight Systems, nvprof or pyprof database to its op, module,
user ranges and direction, and writes JSON Lines (docs/formats.md §3).
"""

import sys

from pyprof import _tools

if __name__ == "__main__":
    sys.exit(_tools.exec_tool("pyprof-parse", sys.argv[1:]))

import sys

from pyprof.cli import main

sys.exit(main())

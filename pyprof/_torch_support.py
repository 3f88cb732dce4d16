"""The torch releases pyprof builds against (the one home of that range), and the torch this
build of pyprof was compiled against.

pyprof._C is compiled against the user's own torch (RecordFunction and c10 types are C++ API,
not ABI-stable), so the oldest release whose headers have what csrc/annotate uses is a fact
measured by scripts/torch_headers_check.py, not a guess. setup.py, scripts/setup.sh and
CMakeLists.txt all read MIN_TORCH from this file; docs/install.md lists what was checked.
"""

from __future__ import annotations

import importlib
import re
import sysconfig
from types import ModuleType

# torch 2.6 lacks RecordFunction::overload_name(), and its pip wheels (like every release's
# before 2.7) use the pre-C++11 string ABI, which the rest of pyprof cannot share a library with.
MIN_TORCH = "2.7"


def version_tuple(version: str) -> tuple[int, ...]:
    """(2, 11, 0) for '2.11.0+cu130', (2, 13) for '2.13.0a0+git...'-style strings' release part."""
    match = re.match(r"\s*(\d+(?:\.\d+)*)", version)
    if not match:
        raise ValueError(f"not a version: {version!r}")
    return tuple(int(part) for part in match.group(1).split("."))


def is_supported(version: str) -> bool:
    """True when a torch of this version is new enough to build pyprof against."""
    have = version_tuple(version)
    need = version_tuple(MIN_TORCH)
    width = max(len(have), len(need))
    return have + (0,) * (width - len(have)) >= need + (0,) * (width - len(need))


def build_info() -> ModuleType | None:
    """What CMake recorded about the build of pyprof._C for this interpreter (torch version, C++
    standard, CUPTI API, compiler), or None when it is not built. Importing it loads no torch."""
    soabi = (sysconfig.get_config_var("SOABI") or "").replace("-", "_")
    try:
        return importlib.import_module(f"pyprof._build_info_{soabi}")
    except ImportError:
        return None

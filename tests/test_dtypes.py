"""The one dtype table (csrc/common/dtypes.h) as the Python front holds it.

pyprof/_dtypes.py is generated from `pyprof-prof --list-dtypes`; this test fails when the two
differ (PYPROF_UPDATE_GOLDENS=1 rewrites the file), and checks the table's Inductor prefixes
against torch.fx's own (`dtype_abbrs`, what Inductor prints in its FX annotations), so that
pyprof/_compile_kernels.py reads every dtype torch can annotate.
"""

import json
import os

import pytest
import torch
import torch.fx.graph

import testlib
from pyprof import _compile_kernels, _dtypes

pytestmark = pytest.mark.needs_build

GENERATED = os.path.join(testlib.ROOT, "pyprof", "_dtypes.py")
HEADER = '''"""The dtype table of csrc/common/dtypes.h for the Python front: (PyTorch name, bytes per
element, Inductor's FX annotation prefix), as `pyprof-prof --list-dtypes` prints it.

Generated: edit the C++ table, then `PYPROF_UPDATE_GOLDENS=1 python -m pytest
tests/test_dtypes.py` rewrites this file (the test fails while the two differ).
"""

DTYPES = (
'''
FOOTER = '''\
)
# Inductor's prefix -> PyTorch name ("f32" -> "float32").
BY_INDUCTOR = {inductor: name for name, _, inductor in DTYPES if inductor}
'''


def listed_dtypes() -> list[dict]:
    res = testlib.run_tool(testlib.PROF, "--list-dtypes", timeout=60)
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()]


def test_generated_table_is_the_cpp_table():
    text = HEADER + "".join(f'    ("{d["name"]}", {d["size"]}, "{d["inductor"]}"),\n'
                            for d in listed_dtypes()) + FOOTER
    if os.environ.get("PYPROF_UPDATE_GOLDENS") == "1":
        with open(GENERATED, "w", encoding="utf-8") as f:
            f.write(text)
    with open(GENERATED, encoding="utf-8") as f:
        assert f.read() == text, ("pyprof/_dtypes.py differs from `pyprof-prof --list-dtypes`: "
                                  "PYPROF_UPDATE_GOLDENS=1 rewrites it")


def test_table_knows_every_prefix_torch_fx_prints():
    by_inductor = {d["inductor"]: d for d in listed_dtypes() if d["inductor"]}
    for dtype, prefix in torch.fx.graph.dtype_abbrs.items():
        assert prefix in by_inductor, f"{dtype} ({prefix}) is missing from common/dtypes.h"
        assert by_inductor[prefix]["name"] == str(dtype).removeprefix("torch.")


def test_sizes_are_torchs():
    """Each dtype torch has and pyprof costs per element: torch's element size (sub-byte and
    bit types are 0: not costed per element, docs/ops.md)."""
    checked = 0
    for d in listed_dtypes():
        dtype = getattr(torch, d["name"], None)
        if isinstance(dtype, torch.dtype) and d["size"]:
            assert d["size"] == dtype.itemsize, d["name"]
            checked += 1
    assert checked >= 25


def test_compile_kernels_reads_each_prefix_through_the_table():
    for name, _, prefix in _dtypes.DTYPES:
        if not prefix:
            continue
        tensor = _compile_kernels.tensor_of(f"{prefix}[4, 8][8, 1]cpu")
        assert tensor["dtype"] == name
    # A prefix the table lacks stays as Inductor wrote it, for prof to report unknown.
    assert _compile_kernels.tensor_of("x99[4][1]cpu")["dtype"] == "x99"

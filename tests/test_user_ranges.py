"""User ranges (`pyprof.range`, `pyprof.annotate`, `pyprof.mark`) as they land in the database."""

import pytest

import testlib
from pyprof_db import MARK, PUSH_POP, ops, profile, read_ranges

pytestmark = pytest.mark.needs_build
SCRIPT = testlib.script("user_ranges.py")


@pytest.fixture(scope="module")
def ranges(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("user_ranges")
    result = profile(tmp, SCRIPT)
    assert result.returncode == 0, result.stderr
    assert "ValueError: unknown color 'not-a-color'" in result.stdout
    return read_ranges(str(tmp / "net.sqlite"))


def one(ranges, text, domain=""):
    found = [r for r in ranges if r.marker is None and r.text == text and r.domain == domain]
    assert len(found) == 1, (text, domain, found)
    return found[0]


def test_decorators_and_context_managers(ranges):
    outer = one(ranges, "outer")
    assert outer.event_type == PUSH_POP and outer.color == 0x80112233
    bare = one(ranges, "bare_decorated")  # a bare @annotate is named after the function
    load = one(ranges, "load batch", domain="data")
    assert load.color == 0xFF0000FF
    inner = one(ranges, "inner as context manager")
    for r in (bare, load, inner):
        assert outer.encloses(r), r
        assert r.color is None or r is load
    # Each range encloses the ops called inside it.
    names_in = lambda r: {o.marker["op"] for o in ops(ranges) if r.encloses(o)}  # noqa: E731
    assert "aten::sum" in names_in(bare)
    assert "aten::add" in names_in(load)
    assert "aten::cumsum" in names_in(inner)


def test_range_closes_when_the_function_raises(ranges):
    raised = one(ranges, "raises")
    assert raised.end is not None
    assert "aten::neg" in {o.marker["op"] for o in ops(ranges) if raised.encloses(o)}
    assert one(ranges, "outer").encloses(raised)


def test_marks(ranges):
    mark = one(ranges, "checkpoint")
    assert mark.event_type == MARK and mark.end is None and mark.color == 0xFFFF0000
    assert one(ranges, "outer").start <= mark.start <= one(ranges, "outer").end
    assert one(ranges, "named-domain mark", domain="data").event_type == MARK


def test_user_ranges_are_harmless_without_a_tool():
    import subprocess

    result = subprocess.run([testlib.PY, SCRIPT], capture_output=True, text=True,
                            env=testlib.pyprof_env(), timeout=120)
    assert result.returncode == 0, result.stderr
    assert "no NVTX tool is attached" in result.stderr


def test_a_failing_module_namer_never_breaks_the_program(tmp_path):
    """If naming a module raises, the error is reported once and the forward still runs."""
    script = tmp_path / "namer.py"
    script.write_text(
        "import torch, pyprof\n"
        "pyprof.init()\n"
        "from pyprof import _C\n"
        "_C.set_module_namer(lambda module, parent: 1 / 0)\n"
        "m = torch.nn.Linear(2, 2)\n"
        "print(tuple(m(torch.ones(1, 2)).shape), tuple(m(torch.ones(1, 2)).shape))\n")
    result = profile(tmp_path, str(script))
    assert result.returncode == 0, result.stderr
    assert "(1, 2) (1, 2)" in result.stdout
    assert result.stderr.count("ZeroDivisionError") == 1
    ranges = read_ranges(str(tmp_path / "net.sqlite"))
    assert not [r for r in ranges if r.marker is not None and "module" in r.marker]
    assert [r for r in ops(ranges) if r.marker["op"] == "aten::linear"]
    assert all(r.end is not None for r in ranges if r.event_type == PUSH_POP)

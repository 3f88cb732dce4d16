"""Golden outputs of prof's reports and diff's tables, one per format, on real traces.

Each format is pinned byte for byte (google/benchmark's output tests, without its wildcards:
every number here is deterministic): `--report all` as text (unlimited width, 120 and 80
columns), CSV and JSON, on a real GPU profile (DLProf's LeNet under nsys 2022.1, tests/data)
and a real CPU-only one (torch.profiler on a gloo rank, HTA's test trace), and `pyprof diff`'s
tables between two real A100 runs (HTA's record-shapes control and test). A change in any of
them fails here with the first differing line; when the change is meant, regenerate with

    PYPROF_UPDATE_GOLDENS=1 python -m pytest tests/test_report_golden.py

and say in the commit what changed and why (tests/data/golden/README.md).
"""

import difflib
import os
import shutil

import pytest

import testlib
from testlib import DATA

pytestmark = pytest.mark.needs_build

GOLDEN = os.path.join(DATA, "golden")
UPDATE = os.environ.get("PYPROF_UPDATE_GOLDENS") == "1"
INPUTS = {
    "lenet-gpu": "nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite",
    "gloo-cpu": "kineto_hta-cpu-only-gloo-rank34.json.gz",
}
DIFF_INPUTS = ("kineto_hta-a100-record-shapes-control.json.gz",
               "kineto_hta-a100-record-shapes-test.json.gz")


def check_golden(name: str, text: str) -> None:
    path = os.path.join(GOLDEN, name)
    if UPDATE:
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        return
    with open(path, encoding="utf-8", newline="") as f:
        want = f.read()
    if text != want:
        diff = "".join(list(difflib.unified_diff(want.splitlines(True), text.splitlines(True),
                                                 f"golden/{name}", "now", n=1))[:60])
        pytest.fail(f"{name} differs from its golden (PYPROF_UPDATE_GOLDENS=1 rewrites it when "
                    f"the change is meant):\n{diff}")


@pytest.fixture(scope="module", params=sorted(INPUTS))
def profile(request, tmp_path_factory):
    """(name, net.dict) of a real trace, parsed once; the dict's file name is fixed, so that
    the reports quoting it read the same wherever the test runs."""
    work = tmp_path_factory.mktemp(request.param)
    testlib.parse_to(os.path.join(DATA, INPUTS[request.param]), work / "net.dict")
    return request.param, work


def prof_report(work, *args) -> str:
    res = testlib.run_tool(testlib.PROF, "--report", "all", *args, "net.dict", cwd=str(work),
                           timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout


@pytest.mark.parametrize("fmt", ["text", "csv", "json"])
def test_report_formats_match_their_goldens(profile, fmt):
    name, work = profile
    args = ["--formats", fmt] + (["-w", "0"] if fmt == "text" else [])
    check_golden(f"{name}.report.{fmt}", prof_report(work, *args))


@pytest.mark.parametrize("width", [80, 120])
def test_text_reports_fitted_to_a_width_match_their_goldens(profile, width):
    name, work = profile
    text = prof_report(work, "-w", str(width))
    check_golden(f"{name}.report.w{width}.text", text)


def test_diff_formats_match_their_goldens(tmp_path):
    paths = [os.path.join(testlib.SHARED_TRACES, "real", p) for p in DIFF_INPUTS]
    if not all(os.path.exists(p) for p in paths):
        pytest.skip("../shared/traces/real lacks HTA's record-shapes traces")
    # Copied and parsed under short names: the summary quotes each net.dict's source.
    for side, path, name in zip(("base", "new"), paths, ("control.json.gz", "test.json.gz")):
        shutil.copy(path, tmp_path / name)
        res = testlib.run_tool(testlib.PARSE, "-q", name, "-o", f"{side}.dict", cwd=str(tmp_path),
                               timeout=300)
        assert res.returncode == 0, res.stderr
    diff_tool = os.path.join(testlib.BIN, "pyprof-diff")
    for fmt in ("text", "csv", "json"):
        args = ["base.dict", "new.dict", "--report", "step,op_type,module", "--top", "15",
                "--formats", fmt]
        if fmt == "text":
            args += ["-w", "0"]
        res = testlib.run_tool(diff_tool, *args, cwd=str(tmp_path), timeout=300)
        assert res.returncode == 0, res.stderr
        check_golden(f"diff.{fmt}", res.stdout)

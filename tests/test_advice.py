"""advice and timemodel on a real GPU profile (the DLProf LeNet nsys database in tests/data)."""
import json
import subprocess
import sys
from pathlib import Path

import testlib

DATA = Path(__file__).parent / "data" / "nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite"


def _report(tmp_path, name):
    d = tmp_path / "lenet.dict"
    if not d.exists():
        subprocess.run([sys.executable, "-m", "pyprof", "parse", str(DATA), "-o", str(d)], check=True,
                       capture_output=True)
    out = subprocess.run([sys.executable, "-m", "pyprof", "prof", str(d), "--report", name, "--formats", "json"],
                         check=True, capture_output=True, text=True).stdout
    return testlib.report_rows(out)


def test_timemodel_fits_lenet_convolutions(tmp_path):
    rows = _report(tmp_path, "timemodel")
    conv = [r for r in rows if r.get("Family") == "conv" and "Points" in r]
    assert conv and conv[0]["Points"] == 46
    assert conv[0]["R2"] != "na" and float(conv[0]["R2"]) > 0.9
    few = [r for r in rows if r.get("Family") == "pointwise" and "Points" in r]
    assert few and few[0]["Note"].startswith("too few points")


def test_advice_on_lenet_finds_fp32_linears(tmp_path):
    rows = _report(tmp_path, "advice")
    rules = {r["Rule"]: r for r in rows}
    assert "fp32-tensor-cores" in rules
    assert "linear" in rules["fp32-tensor-cores"]["Evidence"]
    stakes = [float(r["Time at stake(ns)"]) for r in rows]
    assert stakes == sorted(stakes, reverse=True)

"""The torch flags a profiled program ran with (docs/formats.md §1.4): pyprof records them at
init() and at exit, parse keeps the last in the net.dict header (`torch_settings`), prof's
summary shows them and advice reads them (prof/advice_test.cpp: cudnn-benchmark-off)."""

import json
import re

import pytest

import pyprof_db
import testlib

pytestmark = pytest.mark.needs_build

torch = pytest.importorskip("torch")


def test_flags_set_after_init_are_the_ones_recorded(tmp_path):
    res = pyprof_db.profile(tmp_path, testlib.script("settings_program.py"))
    assert res.returncode == 0, res.stderr
    header, records, summary = testlib.parse(tmp_path / "net.sqlite")
    settings = header["torch_settings"]
    # The program set these after init(): the mark written at exit has them.
    assert settings["cudnn.benchmark"] is True
    assert settings["float32_matmul_precision"] == "high"
    assert settings["torch"] == torch.__version__
    threads = re.search(r"^num_threads=(\d+)$", res.stdout, re.M)
    assert threads, res.stdout
    assert settings["num_threads"] == int(threads.group(1))
    assert settings["deterministic_algorithms"] is False
    # Two settings marks (init, exit), counted as marks, and neither is a range or a record.
    assert "2 marks" in summary
    assert not [r for r in records if "settings" in json.dumps(r.get("user_ranges", []))]
    net_dict = "\n".join(json.dumps(x) for x in [header, *records]) + "\n"
    out = testlib.prof("--report", "summary", "--formats", "json", "-", stdin=net_dict).stdout
    rows = {r["Metric"]: r["Value"] for r in testlib.report_rows(out)}
    assert rows["torch settings"].startswith(
        "cudnn.benchmark true; TF32: cuDNN true, matmul true (precision high)")


def test_profiles_without_settings_have_no_header_key():
    header, _, _ = testlib.parse(testlib.DATA + "/synthetic_mlp.nsys.sqlite")
    assert "torch_settings" not in header

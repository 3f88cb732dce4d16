"""A full disk while profiling: `pyprof profile` must say so, name the file, exit non-zero and
say what was kept, and what was kept must be readable.

The disk fills in two ways, neither needing a real full file system:
  * RLIMIT_FSIZE (set for the launcher, inherited by the program): a write past the limit fails
    with EFBIG (SIGXFSZ is ignored), which SQLite reports as an I/O error. No privileges needed.
  * a small tmpfs, where writes fail with ENOSPC (SQLite: "database or disk is full"). Mounting
    needs root; the test skips with the reason where it cannot mount.
The program is a real model (examples/models.py's MLP) trained on the CPU.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import sqlite3
import subprocess

import pytest

import pyprof_db
import testlib

pytestmark = pytest.mark.needs_build

PROGRAM = testlib.script("disk_full_train.py")
# What the message says when a write failed, whatever the cause.
DISK_FULL = "disk full (or write failed)"


def profile_with_file_limit(tmp_path, limit_bytes: int, steps: int, warmup: int = 0,
                            exit_code: int = 0):
    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() then fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    cmd = [testlib.PY, "-m", "pyprof", "profile", "-o", str(tmp_path / "net"), "--",
           testlib.PY, PROGRAM, str(steps), str(warmup), str(exit_code)]
    env = testlib.pyprof_env({"PYTHONPATH": os.pathsep.join(
        [testlib.ROOT, os.path.join(testlib.ROOT, "examples")])})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env,
                          cwd=testlib.ROOT, preexec_fn=limit_file_size)


def launcher_error(stderr: str) -> str:
    """The launcher's one disk-full error line."""
    lines = [line for line in stderr.splitlines()
             if line.startswith("pyprof: error: ") and DISK_FULL in line]
    assert len(lines) == 1, stderr
    return lines[0]


def kept_counts(line: str) -> dict[str, int]:
    """The numbers of "kept R ranges, M marks and K kernels; dropped E NVTX events and C CUDA
    records" in the launcher's message."""
    match = re.search(r"kept (\d+) ranges, (\d+) marks and (\d+) kernels; dropped (\d+) NVTX "
                      r"events and (\d+) CUDA records", line)
    assert match, line
    keys = ("ranges", "marks", "kernels", "events_dropped", "cuda_dropped")
    return dict(zip(keys, map(int, match.groups())))


def assert_no_wrong_advice(stderr: str) -> None:
    # Buffers did not overflow: raising the buffer limit would not help.
    assert "PYPROF_BUFFER_MB" not in stderr, stderr
    # The program did make NVTX calls; its database could not be written.
    assert "made no NVTX calls" not in stderr, stderr


def test_disk_full_at_schema_creation(tmp_path):
    """Not even the schema fits: nothing usable is kept, and the message says so."""
    result = profile_with_file_limit(tmp_path, 2048, steps=3)
    assert result.returncode == 1, result.stderr
    line = launcher_error(result.stderr)
    assert str(tmp_path / "net.sqlite") in line, line
    assert "nothing usable was kept (the file was removed)" in line, line
    assert_no_wrong_advice(result.stderr)
    # An empty or cut-off file would only make the next run need --force.
    assert not list(tmp_path.glob("net*.sqlite*")), list(tmp_path.iterdir())


def test_program_status_wins_over_disk_full(tmp_path):
    """A program that failed itself keeps its exit status; the disk is still reported."""
    result = profile_with_file_limit(tmp_path, 2048, steps=1, exit_code=3)
    assert result.returncode == 3, result.stderr
    assert str(tmp_path / "net.sqlite") in launcher_error(result.stderr)


def check_cut_short(tmp_path, result, limit_bytes: int | None) -> None:
    """A database that filled up midway: the message's counts are what the file holds, the file
    parses, and whatever finalization record made it in says the writes failed."""
    db = tmp_path / "net.sqlite"
    assert result.returncode == 1, result.stderr
    line = launcher_error(result.stderr)
    assert str(db) in line, line
    assert_no_wrong_advice(result.stderr)
    if limit_bytes is not None:
        assert db.stat().st_size <= limit_bytes
    counts = kept_counts(line)
    ranges = pyprof_db.read_ranges(str(db))  # independent reader: what the file really holds
    assert counts["ranges"] == sum(r.event_type != pyprof_db.MARK for r in ranges), line
    assert counts["marks"] == sum(r.event_type == pyprof_db.MARK for r in ranges), line
    assert counts["ranges"] > 0 and counts["events_dropped"] > 0, line
    assert counts["kernels"] == 0 and counts["cuda_dropped"] == 0, line  # CPU only

    # What was kept is a readable trace: parse attributes the kept ops, and says the capture
    # is incomplete (in its summary and in the net.dict header), however far the final record got.
    header, records, summary = testlib.parse(db)
    assert any(r.get("op") == "aten::addmm" for r in records), records[:3]

    # The finalization record, where it fit, must not claim a complete database.
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        stats = dict(con.execute("SELECT name, value FROM PYPROF_COLLECTOR_STATS"))
        capture = dict(con.execute("SELECT name, value FROM META_DATA_CAPTURE"))
    finally:
        con.close()
    if stats:
        assert stats["write_errors"] > 0, stats
        assert stats["events_write_failed"] == counts["events_dropped"], stats
        assert DISK_FULL in capture.get("PYPROF_WRITE_ERROR", ""), capture
        assert header["write_failure"] == {
            "message": capture["PYPROF_WRITE_ERROR"], "events_lost": counts["events_dropped"],
            "cuda_records_lost": 0}, header
        assert "capture is incomplete: the collector's writes failed" in summary, summary
        assert f"{counts['events_dropped']:,} events" in summary, summary
    else:
        assert "PYPROF_WRITE_ERROR" not in capture and "FINALIZED_BY" not in capture, capture
        assert "unfinished_capture" in header, header
        assert "capture was not finished" in summary, summary


def test_disk_full_midway(tmp_path):
    """The file limit is reached after the warm-up steps were committed."""
    limit = 256 * 1024
    result = profile_with_file_limit(tmp_path, limit, steps=400, warmup=2)
    check_cut_short(tmp_path, result, limit)


@pytest.fixture
def small_tmpfs(tmp_path):
    mount_point = tmp_path / "small-disk"
    mount_point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root; the RLIMIT_FSIZE tests cover the rest")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs",
                              str(mount_point)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)


def test_disk_full_on_a_full_file_system(small_tmpfs):
    """ENOSPC (SQLITE_FULL): the rolled-back transactions free room, so the small final record
    fits; it must still say the database is incomplete."""
    cmd = [testlib.PY, "-m", "pyprof", "profile", "-o", str(small_tmpfs / "net"), "--",
           testlib.PY, PROGRAM, "400", "2"]
    env = testlib.pyprof_env({"PYTHONPATH": os.pathsep.join(
        [testlib.ROOT, os.path.join(testlib.ROOT, "examples")])})
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env,
                            cwd=testlib.ROOT)
    check_cut_short(small_tmpfs, result, None)

"""Bad input to `pyprof parse`: a clear one-line error and exit 1 (bad input) or 2 (usage),
or a counted warning; never a crash, a hang or output that silently lost records."""

import json
import os
import shutil
import sqlite3
import stat
import subprocess

import pytest

import testlib

pytestmark = pytest.mark.needs_build

LENET = os.path.join(testlib.DATA, "nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite")


def run(*args, timeout=60):
    """pyprof-parse ARGS, whatever its exit status: (returncode, stdout, stderr)."""
    res = testlib.run_tool(testlib.PARSE, *args, timeout=timeout)
    return res.returncode, res.stdout, res.stderr


def test_usage_errors_exit_2():
    rc, out, err = run()
    assert rc == 2 and "input is required" in err and out == ""
    rc, _, err = run(LENET, "--no-such-option")
    assert rc == 2 and "--no-such-option" in err
    rc, out, _ = run("--help")
    assert rc == 0 and "JSON Lines" in out


def test_python_entry_points(tmp_path):
    """`python -m pyprof.parse` and `pyprof parse` reach the same tool."""
    out = tmp_path / "a.dict"
    for cmd in ([testlib.PY, "-m", "pyprof.parse", LENET, "-o", str(out)],
                [testlib.PY, "-m", "pyprof", "parse", LENET, "-q", "-o", str(out)]):
        res = subprocess.run(cmd, capture_output=True, text=True, cwd=testlib.ROOT, timeout=60)
        assert res.returncode == 0, res.stderr
        assert gpu_lines(out.read_text()) == 1 + 59 + 13 + 4


@pytest.mark.parametrize("content, message", [
    (None, "cannot open"),
    (b"", "empty file"),
    (b"hello, I am a text file\n" * 10, "not an SQLite database"),
    (b"SQLite format 3\x00" + b"\x00" * 50, ""),  # header only: truncated
])
def test_not_a_database(tmp_path, content, message):
    path = tmp_path / "x.sqlite"
    if content is not None:
        path.write_bytes(content)
    rc, out, err = run(path)
    assert rc == 1
    assert out == ""
    assert err.startswith("pyprof parse: error: ") and str(path) in err
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_database_without_profile_tables(tmp_path):
    path = tmp_path / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE users (name TEXT)")
    con.commit()
    con.close()
    rc, _, err = run(path)
    assert rc == 1 and "no profile tables" in err


def test_missing_essential_column(tmp_path):
    path = tmp_path / "bad.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (foo INTEGER)")
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1)")
    con.commit()
    con.close()
    rc, _, err = run(path)
    assert rc == 1 and "CUPTI_ACTIVITY_KIND_KERNEL" in err and "'start'" in err


def test_truncated_database(tmp_path):
    """A database cut short (copy interrupted): an error naming the file, or records with a
    warning; never a crash."""
    data = open(LENET, "rb").read()
    for cut in (4096, len(data) // 3, len(data) // 2, len(data) - 4096):
        path = tmp_path / f"cut{cut}.sqlite"
        path.write_bytes(data[:cut])
        rc, out, err = run(path)
        assert rc in (0, 1), err
        if rc == 1:
            assert err.startswith("pyprof parse: error: ") and str(path) in err
        else:
            json.loads(out.splitlines()[0])


def test_corrupted_pages(tmp_path):
    """Bytes overwritten in the middle of the file (bad disk, partial write)."""
    data = bytearray(open(LENET, "rb").read())
    for offset in range(8192, len(data), 65536):
        bad = bytearray(data)
        bad[offset:offset + 512] = b"\xff" * 512
        path = tmp_path / f"bad{offset}.sqlite"
        path.write_bytes(bad)
        rc, out, err = run(path)
        assert rc in (0, 1), err
        if rc == 1:
            assert "pyprof parse: error: " in err
        else:
            for line in out.splitlines():
                json.loads(line)


def test_empty_profile(tmp_path):
    """What the launcher writes for a program that made no NVTX call: a valid, empty profile."""
    path = tmp_path / "empty.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, "
                "eventType INTEGER NOT NULL, text TEXT, globalTid INTEGER, domainId INTEGER, "
                "textId INTEGER)")
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    con.commit()
    con.close()
    rc, out, err = run(path)
    assert rc == 0
    header, = [json.loads(line) for line in out.splitlines()]
    assert header["pyprof_dict"] == 2 and header["records"] == "op"
    assert "empty profile" in err


def test_unwritable_output(tmp_path):
    rc, _, err = run(LENET, "-o", tmp_path / "no" / "such" / "dir" / "x.dict")
    assert rc == 1 and "cannot write" in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_disk_full():
    rc, _, err = run(LENET, "-o", "/dev/full")
    assert rc == 1 and "No space left" in err
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode), "a failed write must not remove a device"
    with open("/dev/full", "w") as full:
        res = subprocess.run([testlib.PARSE, LENET, "-q"], stdout=full, stderr=subprocess.PIPE,
                             text=True, timeout=60)
    assert res.returncode == 1 and "writing standard output failed" in res.stderr


def test_read_only_database_copy(tmp_path):
    """Reading never writes: a read-only file in a read-only folder parses."""
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "lenet.sqlite"
    shutil.copy(LENET, path)
    os.chmod(path, 0o444)
    os.chmod(folder, 0o555)
    try:
        rc, out, _ = run(path, "-q")
        assert rc == 0 and gpu_lines(out) == 1 + 76
        assert sorted(os.listdir(folder)) == ["lenet.sqlite"]
    finally:
        os.chmod(folder, 0o755)


@pytest.mark.parametrize("table, ddl, column", [
    # StringIds without its key: the error named SQLite's "no such column" and our SQL.
    ("StringIds", "CREATE TABLE StringIds (key INTEGER, value TEXT)", "id"),
    ("StringIds", "CREATE TABLE StringIds (id INTEGER, text TEXT)", "value"),
])
def test_unexpected_layout_is_named_in_the_users_terms(tmp_path, table, ddl, column):
    path = tmp_path / "odd.sqlite"
    con = sqlite3.connect(path)
    con.execute(ddl)
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, "
                "shortName INTEGER)")
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2, 3)")
    con.commit()
    con.close()
    rc, out, err = run(path)
    assert rc == 1 and out == ""
    assert err.startswith(f"pyprof parse: error: {path}: table {table} has no column "
                          f"'{column}' (not an Nsight Systems export"), err
    assert "SELECT" not in err and "no such column" not in err
    assert len(err.strip().splitlines()) == 1


def test_optional_tables_of_an_unexpected_layout_are_skipped_with_a_warning(tmp_path):
    """Metadata and statistics tables are optional: one without the columns parse reads is
    named in a warning, not an SQL error."""
    path = tmp_path / "odd.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)")
    con.execute("INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_NAME', 'pyprof')")
    con.execute("CREATE TABLE META_DATA_CAPTURE (key TEXT, data TEXT)")
    con.execute("CREATE TABLE PYPROF_COLLECTOR_STATS (counter TEXT, n INTEGER)")
    con.execute("CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, "
                "text TEXT, globalTid INTEGER)")
    con.execute("INSERT INTO NVTX_EVENTS VALUES (1, 2, 59, 'step', 0)")
    con.commit()
    con.close()
    rc, out, err = run(path)
    assert rc == 0, err
    assert "SELECT" not in err and "no such column" not in err
    assert "table META_DATA_CAPTURE has no column 'name'" in err
    assert "table PYPROF_COLLECTOR_STATS has no column 'name'" in err


def test_nsys_exports_are_never_called_unfinished():
    """Only pyprof's own databases carry a finalisation record; nsys exports never do."""
    rc, _, err = run(LENET)
    assert rc == 0 and "not finished" not in err


@pytest.mark.parametrize("name", ["report?1.sqlite", "run#2.sqlite", "50%.sqlite",
                                  "with space.sqlite"])
def test_any_file_name_opens(tmp_path, name):
    """The file is opened through an SQLite URI: '?', '#' and '%' in its name used to make
    `unable to open database file`; a path starting with '//' was read as a URI authority."""
    path = tmp_path / name
    shutil.copy(LENET, path)
    rc, out, err = run(path, "-q")
    assert rc == 0 and gpu_lines(out) == 1 + 76, err
    rc, out, err = run("/" + str(path), "-q")
    assert rc == 0 and gpu_lines(out) == 1 + 76, err


# A program that starts a transaction deleting every kernel and most ranges of `path`, makes
# SQLite write part of it into the file itself (a one-page cache spills), and is killed before
# it commits: the file holds half a transaction and the rollback journal the pages it replaced.
CUT_OFF_WRITE = """
import os, signal, sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("PRAGMA cache_size = 1")
con.execute("BEGIN")
con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL")
con.execute("DELETE FROM NVTX_EVENTS WHERE rowid % 3 != 0")
con.execute("UPDATE StringIds SET value = 'overwritten ' || id")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_write_cut_off_by_a_kill_is_undone_on_a_copy(tmp_path):
    """A database with a hot rollback journal (its writer was killed mid-transaction) reads as
    it was before that transaction, with a warning; the file and its journal are left as they
    are, and the private copy is removed."""
    path = tmp_path / "killed.sqlite"
    shutil.copy(LENET, path)
    _, expected, _ = run(LENET, "-q")
    res = subprocess.run([testlib.PY, "-c", CUT_OFF_WRITE, str(path)], capture_output=True)
    assert res.returncode == -9, res.stderr
    journal = tmp_path / "killed.sqlite-journal"
    assert journal.stat().st_size > 0
    before = (path.read_bytes(), journal.read_bytes())
    assert before[0] != open(LENET, "rb").read()  # half of the transaction is in the file
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env_tmp = {"TMPDIR": str(scratch)}
    res = subprocess.run([testlib.PARSE, str(path)], capture_output=True, text=True,
                         env={**os.environ, **env_tmp}, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.replace(str(path), str(LENET)) == expected.replace(str(path), str(LENET))
    assert "killed.sqlite-journal exists: the profiled program was killed while it wrote" in \
        res.stderr, res.stderr
    assert (path.read_bytes(), journal.read_bytes()) == before
    assert os.listdir(scratch) == []


def gpu_lines(text: str) -> int:
    """The header and the GPU records of a net.dict, without the `sync` lines after them and
    the compact form's `args` lines (docs/formats.md §3)."""
    return sum('"kind":"sync"' not in line and not line.startswith('{"kind":"args",')
               for line in text.splitlines())

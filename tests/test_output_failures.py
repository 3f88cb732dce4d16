"""Writing output when the output goes wrong: a full disk, a file-size limit, a reader that
closed the pipe; and text reports over a name megabytes long.

prof and parse write every output file under a temporary name beside it and rename it only
once all of it is written, so a failure leaves no partial file and an older file intact; a
write error names the file and the system's reason; a closed pipe on standard output ends
the tool quietly with status 141 (128 + SIGPIPE, what a shell shows for `yes | head`).

A full disk is simulated without root: /dev/full as standard output (ENOSPC), and a
file-size limit (RLIMIT_FSIZE, with SIGXFSZ ignored so the write fails with EFBIG).
"""

import json
import os
import resource
import signal
import subprocess

import pytest

import testlib
from testlib import DATA, PARSE, PROF, PY, parse_to, prof, pyprof_env

pytestmark = pytest.mark.needs_build

LENET = os.path.join(DATA, "nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite")
BEAST = os.path.join(DATA, "nsys-2020.3.4_beast-stream_report2.sqlite")
LIMIT = 32 * 1024  # bytes a limited process may write to one file
SIGPIPE_STATUS = 128 + signal.SIGPIPE
HUGE = 1 << 20  # characters in the op name of huge_dict


@pytest.fixture(scope="module")
def dicts(tmp_path_factory):
    """parse's output for two real traces: LeNet (76 records) and the beast stream (2437)."""
    folder = tmp_path_factory.mktemp("dicts")
    out = {}
    for name, db in (("lenet", LENET), ("beast", BEAST)):
        out[name] = folder / f"{name}.dict"
        parse_to(db, out[name], timeout=120)
    # The beast's `-c all` table is over 300 KB: larger than a pipe's buffer and the limit.
    assert len(prof("-c", "all", out["beast"]).stdout) > 4 * LIMIT
    return out


@pytest.fixture(scope="module")
def huge_dict(dicts, tmp_path_factory):
    """The LeNet dict with every conv2d record's op renamed to a 1 MiB name."""
    path = tmp_path_factory.mktemp("huge") / "huge.dict"
    with open(dicts["lenet"]) as f:
        lines = f.read().splitlines()
    renamed = 0
    with open(path, "w") as f:
        f.write(lines[0] + "\n")
        for line in lines[1:]:
            record = json.loads(line)
            if record.get("op") == "conv2d":
                record["op"] = "conv2d_" + "x" * (HUGE - len("conv2d_"))
                renamed += 1
            f.write(json.dumps(record) + "\n")
    assert renamed > 0
    return path


def limit_file_size():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def run_limited(tool, *args, cwd=None):
    """Runs a tool that may write at most LIMIT bytes to any file."""
    res = subprocess.run([tool, *map(str, args)], capture_output=True, text=True, timeout=120,
                         preexec_fn=limit_file_size, cwd=cwd)
    assert res.returncode >= 0, f"killed by signal {-res.returncode}: {res.stderr[-2000:]}"
    return res


def run_to_closed_pipe(args, ignore_sigpipe):
    """Runs a command whose standard output is a pipe nobody reads: its read end is closed
    before the command starts, so every write fails (EPIPE, or SIGPIPE when not ignored).
    Ignoring SIGPIPE is what a Python parent such as the `pyprof` front hands down."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    preexec = (lambda: signal.signal(signal.SIGPIPE, signal.SIG_IGN)) if ignore_sigpipe else None
    try:
        proc = subprocess.Popen([*map(str, args)], stdout=write_end, stderr=subprocess.PIPE,
                                preexec_fn=preexec, env=pyprof_env())
    finally:
        os.close(write_end)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err.decode()


def listing(folder):
    return sorted(os.listdir(folder))


# --- prof ---------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [("-c", "all"), ("--json", "-c", "all"),
                                  ("--report", "op,kernel,instance")])
def test_prof_full_disk_on_standard_output(dicts, huge_dict, args):
    source = huge_dict if "--report" in args else dicts["beast"]
    with open("/dev/full", "w") as full:
        res = subprocess.run([PROF, *args, source], stdout=full, stderr=subprocess.PIPE,
                             text=True, timeout=120)
    assert res.returncode == 1, res.stderr
    assert res.stderr == ("pyprof prof: error: writing standard output failed: "
                          "No space left on device\n")


@pytest.mark.parametrize("args", [("-c", "all"), ("--report", "op,kernel", "--formats", "csv")])
def test_prof_file_size_limit_leaves_no_partial_file(dicts, huge_dict, tmp_path, args):
    """The beast's table, and the huge dict's CSV report, which keeps the whole 1 MiB name."""
    source = huge_dict if "--report" in args else dicts["beast"]
    res = run_limited(PROF, *args, "-o", tmp_path / "out.txt", source)
    assert res.returncode == 1
    assert res.stderr == f"pyprof prof: error: writing {tmp_path / 'out.txt'} failed: " \
                         "File too large\n"
    assert listing(tmp_path) == []  # neither the cut file nor a temporary one
    # An older file of that name is kept as it was.
    (tmp_path / "out.txt").write_text("the previous run's table\n")
    res = run_limited(PROF, *args, "-o", tmp_path / "out.txt", source)
    assert res.returncode == 1 and "File too large" in res.stderr
    assert listing(tmp_path) == ["out.txt"]
    assert (tmp_path / "out.txt").read_text() == "the previous run's table\n"


def test_prof_report_set_is_written_whole_or_not_at_all(huge_dict, dicts, tmp_path):
    """Several formats make several files: if one fails, none is left (the csv and json of
    the op report hold the whole 1 MiB name and exceed the limit; the text ones do not)."""
    res = run_limited(PROF, "--report", "kernel,op", "--formats", "text,csv,json", "-o",
                      tmp_path / "r", huge_dict)
    assert res.returncode == 1
    assert res.stderr == f"pyprof prof: error: writing {tmp_path / 'r.op.csv'} failed: " \
                         "File too large\n"
    assert listing(tmp_path) == []
    # Within the limit, the same command writes all six.
    prof("--report", "kernel,op", "--formats", "text,csv,json", "-o", tmp_path / "r",
         dicts["lenet"])
    assert listing(tmp_path) == ["r.kernel.csv", "r.kernel.json", "r.kernel.text", "r.op.csv",
                                 "r.op.json", "r.op.text"]
    mode = os.stat(tmp_path / "r.op.csv").st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask  # as a plain fopen would have created it


def test_prof_unwritable_output(dicts, tmp_path):
    res = prof("-o", tmp_path / "no" / "such" / "x.txt", dicts["lenet"], check=False)
    assert res.returncode == 1
    assert res.stderr.startswith(f"pyprof prof: error: cannot write {tmp_path}/no/such/x.txt: ")
    assert "No such file or directory" in res.stderr


@pytest.mark.parametrize("ignore_sigpipe", [True, False])
@pytest.mark.parametrize("args", [("-c", "all"), ("--json", "-c", "all"), ("--report", "op"),
                                  ("--report", "summary,op", "--formats", "csv"),
                                  ("--list-ops",), ("--explain-tc", "volta_h884gemm_64x64")])
def test_prof_closed_pipe_exits_quietly(dicts, args, ignore_sigpipe):
    rc, err = run_to_closed_pipe([PROF, *args, dicts["lenet"]], ignore_sigpipe)
    assert (rc, err) == (SIGPIPE_STATUS, "")


def test_prof_through_front_into_head(dicts, huge_dict, tmp_path):
    """`pyprof prof ... | head -1`, the front and all: the outputs are far larger than what
    head reads, so prof's later writes meet a closed pipe."""
    for args, source, first_line in (("-c all", dicts["beast"], "Idx SeqId AltSeqId"),
                                     ("--json -c all", dicts["beast"], '{"idx":1,'),
                                     ("--report op --formats csv", huge_dict, '"Op","Dir')):
        res = subprocess.run(
            ["bash", "-c", f'"$0" -m pyprof prof {args} "$1" 2>err.txt | head -1; '
                           'echo "status ${PIPESTATUS[0]}"; cat err.txt',
             PY, source], capture_output=True, text=True, timeout=120, env=pyprof_env(),
            cwd=tmp_path)
        first, status, *rest = res.stdout.splitlines()
        assert first.startswith(first_line), first
        assert (status, rest) == (f"status {SIGPIPE_STATUS}", []), res.stdout


# --- text reports: bounded cells ------------------------------------------------------------

def test_report_text_cells_are_bounded(huge_dict, dicts):
    # Raw numbers: the widths below are those of the cells' text, not of their human units.
    text = prof("--report", "op,instance", "--raw", "-w", "0", huge_dict).stdout
    # Without the bound every row of the op report was padded to 1 MiB.
    assert len(text.encode()) < 16 * 1024, len(text.encode())
    elided = "conv2d_" + "x" * 112 + "…"  # 120 characters, the last one the marker
    op_rows = [line for line in text.splitlines() if "conv2d_" in line]
    assert len(op_rows) == 3  # op report: conv2d fprop; instance report: its 2 instances
    assert all(elided + " " in row for row in op_rows), op_rows
    # The other rows hold what they held without the long name (in a column 120 wide).
    plain = prof("--report", "op,instance", "--raw", "-w", "0", dicts["lenet"]).stdout
    assert [line.split() for line in text.splitlines() if "conv2d" not in line] \
        == [line.split() for line in plain.splitlines() if "conv2d" not in line]
    # The op report's lines: 182 characters with "max_pool2d" the widest op, 110 more now.
    op_report = text.split("\n\n")[0].splitlines()[1:]
    assert {len(line) for line in plain.split("\n\n")[0].splitlines()[1:]} == {182}
    assert {len(line) for line in op_report} == {182 - len("max_pool2d") + 120}
    # CSV and JSON keep the whole name.
    csv_text = prof("--report", "op", "--formats", "csv", huge_dict).stdout
    assert '"conv2d_' + "x" * (HUGE - 7) + '"' in csv_text
    rows = testlib.report_rows(prof("--report", "op", "--formats", "json", huge_dict).stdout)
    assert [len(r["Op"]) for r in rows if r["Op"].startswith("conv2d_")] == [HUGE]


# --- parse --------------------------------------------------------------------------------

def test_parse_file_size_limit_keeps_older_output(tmp_path):
    out = tmp_path / "net.dict"
    res = run_limited(PARSE, LENET, "-q", "-o", out)  # 85 KB of records
    assert res.returncode == 1
    assert res.stderr == f"pyprof parse: error: writing {out} failed: File too large\n"
    assert listing(tmp_path) == []
    out.write_text("the previous run's records\n")
    res = run_limited(PARSE, LENET, "-q", "-o", out)
    assert res.returncode == 1 and "File too large" in res.stderr
    assert listing(tmp_path) == ["net.dict"]
    assert out.read_text() == "the previous run's records\n"
    # Overwriting succeeds when there is room, and keeps the older file's permissions.
    os.chmod(out, 0o640)
    parse_to(LENET, out)
    assert gpu_lines(out.read_text()) == 1 + 76  # header and GPU records (syncs follow)
    assert os.stat(out).st_mode & 0o777 == 0o640
    assert listing(tmp_path) == ["net.dict"]


def test_parse_output_through_symlink(tmp_path):
    """-o through a symbolic link writes the file it points to and keeps the link."""
    (tmp_path / "real.dict").write_text("old\n")
    os.symlink("real.dict", tmp_path / "link.dict")
    parse_to(LENET, tmp_path / "link.dict")
    assert os.readlink(tmp_path / "link.dict") == "real.dict"
    assert gpu_lines((tmp_path / "real.dict").read_text()) == 1 + 76


@pytest.mark.parametrize("ignore_sigpipe", [True, False])
def test_parse_closed_pipe_exits_quietly(ignore_sigpipe):
    rc, err = run_to_closed_pipe([PARSE, LENET], ignore_sigpipe)
    assert (rc, err) == (SIGPIPE_STATUS, "")


def test_parse_through_front_into_head(tmp_path):
    res = subprocess.run(
        ["bash", "-c", '"$0" -m pyprof parse "$1" 2>err.txt | head -1; '
                       'echo "status ${PIPESTATUS[0]}"; cat err.txt', PY, BEAST],
        capture_output=True, text=True, timeout=120, env=pyprof_env(), cwd=tmp_path)
    first, status, *rest = res.stdout.splitlines()
    assert json.loads(first)["pyprof_dict"] == 2
    assert (status, rest) == (f"status {SIGPIPE_STATUS}", []), res.stdout


def test_parse_to_a_device_is_not_replaced():
    """A device (or a FIFO) is written in place: it cannot be swapped for a renamed file."""
    res = subprocess.run([PARSE, LENET, "-q", "-o", "/dev/null"], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0 and res.stderr == ""
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


@pytest.mark.parametrize("name, shown", [
    ("r" * 120, "r" * 120),                # as wide as a cell may be: whole
    ("r" * 121, "r" * 119 + "…"),          # one more: elided to 120
    ("é" * 300, "é" * 119 + "…"),          # characters, not bytes; none is split
])
def test_report_text_cell_elision(dicts, tmp_path, name, shown):
    path = tmp_path / "renamed.dict"
    with open(dicts["lenet"]) as f:
        lines = f.read().splitlines()
    with open(path, "w", encoding="utf-8") as f:
        f.write(lines[0] + "\n")
        for line in lines[1:]:
            record = json.loads(line)
            if record.get("op") == "relu":
                record["op"] = name
            f.write(json.dumps(record) + "\n")
    res = subprocess.run([PROF, "--report", "op", "-w", "0", path], capture_output=True, timeout=120)
    assert res.returncode == 0, res.stderr
    rows = res.stdout.decode("utf-8").splitlines()  # strict: a split character would raise
    assert [row.split()[0] for row in rows if row.startswith(shown[0])] == [shown]
    # Every line of the table is as wide in characters: the column is the marked cell's width.
    assert len({len(row) for row in rows[1:-1]}) == 1


def gpu_lines(text: str) -> int:
    """The header and the GPU records of a net.dict, without the `sync` lines after them and
    the compact form's `args` lines (docs/formats.md §3)."""
    return sum('"kind":"sync"' not in line and not line.startswith('{"kind":"args",')
               for line in text.splitlines())

"""`pyprof profile --report [-o NAME] -- CMD`: the whole chain in one command (issue 33), on a
real CPU model (examples/train.py, LeNet): NAME.sqlite, NAME.dict, the summary on the terminal
and NAME.html, each exactly what the separate commands make of the same run; every stage's
failure said, with what it left; the program's exit status kept; Ctrl-C and SIGTERM as the
launcher treats them."""

import json
import os
import re
import signal
import subprocess
import threading

import pytest

import testlib
from testlib import PY, ROOT, pyprof_env

pytestmark = pytest.mark.needs_build

TRAIN = os.path.join(ROOT, "examples", "train.py")


def train(*extra: str, then: str = "") -> list[str]:
    """`python -c` running examples/train.py (LeNet, 2 steps) as __main__, then `then`."""
    code = ("import runpy, sys; sys.argv = ['train.py', '--steps', '2', *sys.argv[1:]]; "
            f"runpy.run_path({TRAIN!r}, run_name='__main__'); {then}")
    return [PY, "-c", code, *extra]


def profile(tmp, command: list[str], *options: str, name: str = "run", env=None, report=True,
            **popen) -> subprocess.CompletedProcess:
    args = [PY, "-m", "pyprof", "profile", *(["--report"] if report else []), "-o",
            str(tmp / name), *options, "--", *command]
    return subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env=pyprof_env(env), preexec_fn=testlib.terminal_signals, **popen)


def page_data(path) -> dict:
    html = open(path, encoding="utf-8").read()
    found = re.search(r'<script type="application/json" id="pyprof-data">(.*?)</script>', html,
                      re.S)
    assert found, "the page's data"
    return json.loads(found.group(1))


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("chain")
    res = profile(tmp, [PY, TRAIN, "--steps", "3"])
    return tmp, res


def test_one_command_writes_the_database_the_dict_and_the_page(chain):
    tmp, res = chain
    assert res.returncode == 0, res.stderr
    for suffix in ("sqlite", "dict", "html"):
        assert (tmp / f"run.{suffix}").stat().st_size > 0, suffix
    # The launcher's own listing, then what the chain wrote, last.
    assert f"pyprof: {tmp}/run.sqlite (" in res.stderr
    assert res.stderr.strip().splitlines()[-1] == (
        f"pyprof profile: wrote {tmp}/run.sqlite (the profile), {tmp}/run.dict (its records: "
        f"pyprof prof, diff, export) and {tmp}/run.html (the report: open it in a browser)")


def test_each_file_is_what_the_separate_command_makes(chain, tmp_path):
    tmp, res = chain
    assert res.returncode == 0, res.stderr
    testlib.parse_to(tmp / "run.sqlite", tmp_path / "again.dict")
    assert (tmp_path / "again.dict").read_bytes() == (tmp / "run.dict").read_bytes()
    # In the chain's environment: the text fits $COLUMNS, which the test process's own
    # environment may hold apart from os.environ (under pytest a child sees COLUMNS=80 that
    # os.environ does not show).
    summary = subprocess.run([testlib.PROF, "--report", "summary", str(tmp / "run.dict")],
                             capture_output=True, text=True, timeout=300, env=pyprof_env(),
                             check=True).stdout
    assert "summary" in summary.lower() and res.stdout.endswith(summary)
    page = subprocess.run([PY, "-m", "pyprof", "report", str(tmp / "run.dict"), "-o",
                           str(tmp_path / "again.html")], capture_output=True, text=True,
                          timeout=300, env=pyprof_env(), cwd=ROOT)
    assert page.returncode == 0, page.stderr
    assert page_data(tmp / "run.html") == page_data(tmp_path / "again.html")


def test_the_program_s_exit_status_is_kept_and_its_profile_reported(tmp_path):
    res = profile(tmp_path, train(then="sys.exit(3)"))
    assert res.returncode == 3, res.stderr
    assert ("pyprof profile: note: the program exited with status 3; the report covers what "
            "it recorded") in res.stderr
    assert (tmp_path / "run.html").stat().st_size > 0
    assert "Traceback" not in res.stderr


def test_a_stage_that_fails_says_so_and_what_it_left(tmp_path):
    """NAME.dict is a folder (--force lets the run start): parse cannot write it; the database
    stays, nothing later runs, and the status says the run failed."""
    (tmp_path / "run.dict").mkdir()
    res = profile(tmp_path, train(), "--force")
    assert res.returncode == 1, res.stderr
    assert res.stderr.strip().splitlines()[-1] == (
        f"pyprof profile: error: pyprof parse failed (exit status 1, above): {tmp_path}/"
        f"run.sqlite was written; no {tmp_path}/run.dict, no report")
    assert (tmp_path / "run.sqlite").stat().st_size > 0
    assert not (tmp_path / "run.html").exists()


def test_the_page_that_cannot_be_written_is_said(tmp_path):
    (tmp_path / "run.html").mkdir()
    res = profile(tmp_path, train(then="sys.exit(5)"), "--force")
    assert res.returncode == 5, res.stderr  # the program's status, not the stage's
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("pyprof profile: error: pyprof report failed (writing "), last
    assert last.endswith(f"{tmp_path}/run.sqlite and {tmp_path}/run.dict were written; no "
                         f"{tmp_path}/run.html"), last
    assert (tmp_path / "run.dict").stat().st_size > 0


def test_a_run_the_launcher_refuses_reports_nothing(tmp_path):
    """An earlier run's database without --force: the launcher refuses; the earlier database is
    not reported on as if it were this run's."""
    first = profile(tmp_path, train(), report=False)
    assert first.returncode == 0, first.stderr
    before = (tmp_path / "run.sqlite").read_bytes()
    res = profile(tmp_path, train())
    assert res.returncode == 1, res.stderr
    assert res.stderr.strip().splitlines()[-1] == (
        f"pyprof profile: error: {tmp_path}/run.sqlite was not written again by this run (the "
        "launcher said why, above): no report")
    assert (tmp_path / "run.sqlite").read_bytes() == before
    assert not (tmp_path / "run.dict").exists() and not (tmp_path / "run.html").exists()


def test_earlier_outputs_are_refused_before_the_program_runs(tmp_path):
    (tmp_path / "run.html").write_text("an earlier page")
    ran = tmp_path / "ran"
    res = profile(tmp_path, [PY, "-c", f"open({str(ran)!r}, 'w')"])
    assert res.returncode == 1
    assert res.stderr.strip() == (
        f"pyprof profile: error: {tmp_path}/run.html exists (an earlier run's?): --force "
        "replaces it, or name another output with -o NAME")
    assert not ran.exists() and (tmp_path / "run.html").read_text() == "an earlier page"
    res = profile(tmp_path, train(), "--force")
    assert res.returncode == 0, res.stderr
    assert "an earlier page" not in (tmp_path / "run.html").read_text()


def test_a_program_without_pyprof_init_fails_clearly(tmp_path):
    """The launcher writes an empty database and says why; the chain reports no empty page."""
    res = profile(tmp_path, [PY, "-c", "print('no annotations')"])
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines()[-1] == (
        f"pyprof profile: error: {tmp_path}/run.sqlite holds no records (the launcher said why, "
        f"above): {tmp_path}/run.dict was written; no report"), res.stderr
    assert "did it call pyprof.init()?" in res.stderr  # the launcher's warning, kept
    assert not (tmp_path / "run.html").exists()


def test_report_after_the_command_goes_to_the_program_and_is_named(tmp_path):
    res = subprocess.run([PY, "-m", "pyprof", "profile", "-o", str(tmp_path / "run"), PY, "-c",
                          "import sys; print(sys.argv[1:])", "--report"], capture_output=True,
                         text=True, timeout=300, env=pyprof_env(), cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert "['--report']" in res.stdout
    assert "pyprof profile: note: --report after the command goes to the program" in res.stderr
    assert not (tmp_path / "run.dict").exists()


def test_help_shows_report():
    res = subprocess.run([PY, "-m", "pyprof", "profile", "--help"], capture_output=True,
                         text=True, timeout=120, env=pyprof_env())
    assert res.returncode == 0
    assert "--capture-range" in res.stdout  # the launcher's own help first
    assert re.search(r"^  --report +after the program: NAME.dict", res.stdout, re.M), res.stdout


def test_report_under_rank_names_the_files_as_the_launcher_does(tmp_path):
    """One launcher per rank (RANK set): the root process's database is NAME.rankR.sqlite; the
    chain's files follow it."""
    res = profile(tmp_path, train(), env={"RANK": "3"})
    assert res.returncode == 0, res.stderr
    assert sorted(n for n in os.listdir(tmp_path) if not n.startswith(".")) == \
        ["run.rank3.dict", "run.rank3.html", "run.rank3.sqlite"]


def test_ctrl_c_ends_the_program_and_the_report_is_still_made(tmp_path):
    """Ctrl-C reaches the terminal's whole foreground group: the program ends (status 130, as
    the launcher reports it) and the chain goes on to report what was recorded."""
    ready = tmp_path / "ready"
    command = train(then=f"open({str(ready)!r}, 'w').close(); import time; time.sleep(300)")
    proc = subprocess.Popen([PY, "-m", "pyprof", "profile", "--report", "-o",
                             str(tmp_path / "run"), "--", *command], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=pyprof_env(),
                            start_new_session=True, preexec_fn=testlib.terminal_signals)
    out = {}
    reader = threading.Thread(target=lambda: out.update(zip(("out", "err"), proc.communicate())))
    reader.start()
    while not ready.exists():
        assert proc.poll() is None, "the chain ended before the program was ready"
        threading.Event().wait(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    reader.join(timeout=600)
    assert proc.returncode == 130, out["err"]
    assert "the program exited with status 130" in out["err"]
    assert (tmp_path / "run.html").stat().st_size > 0
    assert "Traceback (most recent call last)" not in out["err"].split("KeyboardInterrupt")[-1]


def test_sigterm_ends_the_chain_after_the_program(tmp_path):
    ready = tmp_path / "ready"
    command = train(then=f"open({str(ready)!r}, 'w').close(); import time; time.sleep(300)")
    proc = subprocess.Popen([PY, "-m", "pyprof", "profile", "--report", "-o",
                             str(tmp_path / "run"), "--", *command], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=pyprof_env(),
                            start_new_session=True)
    while not ready.exists():
        assert proc.poll() is None, "the chain ended before the program was ready"
        threading.Event().wait(0.05)
    proc.send_signal(signal.SIGTERM)  # the front alone, as a scheduler might
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert err.strip().splitlines()[-1] == "pyprof profile: signal 15 arrived: no report"
    assert (tmp_path / "run.sqlite").exists() and not (tmp_path / "run.dict").exists()

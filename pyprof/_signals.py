"""How the Python fronts end on a signal: no traceback, no file left behind.

A command that the `pyprof` front runs in Python (report, prof --parquet, export and diff of a
database) stages files (temporary folders, hidden temporaries beside its outputs) and runs
pyprof's C++ tools as children. SIGTERM (a scheduler's), SIGHUP and SIGINT (Ctrl-C) are
passed on to the running children, which remove their own temporaries as they end
(csrc/common/output_file.h), and raised in Python as an exception, so that every `finally` and
`with` on the way out removes the command's; then the command ends as the signal would have
ended it (SIGINT: a one-line note and exit status 130, no KeyboardInterrupt traceback).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_children: set[subprocess.Popen] = set()
_children_lock = threading.Lock()
_ending = False  # a signal is being handled: later ones only reach the children


class Ended(BaseException):
    """SIGTERM or SIGHUP arrived (SIGINT is KeyboardInterrupt): the command unwinds and ends."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum, frame):
    global _ending
    with _children_lock:
        children = list(_children)
    for child in children:
        try:
            child.send_signal(signum)
        except OSError:
            pass
    if _ending:
        return  # a second Ctrl-C does not interrupt the cleanup the first one started
    _ending = True
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Ended(signum)


def end_on_signals() -> None:
    """Installs the handlers (in the main thread); a signal the parent left ignored (nohup,
    `cmd &` without job control) stays ignored."""
    for signum in ENDING_SIGNALS:
        if signal.getsignal(signum) != signal.SIG_IGN:
            signal.signal(signum, _on_signal)


def end_by(signum: int) -> None:
    """Ends the process by `signum` at its default disposition (status 128 + N to a shell)."""
    sys.stdout and sys.stdout.flush()
    sys.stderr and sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # not reached


def run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run(args, **kwargs), its child told of an ending signal (end_on_signals()) and,
    on any exception here, ended by SIGTERM rather than SIGKILL, so that it removes its
    temporaries first. Takes subprocess.run's capture_output as well as Popen's arguments."""
    if kwargs.pop("capture_output", False):
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    with subprocess.Popen(args, **kwargs) as child:
        with _children_lock:
            _children.add(child)
        try:
            out, err = child.communicate()
        except BaseException:
            child.terminate()
            try:
                child.wait(timeout=30)
            except BaseException:
                child.kill()
            raise
        finally:
            with _children_lock:
                _children.discard(child)
    return subprocess.CompletedProcess(args, child.returncode, out, err)

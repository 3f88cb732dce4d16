"""pyprof.init(), then a forked child records ops until its collector has committed some, and
is killed with SIGKILL (as the OOM killer, or a DataLoader worker whose own SIGTERM handler
replaced the collector's, would end): its database keeps what was committed but has no final
record. The parent ends normally.

Prints {"parent": pid, "child": pid} at the end.
"""

import json
import os
import signal
import sqlite3
import sys
import time

import lifecycle_common  # noqa: F401  (sys.path)
import torch

import pyprof

torch.set_num_threads(1)  # libgomp is not fork-safe
assert pyprof.init()
torch.ones(3, 5).sum()

out_dir = sys.argv[1]  # where the databases go
pid = os.fork()
if pid == 0:
    mine = os.path.join(out_dir, f"net.pid{os.getpid()}.sqlite")
    deadline = time.monotonic() + 60
    x = torch.ones(7, 43)
    committed = False
    while not committed and time.monotonic() < deadline:
        for _ in range(200):
            torch.cumsum(x, dim=0)
        try:
            con = sqlite3.connect(f"file:{mine}?mode=ro", uri=True)
            committed = con.execute("SELECT count(*) FROM NVTX_EVENTS").fetchone()[0] > 0
            con.close()
        except sqlite3.Error:
            pass
    os.kill(os.getpid(), signal.SIGKILL)

_, status = os.waitpid(pid, 0)
torch.ones(2, 2).sum()
print(json.dumps({"parent": os.getpid(), "child": pid, "killed": os.WIFSIGNALED(status)}),
      flush=True)

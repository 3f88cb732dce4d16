"""Sets torch flags after pyprof.init(), as training scripts do, then trains one LeNet step;
for tests/test_torch_settings.py.

    pyprof profile -o NAME -- python tests/scripts/settings_program.py
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for path in (ROOT, os.path.join(ROOT, "examples")):
    if path not in sys.path:
        sys.path.insert(0, path)

import torch  # noqa: E402

import models  # noqa: E402
import pyprof  # noqa: E402

if not pyprof.init():
    sys.exit("pyprof.init() found no NVTX tool: run under `pyprof profile`")
torch.backends.cudnn.benchmark = True
torch.set_float32_matmul_precision("high")
model, x, target = models.make("lenet", 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
models.train_step(model, optimizer, x, target)
# The oracle for the recorded thread count: what torch says in this process (a CI runner's
# affinity or OMP_NUM_THREADS can make it differ from the test's own process).
print(f"num_threads={torch.get_num_threads()}")

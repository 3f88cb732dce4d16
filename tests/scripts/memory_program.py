"""Programs for tests/test_memory_capture.py. argv[1] picks one:

  linear        pyprof.init(); a Linear(16, 8) and its input made, one forward in a "forward"
                range, its output dropped; then a Python thread making a 32-float tensor in a
                "thread-work" range. Prints {"tid": main tid, "worker_tid": ...}.
  steps-pyprof  an MLP trained (forward, backward, SGD step) for STEPS steps on one thread after a
                warm-up step; pyprof.init() right before the steps, pyprof.stop() right after.
  steps-torch   the same steps inside torch.profiler.profile(profile_memory=True) instead (run
                without pyprof), its Chrome trace written to argv[2].
  beside-torch  pyprof.init(), a warm-up step, then step 1, step 2 inside
                torch.profiler.profile(profile_memory=True) and step 3, each in a pyprof range
                "step N"; torch.profiler's trace written to argv[2].
  before-init   a tensor made before pyprof.init() and freed after it.
  cuda          (a GPU) pyprof.init(), then a 1024 x 1024 float matrix on the GPU, its product with
                itself in a "matmul" range, both freed; prints torch.cuda's allocated bytes and
                peak at the end, and the process-wide totals before CUDA was first used.

In every mode the allocations of one step are the same: the model, the data and the optimizer
(SGD without momentum: no state) are made before the steps, and the gradients are set to None
after each step.
"""

import json
import os
import sys
import threading

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import pyprof  # noqa: E402

STEPS = 3


def mlp():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 16), torch.randn(8, 4)

    def step():
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def linear() -> None:
    assert pyprof.init()
    torch.manual_seed(0)
    lin = torch.nn.Linear(16, 8)  # weight 8 x 16 floats (512 bytes), bias 8 (32 bytes)
    x = torch.randn(4, 16)  # 256 bytes
    with pyprof.range("forward"):
        out = lin(x)  # 4 x 8 floats: 128 bytes, inside aten::addmm
    del out  # freed by Python, outside any op

    facts = {"tid": threading.get_native_id()}

    def work():
        facts["worker_tid"] = threading.get_native_id()
        with pyprof.range("thread-work"):
            torch.ones(32)  # 128 bytes, made and dropped on this thread

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    print(json.dumps(facts), flush=True)


def steps_pyprof() -> None:
    step = mlp()
    step()  # warm-up
    assert pyprof.init()
    for _ in range(STEPS):
        step()
    pyprof.stop()


def steps_torch(trace: str) -> None:
    step = mlp()
    step()  # warm-up
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                profile_memory=True) as prof:
        for _ in range(STEPS):
            step()
    prof.export_chrome_trace(trace)


def beside_torch(trace: str) -> None:
    assert pyprof.init()
    step = mlp()
    step()  # warm-up
    with pyprof.range("step 1"):
        step()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                profile_memory=True) as prof:
        with pyprof.range("step 2"):
            step()
    with pyprof.range("step 3"):
        step()
    prof.export_chrome_trace(trace)
    print(json.dumps(pyprof.stats()), flush=True)


def before_init() -> None:
    early = torch.randn(1000)  # 4000 bytes that no profiler saw allocated
    assert pyprof.init()
    late = torch.randn(10)
    del early
    del late


def cuda() -> None:
    assert pyprof.init()
    x = torch.randn(1024, 1024, device="cuda")  # 4 MiB, the caching allocator's first block
    with pyprof.range("matmul"):
        y = x @ x  # another 4 MiB, inside aten::mm (and cuBLAS's workspace, if it takes one)
    torch.cuda.synchronize()
    del x, y
    torch.cuda.synchronize()
    print(json.dumps({"allocated": torch.cuda.memory_allocated(),
                      "peak_allocated": torch.cuda.max_memory_allocated(),
                      "reserved": torch.cuda.memory_reserved(),
                      "device": torch.cuda.current_device()}), flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "linear":
        linear()
    elif mode == "steps-pyprof":
        steps_pyprof()
    elif mode == "steps-torch":
        steps_torch(sys.argv[2])
    elif mode == "beside-torch":
        beside_torch(sys.argv[2])
    elif mode == "before-init":
        before_init()
    elif mode == "cuda":
        cuda()
    else:
        raise SystemExit(f"unknown mode {mode!r}")

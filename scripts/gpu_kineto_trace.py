#!/usr/bin/env python3
"""Records real torch.profiler (Kineto) traces of example models training on a GPU, as test data.

    python scripts/gpu_kineto_trace.py --out DIR [--models resnet_block,transformer,lstm] [--steps 3]

Runs outside `pyprof profile` (CUPTI takes one subscriber: torch.profiler needs it here), with
ProfilerActivity.CPU and CUDA, record_shapes, a schedule of one wait, one warm-up and --steps
active steps (so the trace has ProfilerStep#N annotations), and writes
DIR/kineto-<gpu>-<model>.json.gz per model. The traces from a real GPU are the Kineto reader's
fixtures for GPU work that the A100 traces in ../shared/traces do not cover (this torch's
format, this GPU's kernels).
"""

import argparse
import gzip
import os
import re
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile, schedule  # noqa: E402

import models  # noqa: E402


def record(model_name: str, steps: int, out_dir: str) -> str:
    torch.manual_seed(0)
    model, x, target = models.make(model_name, batch=8, size="small")
    model, x, target = model.cuda(), x.cuda(), target.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    models.train_step(model, optimizer, x, target)  # lazy inits outside the trace
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                 schedule=schedule(wait=1, warmup=1, active=steps)) as prof:
        for _ in range(steps + 2):
            models.train_step(model, optimizer, x, target)
            torch.cuda.synchronize()
            prof.step()
    gpu = re.sub(r"[^a-z0-9]+", "-", torch.cuda.get_device_name(0).lower()).strip("-")
    path = os.path.join(out_dir, f"kineto-{gpu}-{model_name}.json.gz")
    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(plain)
        with open(plain, "rb") as src, gzip.open(path, "wb", compresslevel=9) as dst:
            shutil.copyfileobj(src, dst)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for the traces")
    ap.add_argument("--models", default="resnet_block,transformer,lstm")
    ap.add_argument("--steps", type=int, default=3, help="active (recorded) steps (default 3)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpu_kineto_trace: torch.cuda.is_available() is False")
    os.makedirs(args.out, exist_ok=True)
    for name in args.models.split(","):
        path = record(name, args.steps, args.out)
        print(f"gpu_kineto_trace: {name}: {path} ({os.path.getsize(path)} bytes), "
              f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")


if __name__ == "__main__":
    main()

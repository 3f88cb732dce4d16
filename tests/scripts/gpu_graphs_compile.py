"""CUDA graphs and torch.compile on a GPU, for tests/test_gpu_compile.py (issue 17).

    pyprof profile -o NAME -- python tests/scripts/gpu_graphs_compile.py MODE [--steps N]

The model is tests/scripts/compiled_train.py's MLP (Linear -> GELU -> LayerNorm -> ReLU ->
Linear) on the GPU, batch 64. MODE:

* `graph`: torch.cuda.graphs. The forward and backward of one step are captured into a
  CUDAGraph inside the user range `capture` (after three warm-up steps on a side stream, as
  torch.cuda.graphs' documentation prescribes) and replayed `--steps` times inside `replay N`;
  then one eager step runs inside `eager` (the oracle: the ops a replay should be attributed to).
* `compile`: torch.compile (default mode, Triton kernels), `--steps` SGD training steps.
* `reduce-overhead`: torch.compile(mode="reduce-overhead"): cudagraph trees record the compiled
  forward and backward, then replay them.

`--recompile static|dynamic` (compiled modes): after the steps, as many again at batch 32, so
that Dynamo recompiles, with static shapes (dynamic=False) or as it chooses (automatic dynamic).

Prints one JSON line: the loss, Dynamo's graph count, pyprof.stats(), and, for the compiled
modes, FlopCounterMode's FLOPs of one eager step of the same model (`oracle_flops`, by op).
"""

import argparse
import json
import sys

import torch
import torch.nn.functional as F

import pyprof


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(256, 512)
        self.ln = torch.nn.LayerNorm(512)
        self.fc2 = torch.nn.Linear(512, 64)

    def forward(self, x):
        return self.fc2(torch.relu(self.ln(F.gelu(self.fc1(x)))))


def eager_flops(model, x, target) -> dict:
    from torch.utils.flop_counter import FlopCounterMode
    with FlopCounterMode(display=False) as counter:
        F.mse_loss(model(x), target).backward()
    model.zero_grad(set_to_none=True)
    return {str(op): int(n) for op, n in counter.get_flop_counts()["Global"].items()}


def run_graph(model, x, target, steps):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model.zero_grad(set_to_none=True)
            F.mse_loss(model(x), target).backward()
    torch.cuda.current_stream().wait_stream(side)
    model.zero_grad(set_to_none=True)
    graph = torch.cuda.CUDAGraph()
    with pyprof.range("capture"):
        with torch.cuda.graph(graph):
            loss = F.mse_loss(model(x), target)
            loss.backward()
    for i in range(steps):
        with pyprof.range(f"replay {i}"):
            graph.replay()
        torch.cuda.synchronize()
    result = float(loss)
    model.zero_grad(set_to_none=True)
    with pyprof.range("eager"):
        F.mse_loss(model(x), target).backward()
    torch.cuda.synchronize()
    return result


def run_compiled(model, x, target, steps, mode, recompile):
    compiled = torch.compile(model, mode=mode, dynamic=False if recompile == "static" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = [(x, target)] * steps
    if recompile:
        batches += [(x[:32].clone(), target[:32].clone())] * steps
    for x, target in batches:
        # reduce-overhead replays outputs from the graph's own memory: a new step may overwrite
        # them, so the step is marked as torch.compile's documentation asks.
        if mode == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()
        loss = F.mse_loss(compiled(x), target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    return float(loss)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("graph", "compile", "reduce-overhead"))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--recompile", choices=("static", "dynamic"))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gpu_graphs_compile.py needs a CUDA device")

    torch.manual_seed(0)
    model = MLP().cuda()
    x = torch.randn(64, 256, device="cuda")
    target = torch.randn(64, 64, device="cuda")
    result = {}
    if args.mode != "graph":
        result["oracle_flops"] = eager_flops(model, x, target)
    if not pyprof.init(model=model):
        raise SystemExit("pyprof.init() found no NVTX tool: run me under `pyprof profile`")
    if args.mode == "graph":
        result["loss"] = run_graph(model, x, target, args.steps)
    else:
        mode = None if args.mode == "compile" else args.mode
        result["loss"] = run_compiled(model, x, target, args.steps, mode, args.recompile)
        from torch._dynamo.utils import counters
        result["graphs"] = counters["stats"]["unique_graphs"]
        result["graph_breaks"] = sum(counters["graph_break"].values())
    result["pyprof"] = pyprof.stats()
    print(json.dumps(result))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

"""Training steps of a torch.compile'd model on the CPU, for tests/test_compile.py.

    pyprof profile -o NAME -- python tests/scripts/compiled_train.py [--graph-break] [--steps N]
    python tests/scripts/compiled_train.py --torch-profiler TRACE.json    (the oracle run)

The model: Linear -> GELU -> LayerNorm -> Linear (Inductor fuses GELU and LayerNorm into one
C++ kernel; the Linears go to extern addmm). --graph-break puts torch._dynamo.graph_break()
between the LayerNorm and the last Linear: two compiled regions. The steps have no range of
their own (parse finds them by SGD's step scope). Prints one JSON line: Dynamo's graph count and
graph breaks (pyprof's module hooks used to add one at every module), and the loss.
"""

import argparse
import json
import sys

import torch
import torch._dynamo


class MLP(torch.nn.Module):
    def __init__(self, graph_break: bool):
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 128)
        self.ln = torch.nn.LayerNorm(128)
        self.fc2 = torch.nn.Linear(128, 10)
        self.graph_break = graph_break

    def forward(self, x):
        h = self.ln(torch.nn.functional.gelu(self.fc1(x)))
        if self.graph_break:
            torch._dynamo.graph_break()
        return self.fc2(torch.relu(h))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--graph-break", action="store_true")
    parser.add_argument("--recompile", choices=("static", "dynamic"),
                        help="after the steps, as many again at batch 8: Dynamo recompiles, "
                             "with static shapes (torch.compile(dynamic=False)) or as it "
                             "chooses (automatic dynamic shapes)")
    parser.add_argument("--then-batch", type=int, metavar="N",
                        help="with --recompile: then as many steps again at batch N (a graph "
                             "compiled with symbolic sizes runs them without recompiling)")
    parser.add_argument("--torch-profiler", metavar="TRACE",
                        help="no pyprof: record the steps with torch.profiler into TRACE")
    parser.add_argument("--no-pyprof", action="store_true", help="plain torch (no profiler)")
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    if not args.torch_profiler and not args.no_pyprof:
        import pyprof
        pyprof.init()
    model = MLP(args.graph_break)
    compiled = torch.compile(model, dynamic=False if args.recompile == "static" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, target = torch.randn(16, 64), torch.randn(16, 10)

    def step(i):
        loss = torch.nn.functional.mse_loss(compiled(x), target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    if args.torch_profiler:
        from torch.profiler import ProfilerActivity, profile
        for i in range(args.steps - 1):  # compile outside the trace
            step(i)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            loss = step(args.steps - 1)
        prof.export_chrome_trace(args.torch_profiler)
    else:
        for i in range(args.steps):
            loss = step(i)
        if args.recompile:
            x, target = torch.randn(8, 64), torch.randn(8, 10)
            for i in range(args.steps):
                loss = step(args.steps + i)
        if args.recompile and args.then_batch:
            x, target = torch.randn(args.then_batch, 64), torch.randn(args.then_batch, 10)
            for i in range(args.steps):
                loss = step(2 * args.steps + i)
    from torch._dynamo.utils import counters
    result = {"graphs": counters["stats"]["unique_graphs"],
              "graph_breaks": sum(counters["graph_break"].values()),
              "break_reasons": [r[:200] for r in counters["graph_break"]],
              "loss": float(loss.detach()),
              "cache_hits": {"fx_graph": counters["inductor"]["fxgraph_cache_hit"],
                             "aot_autograd": counters["aot_autograd"]["autograd_cache_hit"]}}
    if "pyprof" in sys.modules:
        result["pyprof"] = sys.modules["pyprof"].stats()
    print(json.dumps(result))


if __name__ == "__main__":
    main()

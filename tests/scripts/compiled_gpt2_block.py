"""Training steps of a torch.compile'd gpt2-style block on the CPU, for tests/test_compile.py.

    pyprof profile -o NAME -- python tests/scripts/compiled_gpt2_block.py [--steps N]
    pyprof profile -o NAME -- python tests/scripts/compiled_gpt2_block.py --init-after-compile
    python tests/scripts/compiled_gpt2_block.py --flop-counter      (the oracle: no pyprof)

The block: LayerNorm -> Linear (q, k, v) -> causal scaled_dot_product_attention -> Linear, a
residual, LayerNorm -> Linear -> GELU -> Linear, a residual (batch 2, 16 tokens, 64 channels, 4
heads of 16). Inductor runs the attention as an extern call of its own (on the CPU,
aten::_scaled_dot_product_flash_attention_for_cpu and its backward) and fuses the rest into C++
kernels; one of them is the layout copy that the attention backward's gradient input needs,
which Inductor's provenance names after the attention backward node.

By default pyprof.init() comes first. With --init-after-compile the model is compiled and run
(the warm-up) before pyprof.init(), as a program does that profiles an already compiled model;
--recompile then calls pyprof.init(recompile=True).
--flop-counter runs one eager step of the same block under FlopCounterMode and prints its counts.
Prints one JSON line.
"""

import argparse
import json
import sys

import torch


class Block(torch.nn.Module):
    def __init__(self, channels: int = 64, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(channels)
        self.qkv = torch.nn.Linear(channels, 3 * channels)
        self.proj = torch.nn.Linear(channels, channels)
        self.ln2 = torch.nn.LayerNorm(channels)
        self.fc = torch.nn.Linear(channels, 4 * channels)
        self.out = torch.nn.Linear(4 * channels, channels)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = [y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in (q, k, v)]
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x))))


def inputs():
    return torch.randn(2, 16, 64), torch.randn(2, 16, 64)


def flop_counter_step() -> dict:
    """FlopCounterMode's counts of one eager training step. torch 2.13 has no formula for the
    CPU flash attention ops, so they are given FlopCounterMode's own formulas of the CUDA flash
    ops (sdpa_flop, sdpa_backward_flop: the same arguments first, the same kernels' work)."""
    from torch.utils import flop_counter
    from torch.utils.flop_counter import FlopCounterMode

    def as_registered(formula):
        # The registered formulas already take the op's arguments (they are shape-wrapped):
        # `_get_raw` keeps FlopCounterMode from wrapping them again.
        def count(*args, **kwargs):
            return formula(*args, **kwargs)
        count._get_raw = True
        return count

    aten = torch.ops.aten
    mapping = {aten._scaled_dot_product_flash_attention_for_cpu:
                   as_registered(flop_counter.sdpa_flop),
               aten._scaled_dot_product_flash_attention_for_cpu_backward:
                   as_registered(flop_counter.sdpa_backward_flop)}
    torch.manual_seed(0)
    model = Block()
    x, target = inputs()
    with FlopCounterMode(display=False, custom_mapping=mapping) as counter:
        torch.nn.functional.mse_loss(model(x), target).backward()
    return {str(op): int(n) for op, n in counter.get_flop_counts()["Global"].items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--init-after-compile", action="store_true",
                        help="compile and run one step before pyprof.init()")
    parser.add_argument("--recompile", action="store_true",
                        help="with --init-after-compile: pyprof.init(recompile=True)")
    parser.add_argument("--flop-counter", action="store_true",
                        help="no pyprof: FlopCounterMode's counts of one eager step")
    args = parser.parse_args()
    if args.flop_counter:
        print(json.dumps({"flop_counter": flop_counter_step()}))
        return

    torch.manual_seed(0)
    torch.set_num_threads(1)
    if not args.init_after_compile:
        import pyprof
        pyprof.init()
    model = Block()
    compiled = torch.compile(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, target = inputs()

    def step():
        loss = torch.nn.functional.mse_loss(compiled(x), target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    if args.init_after_compile:
        step()  # compiled and warmed up before the profiler is attached
        import pyprof
        pyprof.init(recompile=args.recompile)
    for _ in range(args.steps):
        loss = step()
    result = {"loss": float(loss.detach())}
    if "pyprof" in sys.modules:
        result["pyprof"] = sys.modules["pyprof"].stats()
    print(json.dumps(result))


if __name__ == "__main__":
    main()

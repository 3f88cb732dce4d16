"""Hand-picked op calls whose argument values the test checks, each in a user range "case:LABEL".

    pyprof profile -o NAME -- python tests/scripts/models_values.py

The test takes the outermost op marker inside each "case:LABEL" range and compares its args with
the values written here.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import pyprof  # noqa: E402


def main():
    if not pyprof.init():
        raise SystemExit("pyprof.init() found no NVTX tool: run me under `pyprof profile`")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 4, 6, 6, generator=g)
    w = torch.randn(4, 2, 3, 3, generator=g)
    b = torch.randn(4, generator=g)
    a, c = torch.randn(3, 4, generator=g), torch.randn(4, 5, generator=g)
    cases = {
        "conv": lambda: F.conv2d(x, w, b, stride=2, padding=1, dilation=2, groups=2),
        "to_bf16": lambda: x.to(torch.bfloat16),
        "sum_dims": lambda: torch.sum(x, dim=(0, 2), keepdim=True),
        "gelu_tanh": lambda: F.gelu(x, approximate="tanh"),
        "einsum": lambda: torch.einsum("ij,jk->ik", a, c),
        "channels_last": lambda: x.contiguous(memory_format=torch.channels_last),
        "mul_python_float": lambda: x * 2.5,
        "mul_scalar": lambda: torch.ops.aten.mul.Scalar(x, 2.5),
        "add_alpha": lambda: torch.add(x, x, alpha=2.5),
        "full_inf": lambda: torch.full((2,), float("inf")),
        "full_neg_inf": lambda: torch.full((2,), float("-inf")),
        "full_nan": lambda: torch.full((2,), float("nan")),
        "empty_dtype_layout": lambda: torch.empty(3, dtype=torch.float16, layout=torch.strided),
        "transposed_input": lambda: torch.mm(a.t(), a),
        "cat_300": lambda: torch.cat([b] * 300),
        "empty_70_dims": lambda: torch.empty([1] * 70),
    }
    for label, fn in cases.items():
        with pyprof.range(f"case:{label}"):
            fn()


if __name__ == "__main__":
    main()

"""Custom ops with and without FLOP formulas registered with PyTorch, for
tests/test_flop_registry.py (`pyprof prof --flop-registry flop_registry_ops`). Importing it
registers, with torch.library on the CPU:

- flopreg::gated_mm(Tensor x, Tensor w, float scale) -> Tensor: y = x @ w, then
  y * sigmoid(y) * scale; a fake (meta) implementation; a formula by
  torch.utils.flop_counter.register_flop_formula that uses the output's shape:
  2*M*K*N + 4*numel(out);
- flopreg::no_meta(Tensor x, int k) -> Tensor: x * k; no fake implementation, so the output
  is unknown; formula k * numel(x), which needs no output;
- flopreg::plain(Tensor x) -> Tensor: x + 1; no formula (stays unmodelled);
- flopreg::broken(Tensor x) -> Tensor: x - 1; a formula that raises.
"""

import math

import torch
from torch.utils.flop_counter import register_flop_formula


@torch.library.custom_op("flopreg::gated_mm", mutates_args=())
def gated_mm(x: torch.Tensor, w: torch.Tensor, scale: float) -> torch.Tensor:
    y = x @ w
    return y * torch.sigmoid(y) * scale


@gated_mm.register_fake
def _(x, w, scale):
    return x.new_empty((x.shape[0], w.shape[1]))


@register_flop_formula(torch.ops.flopreg.gated_mm)
def gated_mm_flops(x_shape, w_shape, scale, *args, out_shape=None, **kwargs) -> int:
    m, k = x_shape
    _, n = w_shape
    return 2 * m * k * n + 4 * math.prod(out_shape)


LIB = torch.library.Library("flopreg", "FRAGMENT")
LIB.define("no_meta(Tensor x, int k) -> Tensor")
LIB.impl("no_meta", lambda x, k: x * k, "CPU")


@register_flop_formula(torch.ops.flopreg.no_meta)
def no_meta_flops(x_shape, k, *args, out_shape=None, **kwargs) -> int:
    return k * math.prod(x_shape)


@torch.library.custom_op("flopreg::plain", mutates_args=())
def plain(x: torch.Tensor) -> torch.Tensor:
    return x + 1


@plain.register_fake
def _(x):
    return torch.empty_like(x)


@torch.library.custom_op("flopreg::broken", mutates_args=())
def broken(x: torch.Tensor) -> torch.Tensor:
    return x - 1


@broken.register_fake
def _(x):
    return torch.empty_like(x)


@register_flop_formula(torch.ops.flopreg.broken)
def broken_flops(x_shape, *args, out_shape=None, **kwargs) -> int:
    raise ValueError("broken on purpose")

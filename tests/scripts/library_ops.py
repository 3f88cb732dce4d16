"""Serving-stack custom ops on the CPU, for tests/test_library_ops.py.

    pyprof profile -o NAME -- python tests/scripts/library_ops.py
    python tests/scripts/library_ops.py --torch-profiler TRACE.json

Registers, with torch.library, ops under the names and schemas the libraries register (vLLM's
csrc/torch_bindings.cpp: _C::rms_norm, _C::fused_add_rms_norm, _C::rotary_embedding,
_C::silu_and_mul; flash-attn's flash_attn_interface.py: flash_attn::_flash_attn_forward),
implemented in plain torch, and runs them as one decoder layer would, in bfloat16: RMS norm,
rotary embedding of q and k, causal grouped-query attention, the residual add fused into the
next norm, the gated MLP activation, then apex's RMS norm as its autograd Function. Prints one JSON line with the attention's dense FLOPs as
FlopCounterMode counts torch's own flash attention kernel on the same shapes (the oracle for
flash-attn's dense count).
"""

import argparse
import json

import torch
import torch.nn.functional as F

T, HIDDEN, HQ, HKV, HEAD = 16, 64, 4, 2, 16
DT = torch.bfloat16

_C = torch.library.Library("_C", "DEF")
_C.define("rms_norm(Tensor! result, Tensor input, Tensor weight, float epsilon) -> ()")
_C.define("fused_add_rms_norm(Tensor! input, Tensor! residual, Tensor weight, float epsilon) -> ()")
_C.define("rotary_embedding(Tensor positions, Tensor! query, Tensor!? key, int head_size, "
          "Tensor cos_sin_cache, bool is_neox) -> ()")
_C.define("silu_and_mul(Tensor! result, Tensor input) -> ()")
FLASH = torch.library.Library("flash_attn", "DEF")
FLASH.define("_flash_attn_forward(Tensor q, Tensor k, Tensor v, float dropout_p, "
             "float softmax_scale, bool causal, int window_size_left, int window_size_right, "
             "float softcap, Tensor? alibi_slopes, bool return_softmax) "
             "-> (Tensor, Tensor, Tensor, Tensor)")


def normalize(x, weight, epsilon):
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + epsilon) * weight.float())


def rms_norm(result, input, weight, epsilon):
    result.copy_(normalize(input, weight, epsilon).to(result.dtype))


def fused_add_rms_norm(input, residual, weight, epsilon):
    residual.add_(input)
    input.copy_(normalize(residual, weight, epsilon).to(input.dtype))


def rotate(x, cos, sin, head_size):
    x = x.view(x.shape[0], -1, head_size)
    x1, x2 = x[..., :head_size // 2], x[..., head_size // 2:]
    c, s = cos[:, None, :], sin[:, None, :]
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).flatten(1)


def rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox):
    cos, sin = cos_sin_cache[positions].chunk(2, dim=-1)
    query.copy_(rotate(query, cos, sin, head_size))
    if key is not None:
        key.copy_(rotate(key, cos, sin, head_size))


def silu_and_mul(result, input):
    d = input.shape[-1] // 2
    result.copy_(F.silu(input[..., :d]) * input[..., d:])


def flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, window_size_left,
                       window_size_right, softcap, alibi_slopes, return_softmax):
    # [B, S, H, D] in and out, as flash-attn takes them; GQA by repeating the key/value heads.
    groups = q.shape[2] // k.shape[2]
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k.repeat_interleave(groups, 2),
                                              v.repeat_interleave(groups, 2)))
    out = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, scale=softmax_scale)
    lse = torch.zeros(q.shape[0], q.shape[2], q.shape[1], dtype=torch.float32)
    return out.transpose(1, 2).contiguous(), lse, torch.empty(0, dtype=q.dtype), torch.empty(2)


class FusedRMSNormAffineFunction(torch.autograd.Function):
    """apex's (apex/normalization/fused_layer_norm.py): forward(input, weight,
    normalized_shape, eps, memory_efficient), recorded under the class's name."""

    @staticmethod
    def forward(ctx, input, weight, normalized_shape, eps, memory_efficient=False):
        return normalize(input, weight, eps).to(input.dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad, None, None, None, None


for lib, name, fn in ((_C, "rms_norm", rms_norm), (_C, "fused_add_rms_norm", fused_add_rms_norm),
                      (_C, "rotary_embedding", rotary_embedding),
                      (_C, "silu_and_mul", silu_and_mul),
                      (FLASH, "_flash_attn_forward", flash_attn_forward)):
    lib.impl(name, fn, "CPU")


def layer(x, tensors):
    w_norm, cache, positions = tensors["w_norm"], tensors["cache"], tensors["positions"]
    h = torch.empty_like(x)
    torch.ops._C.rms_norm(h, x, w_norm, 1e-6)
    q = h.clone()                        # [T, HQ*HEAD]
    k = h[:, :HKV * HEAD].contiguous()   # [T, HKV*HEAD]
    v = h[:, HKV * HEAD:].contiguous()
    torch.ops._C.rotary_embedding(positions, q, k, HEAD, cache, True)
    out, _, _, _ = torch.ops.flash_attn._flash_attn_forward(
        q.view(1, T, HQ, HEAD), k.view(1, T, HKV, HEAD), v.view(1, T, HKV, HEAD), 0.0,
        HEAD ** -0.5, True, -1, -1, 0.0, None, False)
    attn = out.reshape(T, HIDDEN)
    residual = x.clone()
    torch.ops._C.fused_add_rms_norm(attn, residual, w_norm, 1e-6)
    gate_up = torch.cat((attn, attn), dim=-1)  # [T, 2*HIDDEN]
    act = torch.empty_like(attn)
    torch.ops._C.silu_and_mul(act, gate_up)
    return FusedRMSNormAffineFunction.apply(act, w_norm, (HIDDEN,), 1e-6, False)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--torch-profiler", metavar="TRACE")
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    tensors = {"w_norm": torch.randn(HIDDEN, dtype=DT),
               "cache": torch.randn(32, HEAD, dtype=DT),
               "positions": torch.arange(T, dtype=torch.int64)}
    x = torch.randn(T, HIDDEN, dtype=DT)
    from torch.utils.flop_counter import FlopCounterMode
    # FlopCounterMode counts the CUDA flash kernel (the CPU one has no formula): on meta
    # tensors, the key/value heads repeated to the query's.
    meta = torch.empty(1, HQ, T, HEAD, dtype=DT, device="meta")
    with FlopCounterMode(display=False) as counter:
        torch.ops.aten._scaled_dot_product_flash_attention(meta, meta, meta, 0.0, True)
    oracle = {"sdpa_dense_flops": counter.get_total_flops()}
    if args.torch_profiler:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            for _ in range(args.steps):
                layer(x, tensors)
        prof.export_chrome_trace(args.torch_profiler)
    else:
        import pyprof
        pyprof.init()
        for _ in range(args.steps):
            layer(x, tensors)
    print(json.dumps(oracle))


if __name__ == "__main__":
    main()

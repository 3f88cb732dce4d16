#!/usr/bin/env python3
"""Writes a large synthetic torch.profiler (Kineto) Chrome trace for the Kineto parse benchmark.

    python benchmarks/make_kineto_trace.py -o /tmp/kineto_2m.json --gzip [--events N] [--seed S]

The file is shaped like `torch.profiler.profile(record_shapes=True)` of a CUDA training loop
exported by torch 2.x (`export_chrome_trace`): the layout torch 2.13 writes (one key per line,
"args" on one line, M metadata events first, every cpu_op and user_annotation before the
device-side events) with the top-level keys schemaVersion, deviceProperties (one A100),
distributedInfo (nccl, rank 0 of 8), trace_id, record_shapes, host_name, displayTimeUnit,
baseTimeNanoseconds, traceEvents, traceName. Timestamps are µs with 3 decimals on the
monotonic clock (~4.5e12 µs, as real traces have: 16 significant digits).

Per step (deterministic for a given --seed):
* a `ProfilerStep#N` user_annotation around the step, `Optimizer.zero_grad#AdamW.zero_grad`;
* input and label copies (aten::to > aten::_to_copy > aten::copy_ → cudaMemcpyAsync → a HtoD
  gpu_memcpy);
* forward of a ViT-B/16-like model (patch conv2d > convolution > _convolution >
  cudnn_convolution, 12 blocks of layer_norm > native_layer_norm, linear > t/view/addmm/
  _unsafe_view, matmul > bmm, mul, softmax > _softmax, relu > clamp_min, add), mean, a
  classifier and cross_entropy_loss > log_softmax / nll_loss_nd (with a cudaMemsetAsync →
  gpu_memset); every op with "Input Dims", "Input type", "Input Strides", "Concrete Inputs"
  consistent with the model's shapes; ops that own an autograd node carry "Sequence number" /
  "Fwd thread id" and start a fwdbwd flow;
* loss.item(): aten::item > aten::_local_scalar_dense → a DtoH copy + cudaStreamSynchronize →
  a cuda_sync "Stream Sync" event;
* backward on the autograd thread: "autograd::engine::evaluate_function: XBackward0" >
  "XBackward0" > the ops it runs (each ending a fwdbwd flow), AccumulateGrad for each parameter,
  and an nccl:all_reduce > record_param_comms per gradient bucket (NCCL kernel on stream 21);
* `Optimizer.step#AdamW.step` with AdamW's `_foreach_*` ops on the parameter lists
  (multi_tensor_apply kernels).
Every kernel, copy and memset has its cuda_runtime launch (External id = the enclosing op's,
correlation shared) and an ac2g s/f flow pair; cudnn's cudaStreamIsCapturing calls carry a lone
ac2g "f" as real traces do.

The file is streamed: one step's events are held in memory at a time (cpu-side events go to the
output, device-side ones to a side file appended at the end). It stops after the first whole
step that reaches --events events and --min-mb megabytes. The exact number of events of each
cat/ph is printed and written to OUT.counts.json (key "cat ph"; "-" where an event has no cat).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import sys
import time

NUM_SMS = 108
DEVICE = 0
COMPUTE_STREAM = 7
NCCL_STREAM = 21
BATCH, TOKENS, WIDTH, HEADS, MLP_WIDTH, BLOCKS, CLASSES = 32, 196, 768, 12, 3072, 12, 1000
PATCH, IMAGE = 16, 224
BUCKET_PARAMS = 40  # parameters per DDP gradient bucket (one all_reduce each)

CBID = {"cudaLaunchKernel": 211, "cudaLaunchKernelExC": 430, "cudaMemcpyAsync": 41,
        "cudaMemsetAsync": 51, "cudaStreamSynchronize": 131, "cudaStreamIsCapturing": 317}

# ------------------------------------------------------------------------------------------------
# Operator inputs as torch.profiler records them with record_shapes=True (torch 2.13).


def strides_of(dims):
    out, step = [], 1
    for d in reversed(dims):
        out.append(step)
        step *= d
    return list(reversed(out))


class T:
    """A tensor input: dims, dtype, optional non-contiguous strides."""

    def __init__(self, dims, dtype="float", strides=None):
        self.dims, self.dtype = list(dims), dtype
        self.strides = list(strides) if strides is not None else strides_of(dims)


def shape_args(inputs) -> str:
    """The four record_shapes keys for a list of inputs: T, a list of T (TensorList), a Python
    list (ScalarList), None, or a scalar (bool, int, float, str)."""
    concrete, types, strides, dims = [], [], [], []
    for x in inputs:
        if isinstance(x, T):
            concrete.append(""), types.append(x.dtype), strides.append(x.strides)
            dims.append(x.dims)
        elif isinstance(x, list) and x and isinstance(x[0], T):
            concrete.append(""), types.append("TensorList")
            strides.append([t.strides for t in x]), dims.append([t.dims for t in x])
        elif isinstance(x, list):
            concrete.append(json.dumps(x)), types.append("ScalarList")
            strides.append([]), dims.append([])
        elif x is None:
            concrete.append(""), types.append(""), strides.append([]), dims.append([])
        else:
            concrete.append(str(x)), types.append("Scalar"), strides.append([]), dims.append([])
    return (f'"Concrete Inputs": {json.dumps(concrete)}, "Input type": {json.dumps(types)}, '
            f'"Input Strides": {json.dumps(strides)}, "Input Dims": {json.dumps(dims)}')


# ------------------------------------------------------------------------------------------------
# Device work an op launches.


class Kernel:
    """A kernel template: name, launch configuration (fixed), typical duration in µs."""

    def __init__(self, name, grid, block, regs, smem, dur_us, stream=COMPUTE_STREAM,
                 launcher="cudaLaunchKernel"):
        self.name_json = json.dumps(name)
        self.dur_ns = int(dur_us * 1000)
        self.stream, self.launcher = stream, launcher
        blocks = grid[0] * grid[1] * grid[2]
        threads = block[0] * block[1] * block[2]
        blocks_per_sm = blocks / NUM_SMS
        warps_per_sm = blocks_per_sm * ((threads + 31) // 32)
        occupancy = min(100, int(100 * warps_per_sm / 64))
        self.static_args = (
            f'"registers per thread": {regs}, "shared memory": {smem}, '
            f'"blocks per SM": {blocks_per_sm:.6f}, "warps per SM": {warps_per_sm:.6f}, '
            f'"grid": {json.dumps(list(grid))}, "block": {json.dumps(list(block))}, '
            f'"est. achieved occupancy %": {occupancy}')


class Copy:
    def __init__(self, kind, nbytes, gbps):
        self.kind, self.nbytes, self.gbps = kind, nbytes, gbps


class Memset:
    def __init__(self, nbytes):
        self.nbytes = nbytes


class StreamSync:
    pass


class RuntimeOnly:
    """A runtime call with no device activity (real traces give it a lone ac2g "f")."""

    def __init__(self, name):
        self.name = name


def ew(functor, arity=3):
    return (f"void at::native::vectorized_elementwise_kernel<4, {functor}, "
            f"at::detail::Array<char*, {arity}> >(int, {functor}, at::detail::Array<char*, {arity}>)")


def gemm(name, m, n, tile_m=128, tile_n=128, dur=40.0):
    grid = (max(1, (n + tile_n - 1) // tile_n), max(1, (m + tile_m - 1) // tile_m), 1)
    return Kernel(name, grid, (256, 1, 1), 238, 65536, dur)


def elementwise_kernel(functor, numel, dur, arity=3):
    return Kernel(ew(functor, arity), (max(1, min(65535, numel // 512)), 1, 1), (128, 1, 1), 26, 0,
                  dur)


ROWS = BATCH * TOKENS
K_CONV_FPROP = Kernel("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_"
                      "tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel"
                      "__5x_cudnn", (49, 6, 1), (128, 1, 1), 168, 81920, 95.0)
K_NCHW2NHWC = Kernel("void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false, "
                     "true, (cudnnKernelDataType_t)2>(cudnn::engines_precompiled::nchw2nhwc_params_t"
                     "<float>, float const*, float*)", (1568, 1, 32), (256, 1, 1), 24, 0, 30.0)
K_CONV_DGRAD = Kernel("sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_"
                      "tilesize128x128x32_stage3_warpsize2x2x1_g1_tensor16x8x8_execute_kernel"
                      "__5x_cudnn", (6, 6, 12), (128, 1, 1), 168, 98304, 140.0)
K_BIAS_ADD = elementwise_kernel("at::native::CUDAFunctor_add<float>", BATCH * WIDTH * TOKENS, 18.0)
K_LN = Kernel("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>"
              "(int, float, float const*, float const*, float const*, float*, float*, float*)",
              (ROWS, 1, 1), (128, 1, 1), 28, 0, 22.0)
K_LN_BW_INPUT = Kernel("void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_"
                       "vectorized<float, float>(float const*, float const*, float const*, float "
                       "const*, float const*, float*, int)", (ROWS, 1, 1), (128, 1, 1), 40, 0, 30.0)
K_LN_BW_GAMMA = Kernel("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32"
                       "<float, float>(long, long, float const*, float const*, float const*, float "
                       "const*, float*, float*)", (24, 1, 1), (32, 32, 1), 64, 8448, 25.0)
K_SOFTMAX = Kernel("void (anonymous namespace)::softmax_warp_forward<float, float, float, 8, false, "
                   "false>(float*, float const*, int, int, int, bool const*, int, bool)",
                   (9408, 1, 1), (32, 4, 1), 48, 0, 60.0)
K_SOFTMAX_BW = Kernel("void (anonymous namespace)::softmax_warp_backward<float, float, float, 8, "
                      "false, false>(float*, float const*, float const*, int, int, int, bool "
                      "const*)", (9408, 1, 1), (32, 4, 1), 56, 0, 75.0)
K_RELU = elementwise_kernel(
    "at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, "
    "c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}"
    "::operator()() const::{lambda(float)#1}", ROWS * MLP_WIDTH, 45.0, 2)
K_RELU_BW = elementwise_kernel(
    "at::native::(anonymous namespace)::threshold_kernel_impl<float>(at::TensorIteratorBase&, "
    "float, float)::{lambda(float, float)#1}", ROWS * MLP_WIDTH, 55.0)
K_ADD = elementwise_kernel("at::native::CUDAFunctor_add<float>", ROWS * WIDTH, 25.0)
K_MUL = elementwise_kernel("at::native::AUnaryFunctor<float, float, float, at::native::"
                           "binary_internal::MulFunctor<float> >", BATCH * HEADS * TOKENS * TOKENS,
                           40.0, 2)
K_SUM = Kernel("void at::native::reduce_kernel<128, 4, at::native::ReduceOp<float, at::native::func_"
               "wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::"
               "TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4> >(at::native"
               "::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, "
               "float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned "
               "int, float, 4, 4>)", (24, 16, 1), (32, 16, 1), 40, 4112, 12.0)
K_MEAN = Kernel("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::"
                "MeanOps<float, float, float, float>, unsigned int, float, 4, 4> >(at::native::"
                "ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, "
                "float, 4, 4>)", (96, 1, 1), (32, 16, 1), 32, 16, 9.0)
K_LOG_SOFTMAX = Kernel("void (anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
                       "(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)",
                       (BATCH, 1, 1), (512, 1, 1), 38, 64, 6.0)
K_NLL = Kernel("void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, "
               "float, long>(float*, float*, float const*, long const*, float const*, bool, long, "
               "long, long, long)", (1, 1, 1), (32, 1, 1), 30, 2048, 5.0)
K_NLL_BW = Kernel("void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d"
                  "<float, long>(float*, float const*, long const*, float const*, float const*, "
                  "bool, int, int, long, long)", (1, 1, 1), (32, 1, 1), 24, 0, 4.0)
K_LOG_SOFTMAX_BW = Kernel("void (anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, "
                          "(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, float const*, "
                          "float const*, int)", (BATCH, 1, 1), (512, 1, 1), 40, 64, 6.0)
K_FILL = elementwise_kernel("at::native::FillFunctor<float>", ROWS * WIDTH, 15.0, 1)
K_NCCL = Kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                (8, 1, 1), (640, 1, 1), 96, 87568, 900.0, stream=NCCL_STREAM,
                launcher="cudaLaunchKernelExC")
ADAM_FUNCTORS = {
    "aten::_foreach_lerp_": "at::native::(anonymous namespace)::TensorListMetadata<3>, at::native::"
                            "(anonymous namespace)::TernaryOpScalarFunctor<float, 3, 2, 0>, "
                            "at::native::LerpFunctor<float>, float",
    "aten::_foreach_mul_": "at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::"
                           "(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, "
                           "std::multiplies<float>, float",
    "aten::_foreach_addcmul_": "at::native::(anonymous namespace)::TensorListMetadata<3>, at::"
                               "native::(anonymous namespace)::PointwiseOpScalarFunctor<float, 3, "
                               "3, 0>, std::multiplies<float>, float",
    "aten::_foreach_sqrt": "at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::"
                           "(anonymous namespace)::UnaryOpFunctor<float, 2, 1, 1>, at::native::"
                           "(anonymous namespace)::Sqrt<float>",
    "aten::_foreach_div_": "at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::"
                           "(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, "
                           "std::divides<float>, float",
    "aten::_foreach_addcdiv_": "at::native::(anonymous namespace)::TensorListMetadata<3>, at::"
                               "native::(anonymous namespace)::PointwiseOpScalarFunctor<float, 3, "
                               "3, 0>, std::divides<float>, float",
    "aten::_foreach_add_": "at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::"
                           "(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, "
                           "std::plus<float>, float",
}
K_ADAM = {op: Kernel(f"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<{f}>({f})",
                     (320, 1, 1), (512, 1, 1), 72, 0, 35.0)
          for op, f in ADAM_FUNCTORS.items()}


def gemm_kernels(m, n, k):
    """cuBLAS kernel for an (m x k) @ (k x n) float GEMM (TF32 tensor cores on an A100)."""
    dur = max(8.0, 2.0 * m * n * k / 120e6)  # ~120 TFLOP/s
    return gemm("ampere_sgemm_128x64_tn" if n < 1024 else
                "sm80_xmma_gemm_tf32f32_tf32f32_f32_tn_n_tilesize128x128x16_stage4_warpsize2x2x1_"
                "tensor16x8x8_execute_kernel_trt", m, n, dur=dur)


# ------------------------------------------------------------------------------------------------
# Op trees. An Op is one cpu_op (or user_annotation) event with its children and device work.


class Op:
    """seq: None, "new" (the op gets the next autograd sequence number) or "same" (it shares
    its parent's, as aten::linear > aten::t do). grad: the backward node this op's autograd
    node runs (an Op whose name is the node's, e.g. "AddmmBackward0"); the op then starts a
    fwdbwd flow. cpu_us: the op's own CPU time."""

    def __init__(self, name, inputs=(), children=(), device=(), seq=None, grad=None, cpu_us=3.0,
                 cat="cpu_op", extra_args=""):
        self.name_json = json.dumps(name)
        self.args = shape_args(inputs) if cat == "cpu_op" and inputs is not None else ""
        self.children, self.device, self.seq, self.grad = list(children), list(device), seq, grad
        self.cpu_ns, self.cat, self.extra_args = int(cpu_us * 1000), cat, extra_args


class Bwd:
    """A backward node: its name, the gradients it receives, the ops it runs, the parameters
    whose AccumulateGrad nodes run after it."""

    def __init__(self, name, grads, children=(), params=()):
        self.name, self.grads, self.children, self.params = name, grads, list(children), list(params)


def transpose_ops(w: T, seq=None, grad=None):
    d0, d1 = w.dims
    return Op("aten::t", [w], seq=seq, grad=grad, children=[
        Op("aten::transpose", [w, 0, 1], children=[
            Op("aten::as_strided", [w, [d1, d0], [1, d1], None], cpu_us=1.0)], cpu_us=2.0)],
        cpu_us=2.0)


def linear(rows3, din, dout, params):
    """aten::linear on a [B, N, din] input (3-D input: view + addmm + _unsafe_view)."""
    x = T(rows3 + [din])
    w, b = T([dout, din]), T([dout])
    params += [w, b]
    rows = rows3[0] * rows3[1]
    x2 = T([rows, din])
    wt = T([din, dout], strides=[1, din])
    out2 = T([rows, dout])
    gout = T([rows, dout])
    addmm_bwd = Bwd("AddmmBackward0", [gout], children=[
        transpose_ops(wt),
        Op("aten::mm", [gout, T([dout, din])], device=[gemm_kernels(rows, din, dout)]),
        transpose_ops(x2),
        Op("aten::mm", [T([din, rows], strides=[1, din]), gout],
           device=[gemm_kernels(din, dout, rows)]),
        Op("aten::sum", [gout, [0], True, None], device=[K_SUM]),
        Op("aten::view", [T([1, dout]), [dout]], cpu_us=1.5),
    ], params=[b])
    t_bwd = Bwd("TBackward0", [T([din, dout])], children=[transpose_ops(T([din, dout]))],
                params=[w])
    view_bwd = Bwd("UnsafeViewBackward0", [T(rows3 + [dout])], children=[
        Op("aten::reshape", [T(rows3 + [dout]), [rows, dout]], children=[
            Op("aten::view", [T(rows3 + [dout]), [rows, dout]], cpu_us=1.0)])])
    return Op("aten::linear", [x, w, b], seq="new", cpu_us=4.0, children=[
        transpose_ops(w, seq="same", grad=t_bwd),
        Op("aten::view", [x, [rows, din]], cpu_us=1.5),
        Op("aten::addmm", [b, x2, wt, 1, 1], seq="new", grad=addmm_bwd,
           device=[gemm_kernels(rows, dout, din)], cpu_us=6.0),
        Op("aten::_unsafe_view", [out2, rows3 + [dout]], seq="new", grad=view_bwd, cpu_us=1.5),
    ])


def layer_norm(rows3, d, params):
    x, w, b = T(rows3 + [d]), T([d]), T([d])
    params += [w, b]
    mean = T(rows3 + [1])
    bwd = Bwd("NativeLayerNormBackward0", [x], children=[
        Op("aten::native_layer_norm_backward", [x, x, [d], mean, mean, w, b, [True, True, True]],
           device=[K_LN_BW_INPUT, K_LN_BW_GAMMA], cpu_us=8.0)], params=[w, b])
    return Op("aten::layer_norm", [x, [d], w, b, "1e-06", "True"], seq="new", children=[
        Op("aten::native_layer_norm", [x, [d], w, b, "1e-06"], seq="same", grad=bwd,
           device=[K_LN], cpu_us=6.0)])


def relu(dims):
    x = T(dims)
    bwd = Bwd("ReluBackward0", [x], children=[
        Op("aten::threshold_backward", [x, x, 0], device=[K_RELU_BW], cpu_us=5.0)])
    return Op("aten::relu", [x], seq="new", grad=bwd, children=[
        Op("aten::clamp_min", [x, 0], device=[K_RELU], cpu_us=5.0)])


def add(dims):
    x = T(dims)
    return Op("aten::add", [x, x, 1], seq="new", grad=Bwd("AddBackward0", [x]),
              device=[K_ADD], cpu_us=5.0)


def matmul(a_dims, b_dims, b_strides=None):
    """aten::matmul of two 4-D tensors: expand + reshape to 3-D, bmm, _unsafe_view back."""
    a, b = T(a_dims), T(b_dims, strides=b_strides)
    n = a_dims[0] * a_dims[1]
    a3, b3 = T([n] + a_dims[2:]), T([n] + b_dims[2:])
    out = a_dims[:3] + [b_dims[3]]
    m, k, nn = a_dims[2], a_dims[3], b_dims[3]
    kern = gemm("ampere_sgemm_64x64_nn", m, nn, 64, 64, dur=max(10.0, 2.0 * n * m * nn * k / 100e6))
    bwd = Bwd("BmmBackward0", [T([n, m, nn])], children=[
        Op("aten::transpose", [b3, 1, 2], children=[
            Op("aten::as_strided", [b3, [n, nn, k], [k * nn, 1, nn], None], cpu_us=1.0)]),
        Op("aten::bmm", [T([n, m, nn]), T([n, nn, k])], device=[kern], cpu_us=6.0),
        Op("aten::transpose", [a3, 1, 2], children=[
            Op("aten::as_strided", [a3, [n, k, m], [m * k, 1, k], None], cpu_us=1.0)]),
        Op("aten::bmm", [T([n, k, m]), T([n, m, nn])], device=[kern], cpu_us=6.0)])
    return Op("aten::matmul", [a, b], seq="new", cpu_us=4.0, children=[
        Op("aten::expand", [a, a_dims, False], cpu_us=1.5, children=[
            Op("aten::as_strided", [a, a_dims, a.strides, None], cpu_us=1.0)]),
        Op("aten::reshape", [a, [n] + a_dims[2:]], children=[
            Op("aten::view", [a, [n] + a_dims[2:]], cpu_us=1.0)]),
        Op("aten::bmm", [a3, b3], seq="new", grad=bwd, device=[kern], cpu_us=6.0),
        Op("aten::_unsafe_view", [T([n, m, nn]), out], cpu_us=1.5),
    ])


def softmax(dims):
    x = T(dims)
    bwd = Bwd("SoftmaxBackward0", [x], children=[
        Op("aten::_softmax_backward_data", [x, x, -1, 6], device=[K_SOFTMAX_BW], cpu_us=5.0)])
    return Op("aten::softmax", [x, -1, None], seq="new", children=[
        Op("aten::_softmax", [x, -1, False], seq="same", grad=bwd, device=[K_SOFTMAX])])


def transformer_block(params):
    rows3 = [BATCH, TOKENS]
    head_dim = WIDTH // HEADS
    q = [BATCH, HEADS, TOKENS, head_dim]
    kt_strides = [TOKENS * 3 * WIDTH, head_dim, 1, 3 * WIDTH]
    scores = [BATCH, HEADS, TOKENS, TOKENS]
    ops = [layer_norm(rows3, WIDTH, params)]
    ops += [linear(rows3, WIDTH, 3 * WIDTH, params),
            matmul(q, [BATCH, HEADS, head_dim, TOKENS], kt_strides)]
    s = T(scores)
    ops.append(Op("aten::mul", [s, "0.125"], seq="new", grad=Bwd("MulBackward0", [s], children=[
        Op("aten::mul", [s, "0.125"], device=[K_MUL], cpu_us=4.0)]), device=[K_MUL], cpu_us=5.0))
    ops += [softmax(scores), matmul(scores, q)]
    ops += [linear(rows3, WIDTH, WIDTH, params), add(rows3 + [WIDTH]),
            layer_norm(rows3, WIDTH, params)]
    ops += [linear(rows3, WIDTH, MLP_WIDTH, params), relu(rows3 + [MLP_WIDTH]),
            linear(rows3, MLP_WIDTH, WIDTH, params), add(rows3 + [WIDTH])]
    return ops


def patch_embedding(params):
    x = T([BATCH, 3, IMAGE, IMAGE])
    w, b = T([WIDTH, 3, PATCH, PATCH]), T([WIDTH])
    params += [w, b]
    conv_args = [x, w, b, [PATCH, PATCH], [0, 0], [1, 1]]
    out = T([BATCH, WIDTH, IMAGE // PATCH, IMAGE // PATCH])
    bwd = Bwd("ConvolutionBackward0", [out], children=[
        Op("aten::convolution_backward", [out, x, w, [WIDTH], [PATCH, PATCH], [0, 0], [1, 1],
                                          False, [0, 0], 1, [False, True, True]],
           device=[RuntimeOnly("cudaStreamIsCapturing"), K_NCHW2NHWC, K_CONV_DGRAD, K_SUM],
           cpu_us=25.0)], params=[w, b])
    conv = Op("aten::conv2d", conv_args + [1], seq="new", cpu_us=4.0, children=[
        Op("aten::convolution", conv_args + [False, [0, 0], 1], seq="same", grad=bwd, children=[
            Op("aten::_convolution", conv_args + [False, [0, 0], 1, False, False, True, True],
               children=[
                   Op("aten::cudnn_convolution", [x, w, [0, 0], [PATCH, PATCH], [1, 1], 1, False,
                                                  False, True],
                      device=[RuntimeOnly("cudaStreamIsCapturing"), K_NCHW2NHWC, K_CONV_FPROP],
                      cpu_us=30.0),
                   Op("aten::view", [b, [1, WIDTH, 1, 1]], cpu_us=1.5),
                   Op("aten::add_", [out, T([1, WIDTH, 1, 1]), 1], device=[K_BIAS_ADD])])])])
    flat = Op("aten::flatten", [out, 2, -1], seq="new", children=[
        Op("aten::view", [out, [BATCH, WIDTH, TOKENS]], seq="same",
           grad=Bwd("ViewBackward0", [T([BATCH, WIDTH, TOKENS])], children=[
               Op("aten::reshape", [T([BATCH, WIDTH, TOKENS]), list(out.dims)], children=[
                   Op("aten::view", [T([BATCH, WIDTH, TOKENS]), list(out.dims)], cpu_us=1.0)])]),
           cpu_us=1.5)])
    tokens = T([BATCH, WIDTH, TOKENS])
    trans = Op("aten::transpose", [tokens, 1, 2], seq="new",
               grad=Bwd("TransposeBackward0", [T([BATCH, TOKENS, WIDTH])], children=[
                   Op("aten::transpose", [T([BATCH, TOKENS, WIDTH]), 1, 2], cpu_us=2.0)]),
               children=[Op("aten::as_strided", [tokens, [BATCH, TOKENS, WIDTH],
                                                 [WIDTH * TOKENS, 1, TOKENS], None], cpu_us=1.0)])
    return [conv, flat, trans]


def head_and_loss(params):
    rows3 = [BATCH, TOKENS]
    ops = [layer_norm(rows3, WIDTH, params)]
    x = T(rows3 + [WIDTH])
    ops.append(Op("aten::mean", [x, [1], False, None], seq="new",
                  grad=Bwd("MeanBackward1", [T([BATCH, WIDTH])], children=[
                      Op("aten::expand", [T([BATCH, 1, WIDTH]), rows3 + [WIDTH], False]),
                      Op("aten::div", [T(rows3 + [WIDTH], strides=[WIDTH, 0, 1]), TOKENS],
                         device=[K_ADD])]),
                  device=[K_MEAN], cpu_us=8.0))
    w, b = T([CLASSES, WIDTH]), T([CLASSES])
    params += [w, b]
    logits = T([BATCH, CLASSES])
    g = T([BATCH, CLASSES])
    t_bwd = Bwd("TBackward0", [T([WIDTH, CLASSES])], children=[transpose_ops(T([WIDTH, CLASSES]))],
                params=[w])
    ops.append(Op("aten::linear", [T([BATCH, WIDTH]), w, b], seq="new", children=[
        transpose_ops(w, seq="same", grad=t_bwd),
        Op("aten::addmm", [b, T([BATCH, WIDTH]), T([WIDTH, CLASSES], strides=[1, WIDTH]), 1, 1],
           seq="new", device=[gemm_kernels(BATCH, CLASSES, WIDTH)],
           grad=Bwd("AddmmBackward0", [g], children=[
               transpose_ops(T([WIDTH, CLASSES], strides=[1, WIDTH])),
               Op("aten::mm", [g, w], device=[gemm_kernels(BATCH, WIDTH, CLASSES)]),
               transpose_ops(T([BATCH, WIDTH])),
               Op("aten::mm", [T([WIDTH, BATCH], strides=[1, WIDTH]), g],
                  device=[gemm_kernels(WIDTH, CLASSES, BATCH)]),
               Op("aten::sum", [g, [0], True, None], device=[K_SUM]),
               Op("aten::view", [T([1, CLASSES]), [CLASSES]])], params=[b]))]))
    labels = T([BATCH], "long int")
    ops.append(Op("aten::cross_entropy_loss", [logits, labels, None, 1, -100, "0."], seq="new",
                  cpu_us=4.0, children=[
        Op("aten::log_softmax", [logits, 1, None], seq="same", children=[
            Op("aten::_log_softmax", [logits, 1, False], seq="same", device=[K_LOG_SOFTMAX],
               grad=Bwd("LogSoftmaxBackward0", [logits], children=[
                   Op("aten::_log_softmax_backward_data", [logits, logits, 1, 6],
                      device=[K_LOG_SOFTMAX_BW])]))]),
        Op("aten::nll_loss_nd", [logits, labels, None, 1, -100], seq="new", children=[
            Op("aten::nll_loss", [logits, labels, None, 1, -100], seq="same", children=[
                Op("aten::nll_loss_forward", [logits, labels, None, 1, -100], seq="same",
                   grad=Bwd("NllLossBackward0", [T([])], children=[
                       Op("aten::nll_loss_backward", [T([]), logits, labels, None, 1, -100, T([])],
                          children=[Op("aten::zero_", [logits], device=[Memset(BATCH * CLASSES * 4)])],
                          device=[K_NLL_BW])]),
                   device=[Memset(4), K_NLL], cpu_us=7.0)])])]))
    return ops


def build_model():
    """(forward ops, parameters in registration order)."""
    params = []
    ops = patch_embedding(params)
    for _ in range(BLOCKS):
        ops += transformer_block(params)
    ops += head_and_loss(params)
    return ops, params


def input_copies():
    images = T([BATCH, 3, IMAGE, IMAGE])
    labels = T([BATCH], "long int")

    def to_cuda(t, nbytes):
        return Op("aten::to", [t, None, 0, None, None, False, False, None], cpu_us=3.0, children=[
            Op("aten::_to_copy", [t, None, 0, None, None, False, None], children=[
                Op("aten::empty_strided", [t.dims, t.strides, 6 if t.dtype == "float" else 4, 0,
                                           None, False], cpu_us=4.0),
                Op("aten::copy_", [t, t, False], device=[Copy("HtoD (Pageable -> Device)", nbytes,
                                                              11.5)], cpu_us=6.0)])])
    return [to_cuda(images, BATCH * 3 * IMAGE * IMAGE * 4), to_cuda(labels, BATCH * 8)]


def loss_item():
    s = T([])
    return Op("aten::item", [s], seq="new", children=[
        Op("aten::_local_scalar_dense", [s], seq="same",
           device=[Copy("DtoH (Device -> Pageable)", 4, 0.002), StreamSync()], cpu_us=5.0)])


def adamw_step(params):
    lists = [params]
    ops = []
    steps = [T([]) for _ in params]
    ops.append(Op("aten::_foreach_add_", [steps, 1], device=[], cpu_us=12.0,
                  children=[Op("aten::add_", [steps[0], 1], cpu_us=2.0)]))
    for name, arity, scalar in [("aten::_foreach_lerp_", 2, "0.10000000000000001"),
                                ("aten::_foreach_mul_", 1, "0.999"),
                                ("aten::_foreach_addcmul_", 3, "0.0010000000000000009"),
                                ("aten::_foreach_sqrt", 1, None),
                                ("aten::_foreach_div_", 1, "0.031622776601683805"),
                                ("aten::_foreach_add_", 1, "1e-08"),
                                ("aten::_foreach_addcdiv_", 3, "-0.001")]:
        inputs = lists * arity + ([scalar] if scalar else [])
        launches = max(1, len(params) // 48)
        ops.append(Op(name, inputs, device=[K_ADAM[name]] * launches, cpu_us=20.0))
    return ops


# ------------------------------------------------------------------------------------------------
# Writing events (the layout torch 2.13's export_chrome_trace uses).


def us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


class TraceWriter:
    def __init__(self, path: str, seed: int):
        self.rng = random.Random(seed)
        self.path = path
        self.device_path = path + ".device.part"
        self.out = open(path, "w", encoding="ascii", buffering=1 << 20)
        self.device_out = open(self.device_path, "w", encoding="ascii", buffering=1 << 20)
        self.counts: dict[str, int] = {}
        self.events = 0
        self.pid = 2_000_000 + self.rng.randrange(1_000_000)
        self.main_tid = self.pid
        self.bwd_tid = self.pid + 9503
        self.start_ns = 4_458_676_388_068_751 + self.rng.randrange(1_000_000_000)
        self.t = self.start_ns + 40_000_000  # profiler start → first step
        self.gpu_free = {COMPUTE_STREAM: self.t, NCCL_STREAM: self.t}
        self.ext = 0
        self.ev_idx = 0
        self.corr = 1_000
        self.seq = 0
        self.flow = 0
        self.empty = {id(self.out): True, id(self.device_out): True}

    # -- counting and raw output ----------------------------------------------------------------
    def count(self, cat: str, ph: str, n: int = 1):
        key = f"{cat} {ph}"
        self.counts[key] = self.counts.get(key, 0) + n
        self.events += n

    def jitter(self, ns: int) -> int:
        return max(500, int(ns * (0.8 + 0.4 * self.rng.random())))

    # -- event text ----------------------------------------------------------------------------
    @staticmethod
    def x_event(cat, name_json, pid, tid, ts, dur, args):
        return (f'  {{\n    "ph": "X",\n    "cat": "{cat}",\n    "name": {name_json},\n'
                f'    "pid": {pid},\n    "tid": {tid},\n    "ts": {us(ts)},\n    "dur": {us(dur)}\n'
                f'    ,\n    "args": {{\n      {args}\n    }}\n  }}')

    @staticmethod
    def flow_event(ph, cat, fid, pid, tid, ts):
        tail = '    , "bp": "e"\n' if ph == "f" else "    \n"
        return (f'  {{\n    "ph": "{ph}",\n    "id": {fid},\n    "pid": {pid},\n    "tid": {tid},\n'
                f'    "ts": {us(ts)},\n    "cat": "{cat}",\n    "name": "{cat}"\n{tail}  }}')

    # -- running an op tree on a thread --------------------------------------------------------
    def run_op(self, op: Op, tid: int, cpu: list, dev: list, pending: list,
               inherited_seq=None, fwd_thread=0):
        # dispatcher/Python time before the op starts: siblings never touch (as in real traces)
        self.t += 300 + self.rng.randrange(900)
        start = self.t
        self.ext += 1
        ext = self.ext
        ev_idx = self.ev_idx
        self.ev_idx += 1
        slot = len(cpu)
        cpu.append(None)
        seq = None
        if op.seq == "new":
            seq = self.seq
            self.seq += 1
        elif op.seq == "same":
            seq = inherited_seq
        if op.grad is not None:
            self.flow += 1
            cpu.append(self.flow_event("s", "fwdbwd", self.flow, self.pid, tid, start))
            self.count("fwdbwd", "s")
            pending.append((seq, self.flow, op.grad))
        self.t += self.jitter(op.cpu_ns) // 2
        for child in op.children:
            self.run_op(child, tid, cpu, dev, pending, seq, fwd_thread)
        for work in op.device:
            self.launch(work, ext, tid, dev)
        self.t += self.jitter(op.cpu_ns) // 2
        if op.cat == "cpu_op":
            seq_args = (f'"Sequence number": {seq}, "Fwd thread id": {fwd_thread}, '
                        if seq is not None else "")
            args = (f'"External id": {ext},{seq_args}"Record function id": 0, '
                    f'{op.args}{", " if op.args else ""}{op.extra_args}'
                    f'{", " if op.extra_args else ""}"Ev Idx": {ev_idx}')
        else:
            args = f'"External id": {ext}, "Record function id": 0, "Ev Idx": {ev_idx}'
        cpu[slot] = self.x_event(op.cat, op.name_json, self.pid, tid, start, self.t - start, args)
        self.count(op.cat, "X")

    def runtime_event(self, name, ext, corr, tid, start, dur):
        return self.x_event("cuda_runtime", f'"{name}"', self.pid, tid, start, dur,
                            f'"External id": {ext},      "cbid": {CBID[name]}, '
                            f'"correlation": {corr}')

    def launch(self, work, ext: int, tid: int, dev: list):
        self.corr += 1
        corr = self.corr
        start = self.t
        if isinstance(work, RuntimeOnly):
            dur = self.jitter(1500)
            dev.append(self.runtime_event(work.name, ext, corr, tid, start, dur))
            dev.append(self.flow_event("f", "ac2g", corr, self.pid, tid, start))
            self.count("cuda_runtime", "X")
            self.count("ac2g", "f")
            self.t += dur
            return
        if isinstance(work, StreamSync):
            gpu_start = max(self.gpu_free[COMPUTE_STREAM], start + 2_000)
            end = gpu_start + self.jitter(3_000)
            dur = end - start + 2_000
            dev.append(self.x_event(
                "cuda_sync", '"Stream Sync"', DEVICE, COMPUTE_STREAM, gpu_start, end - gpu_start,
                f'"External id": {ext}, "cuda_sync_kind": "Stream Sync", "stream": '
                f'{COMPUTE_STREAM}, "correlation": {corr}, "device": {DEVICE}, "context": 1'))
            dev.append(self.runtime_event("cudaStreamSynchronize", ext, corr, tid, start, dur))
            self.count("cuda_sync", "X")
            self.count("cuda_runtime", "X")
            self.t += dur
            return
        stream = work.stream if isinstance(work, Kernel) else COMPUTE_STREAM
        gpu_start = max(self.gpu_free[stream], start + self.jitter(5_000))
        if isinstance(work, Kernel):
            api = work.launcher
            gpu_dur = self.jitter(work.dur_ns)
            api_dur = self.jitter(6_000)
            text = self.x_event("kernel", work.name_json, DEVICE, stream, gpu_start, gpu_dur,
                                f'"External id": {ext},      "queued": 0, "device": {DEVICE}, '
                                f'"context": 1,      "stream": {stream}, "correlation": {corr}, '
                                f'     {work.static_args}')
            cat = "kernel"
        else:
            if isinstance(work, Copy):
                api, cat = "cudaMemcpyAsync", "gpu_memcpy"
                gpu_dur = self.jitter(int(work.nbytes / work.gbps) + 1_500)
                name = f'"Memcpy {work.kind}"'
            else:
                api, cat = "cudaMemsetAsync", "gpu_memset"
                gpu_dur = self.jitter(int(work.nbytes / 1000) + 1_200)
                name = '"Memset (Device)"'
            bw = work.nbytes / gpu_dur
            text = self.x_event(cat, name, DEVICE, stream, gpu_start, gpu_dur,
                                f'"External id": {ext},      "device": {DEVICE}, "context": 1,'
                                f'      "stream": {stream}, "correlation": {corr},      '
                                f'"bytes": {work.nbytes}, "memory bandwidth (GB/s)": {bw!r}')
            # a pageable copy returns when the data has moved
            synchronous = isinstance(work, Copy) and "Pageable" in work.kind
            api_dur = (gpu_start + gpu_dur - start + self.jitter(3_000) if synchronous
                       else self.jitter(7_000))
        self.gpu_free[stream] = gpu_start + gpu_dur
        dev.append(text)
        dev.append(self.flow_event("f", "ac2g", corr, DEVICE, stream, gpu_start))
        dev.append(self.runtime_event(api, ext, corr, tid, start, api_dur))
        dev.append(self.flow_event("s", "ac2g", corr, self.pid, tid, start))
        self.count(cat, "X")
        self.count("ac2g", "f")
        self.count("cuda_runtime", "X")
        self.count("ac2g", "s")
        self.t += api_dur

    def run_backward(self, pending, cpu, dev):
        """Backward nodes in reverse sequence order on the autograd thread."""
        tid = self.bwd_tid
        grads_done = 0
        bucket = 0
        for seq, flow, bwd in reversed(pending):
            self.t += self.jitter(4_000)
            start = self.t
            self.ext += 1
            ev_outer = self.ev_idx
            self.ev_idx += 1
            ext_outer = self.ext
            slot = len(cpu)
            cpu.append(None)
            self.t += self.jitter(1_000)
            # the node itself
            node_start = self.t
            self.ext += 1
            ext_node = self.ext
            ev_node = self.ev_idx
            self.ev_idx += 1
            node_slot = len(cpu)
            cpu.append(None)
            cpu.append(self.flow_event("f", "fwdbwd", flow, self.pid, tid, node_start))
            self.count("fwdbwd", "f")
            self.t += self.jitter(2_000)
            for child in bwd.children:
                self.run_op(child, tid, cpu, dev, [], None, 1)
            self.t += self.jitter(2_000)
            node_args = (f'"External id": {ext_node},"Sequence number": {seq}, "Fwd thread id": 1, '
                         f'"Record function id": 0, {shape_args(bwd.grads)}, "Ev Idx": {ev_node}')
            cpu[node_slot] = self.x_event("cpu_op", json.dumps(bwd.name), self.pid, tid,
                                          node_start, self.t - node_start, node_args)
            self.count("cpu_op", "X")
            self.t += self.jitter(1_000)
            cpu[slot] = self.x_event(
                "cpu_op", json.dumps("autograd::engine::evaluate_function: " + bwd.name), self.pid, tid, start, self.t - start,
                f'"External id": {ext_outer}, "Record function id": 0, "Sequence number": {seq}, '
                f'"Fwd thread id": 1, "Ev Idx": {ev_outer}')
            self.count("cpu_op", "X")
            for p in bwd.params:
                self.accumulate_grad(p, tid, cpu, dev)
                grads_done += 1
                if grads_done % BUCKET_PARAMS == 0:
                    self.all_reduce(bucket, tid, cpu, dev)
                    bucket += 1
        if grads_done % BUCKET_PARAMS:
            self.all_reduce(bucket, tid, cpu, dev)

    def accumulate_grad(self, p: T, tid, cpu, dev):
        # the outer evaluate_function event has no inputs, hence no shapes
        node = Op("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", None,
                  cpu_us=4.0, children=[
                      Op("torch::autograd::AccumulateGrad", [p], cpu_us=4.0, children=[
                          Op("aten::detach", [p], cpu_us=2.0, children=[
                              Op("detach", [p], cpu_us=1.0)])])])
        self.t += self.jitter(2_000)
        self.run_op(node, tid, cpu, dev, [], None, 1)

    def all_reduce(self, bucket, tid, cpu, dev):
        nelems = 6_000_000 + 123_457 * bucket
        comm_args = (f'"Process Group Name": "0", "Global rank stride": 1, "Out msg nelems": '
                     f'{nelems}, "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]", "Group size": '
                     f'8, "Global rank start": 0, "In msg nelems": {nelems}, "In split size": "[]",'
                     f' "Out split size": "[]", "dtype": "Float", "Process Group Description": '
                     f'"default_pg", "Collective name": "allreduce"')
        comms = Op("record_param_comms", None, device=[K_NCCL], cpu_us=30.0, extra_args=comm_args)
        annotation = Op("nccl:all_reduce", None, cat="user_annotation", children=[comms],
                        cpu_us=10.0)
        self.t += self.jitter(3_000)
        self.run_op(annotation, tid, cpu, dev, [], None, 1)

    # -- a training step -----------------------------------------------------------------------
    def step(self, number: int, model):
        forward_ops, params = model
        cpu: list = []
        dev: list = []
        pending: list = []
        tid = self.main_tid
        step_start = self.t
        self.ext += 1
        step_ext, step_ev = self.ext, self.ev_idx
        self.ev_idx += 1
        slot = len(cpu)
        cpu.append(None)
        self.t += self.jitter(20_000)
        self.run_op(Op("Optimizer.zero_grad#AdamW.zero_grad", None, cat="user_annotation",
                       cpu_us=60.0), tid, cpu, dev, pending)
        for op in input_copies():
            self.run_op(op, tid, cpu, dev, pending)
        for op in forward_ops:
            self.t += self.jitter(6_000)  # Python between ops
            self.run_op(op, tid, cpu, dev, pending)
        self.run_op(loss_item(), tid, cpu, dev, pending)
        # loss.backward(): the main thread waits while the autograd thread runs the graph
        self.t += self.jitter(30_000)
        self.run_backward(pending, cpu, dev)
        self.t += self.jitter(40_000)
        step_op = Op("Optimizer.step#AdamW.step", None, cat="user_annotation", cpu_us=80.0,
                     children=adamw_step(params))
        self.run_op(step_op, tid, cpu, dev, [])
        self.t += self.jitter(15_000)
        cpu[slot] = self.x_event("user_annotation", f'"ProfilerStep#{number}"', self.pid, tid,
                                 step_start, self.t - step_start,
                                 f'"External id": {step_ext}, "Record function id": 0, '
                                 f'"Ev Idx": {step_ev}')
        self.count("user_annotation", "X")
        self.t += self.jitter(50_000)
        self.write_events(self.out, cpu)
        self.write_events(self.device_out, dev)

    def write_events(self, f, texts):
        if not texts:
            return
        if self.empty[id(f)]:
            self.empty[id(f)] = False
            f.write(",\n".join(texts))
        else:
            f.write(",\n" + ",\n".join(texts))

    # -- file layout ---------------------------------------------------------------------------
    def metadata_events(self):
        ts = self.start_ns + 27_000_000
        out = []

        def m(name, pid, tid, key, value):
            out.append(f'  {{\n    "ph": "M",\n    "name": "{name}",\n    "ts": {us(ts)},\n'
                       f'    "pid": {json.dumps(pid)},\n    "tid": {tid},\n    "args": {{\n'
                       f'      "{key}": {json.dumps(value)}\n    }}\n  }}')
            self.count("-", "M")
        m("process_name", self.pid, 0, "name", "python3")
        m("process_labels", self.pid, 0, "labels", "CPU")
        m("process_sort_index", self.pid, 0, "sort_index", self.pid)
        m("process_name", DEVICE, 0, "name", "python3")
        m("process_labels", DEVICE, 0, "labels", f"GPU {DEVICE}")
        m("process_sort_index", DEVICE, 0, "sort_index", 16777216 + DEVICE)
        for stream in (COMPUTE_STREAM, NCCL_STREAM):
            m("thread_name", DEVICE, stream, "name", f"stream {stream} ")
            m("thread_sort_index", DEVICE, stream, "sort_index", stream)
        m("thread_name", self.pid, self.main_tid, "name", f"thread {self.main_tid} (python3)")
        m("thread_sort_index", self.pid, self.main_tid, "sort_index", self.main_tid)
        m("thread_name", self.pid, self.bwd_tid, "name", f"thread {self.bwd_tid} (pt_autograd_0)")
        m("thread_sort_index", self.pid, self.bwd_tid, "sort_index", self.bwd_tid)
        return out

    def header(self, trace_name):
        device = (
            '    {\n      "id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85097971712,\n'
            '      "computeMajor": 8, "computeMinor": 0,\n'
            '      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,\n'
            '      "regsPerBlock": 65536, "warpSize": 32,\n'
            f'      "sharedMemPerBlock": 49152, "numSms": {NUM_SMS}\n'
            '    , "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 166912, '
            '"sharedMemPerMultiprocessor": 167936\n    }')
        dist = ('{"backend": "nccl", "rank": 0, "world_size": 8, "pg_count": 1, "pg_config": '
                '[{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", '
                '"pg_size": 8, "ranks": [0, 1, 2, 3, 4, 5, 6, 7]}], "nccl_version": "2.21.5"}')
        trace_id = "%032X" % self.rng.getrandbits(128)
        return (f'{{\n  "schemaVersion": 1,\n  "deviceProperties": [\n{device}\n  ],\n'
                f'  "distributedInfo": {dist},\n'
                f'  "trace_id": "{trace_id}",\n  "record_shapes": 1,\n  "host_name": "bench-node",\n'
                f'  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": 1790857026000000000,\n'
                f'  "traceEvents": [\n')

    def trailer_events(self):
        end = self.t
        out = [
            (f'  {{\n    "ph": "X",\n    "cat": "Trace",\n    "name": "PyTorch Profiler (0)",\n'
             f'    "pid": "Spans",\n    "tid": "PyTorch Profiler",\n    "ts": {us(self.start_ns)},\n'
             f'    "dur": {us(end - self.start_ns)}\n    ,\n    "args": {{\n      "Op count": 0\n'
             f'    }}\n  }}'),
            (f'  {{\n    "ph": "M",\n    "name": "process_sort_index",\n    "ts": {us(self.start_ns)},'
             f'\n    "pid": "Spans",\n    "tid": 0,\n    "args": {{\n      "sort_index": 536870912\n'
             f'    }}\n  }}'),
            (f'  {{\n    "ph": "i",\n    \n    "s": "g",\n    "name": "Iteration Start: PyTorch '
             f'Profiler",\n    "pid": "Traces",\n    "tid": "Trace PyTorch Profiler",\n'
             f'    "ts": {us(self.start_ns)}\n    \n  }}'),
            (f'  {{\n    "ph": "i",\n    \n    "s": "g",\n    "name": "Record Window End",\n'
             f'    "pid": "",\n    "tid": "",\n    "ts": {us(end + 1_000_000)}\n    \n  }}'),
        ]
        self.count("Trace", "X")
        self.count("-", "M")
        self.count("-", "i", 2)
        return out


def generate(path: str, target_events: int, min_bytes: int, seed: int, log=print) -> dict:
    w = TraceWriter(path, seed)
    model = build_model()
    w.out.write(w.header(os.path.basename(path)))
    w.write_events(w.out, w.metadata_events())
    trailer_count = 4
    number = 1000 + w.rng.randrange(1000)
    steps = 0
    started = time.perf_counter()
    while True:
        w.step(number + steps, model)
        steps += 1
        if steps == 1 or steps % 20 == 0:
            log(f"  step {steps}: {w.events:,} events, "
                f"{(w.out.tell() + w.device_out.tell()) / 1e6:.0f} MB, "
                f"{time.perf_counter() - started:.0f} s")
        if (w.events + trailer_count >= target_events
                and w.out.tell() + w.device_out.tell() >= min_bytes):
            break
    w.device_out.close()
    with open(w.device_path, encoding="ascii") as dev:
        if not w.empty[id(w.device_out)]:
            w.out.write(",\n")
            shutil.copyfileobj(dev, w.out, 1 << 22)
    os.unlink(w.device_path)
    w.write_events(w.out, w.trailer_events())
    w.out.write(f'\n  ],"traceName": {json.dumps(path)} }}\n')
    w.out.close()
    return {"traceEvents": w.events, "steps": steps, "seed": seed,
            "json_bytes": os.path.getsize(path),
            "by_cat_ph": dict(sorted(w.counts.items()))}


def gzip_file(src: str, dst: str):
    """gzip level 6 with mtime 0 and no file name in the header, so the output is
    deterministic."""
    with open(src, "rb") as fin, open(dst + ".part", "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", compresslevel=6, fileobj=raw, mtime=0) as gz:
            shutil.copyfileobj(fin, gz, 1 << 22)
    os.replace(dst + ".part", dst)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", required=True, help="trace to write, e.g. /tmp/k.json")
    ap.add_argument("--events", type=int, default=None,
                    help="at least this many traceEvents (default 2,000,000)")
    ap.add_argument("--min-mb", type=float, default=None,
                    help="at least this many MB of JSON (default 400 without --events, else 0)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gzip", action="store_true", help="also write OUTPUT.gz (level 6)")
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args()
    events = a.events if a.events is not None else 2_000_000
    min_mb = a.min_mb if a.min_mb is not None else (400.0 if a.events is None else 0.0)
    log = (lambda *_: None) if a.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    t0 = time.perf_counter()
    counts = generate(a.output, events, int(min_mb * 1e6), a.seed, log)
    t1 = time.perf_counter()
    log(f"wrote {a.output}: {counts['json_bytes'] / 1e6:.1f} MB in {t1 - t0:.1f} s")
    if a.gzip:
        gzip_file(a.output, a.output + ".gz")
        counts["gz_bytes"] = os.path.getsize(a.output + ".gz")
        log(f"wrote {a.output}.gz: {counts['gz_bytes'] / 1e6:.1f} MB in "
            f"{time.perf_counter() - t1:.1f} s")
    with open(a.output + ".counts.json", "w") as f:
        json.dump(counts, f, indent=1)
        f.write("\n")
    print(json.dumps(counts, indent=1))


if __name__ == "__main__":
    main()

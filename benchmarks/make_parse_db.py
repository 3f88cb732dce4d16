#!/usr/bin/env python3
"""Writes a benchmark database for `pyprof parse`: an Nsight-Systems-layout SQLite file shaped
like a real pyprof profile of a training loop.

    python benchmarks/make_parse_db.py --kernels 1000000 -o /tmp/parse_1m.sqlite

What is in it (per iteration, per process; deterministic, no randomness):
* a user range "iteration N" (default domain, plain text, colored) around everything;
* input/target copies: aten::to > aten::_to_copy > aten::copy_ with a HtoD memcpy on the copy
  stream (13) inside a record_function scope "prefetch", plus a normalisation op whose kernel
  runs on stream 13;
* forward of a small CNN (Net: 2 x [Conv2d, BatchNorm2d, ReLU, MaxPool2d], Flatten, Linear,
  ReLU, Dropout, Linear) and a CrossEntropyLoss: module markers (registered NVTX strings in the
  "pyprof" domain) around nested op markers (aten::conv2d > aten::convolution >
  aten::_convolution > aten::cudnn_convolution, ...) that share the autograd sequence number of
  the node they create, with realistic argument JSON (shapes, dtypes, strides, scalars);
  1-3 kernels per op that launches any (aten::t, aten::view... launch none);
* backward on a second thread (the autograd device thread, RecordFunction tid 2):
  "autograd::engine::evaluate_function: XBackward0" > "XBackward0" (scope backward, seq N,
  fwd_tid 1) > the ops it runs; AccumulateGrad nodes for every parameter; a memset in the loss
  backward;
* Optimizer.zero_grad / Optimizer.step record_function scopes with Adam's `_foreach_*` ops on
  tensor lists (multi_tensor_apply kernels);
* every 10th iteration loss.item(): a DtoH memcpy and cudaStreamSynchronize.
* with --processes N > 1: N processes (device = rank) whose CUPTI correlation ids collide, and
  an NCCL all-reduce kernel per iteration on stream 19.

About 3 NVTX ranges per kernel. Layout: nsys 2024.6 (`--layout` for others). Rows are written in
chunks inside one transaction (memory stays small for any size). `--legacy-compatible` writes
module markers as plain text instead of registered strings, because NVIDIA PyProf's nsys parser
reads only NVTX_EVENTS.text and fails on a range whose text is NULL; it also writes the "mod" of
"ceil_mode" keys as "m\\u006fd" (same JSON), since PyProf eval()s any text containing "mod", "op",
"args" and "type" as one of its own markers. `--interned` writes op markers in the interned form
pyprof's annotator records by default since marker schema v2 (docs/formats.md §1.1): each
distinct marker a registered string, the op id as the row's uint64Value and seq + 1 as its
category; without it they are plain-text v1 markers (an older pyprof, or PYPROF_MARKERS=text).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from nsys_synth import LAYOUTS, RowWriter, SynthDb, Thread, columns, tensor  # noqa: E402

BATCH = 64
MAIN_STREAM, COPY_STREAM, NCCL_STREAM = 7, 13, 19

# -- kernel names (demangled, as CUPTI reports them on an H100 with PyTorch 2.x) ----------------
K_FILL = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
          "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
          "at::detail::Array<char*, 1>)")
K_DIV = ("void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, "
         "float, float, at::native::binary_internal::DivFunctor<float> >, at::detail::Array<char*, "
         "2> >(int, at::native::AUnaryFunctor<float, float, float, "
         "at::native::binary_internal::DivFunctor<float> >, at::detail::Array<char*, 2>)")
K_NCHW2NHWC = ("void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false, "
               "true, (cudnnKernelDataType_t)2>(cudnn::engines_precompiled::nchw2nhwc_params_t"
               "<float>, float const*, float*)")
K_CONV_FPROP = ("sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x32"
                "_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cudnn")
K_CONV_DGRAD = ("sm90_xmma_dgrad_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x32"
                "_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cudnn")
K_CONV_WGRAD = ("sm90_xmma_wgrad_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nchw_tilesize64x64x32"
                "_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cudnn")
K_BN_FWD = ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>"
            "(cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, float "
            "const*, float, float, float*, float*, float*, float*, float, float)")
K_BN_BWD = ("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float, float, "
            "float, float, cudnnTensorStruct, float const*, cudnnTensorStruct, float const*, "
            "cudnnTensorStruct, float*, float const*, float*, float*, float const*, float const*, "
            "float)")
K_RELU = ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
          "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
          "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::"
          "operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, "
          "at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, "
          "c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() "
          "const::{lambda()#7}::operator()() const::{lambda(float)#1}, "
          "at::detail::Array<char*, 2>)")
K_RELU_BWD = ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
              "namespace)::threshold_kernel_impl<float>(at::TensorIteratorBase&, float, float)::"
              "{lambda(float, float)#1}, at::detail::Array<char*, 3> >(int, at::native::"
              "(anonymous namespace)::threshold_kernel_impl<float>(at::TensorIteratorBase&, float, "
              "float)::{lambda(float, float)#1}, at::detail::Array<char*, 3>)")
K_POOL = ("void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, "
          "float const*, long, long, long, int, int, int, int, int, int, int, int, int, int, "
          "float*, long*)")
K_POOL_BWD = ("void at::native::(anonymous namespace)::max_pool_backward_nchw<float, float>("
              "float const*, long const*, int, long, long, long, int, int, int, int, int, int, "
              "int, int, int, int, float*)")
K_GEMM = ("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute"
          "_segment_k_off_kernel__5x_cublas")
K_GEMM_NN = ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>"
             "(cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4::Params)")
K_SPLITK = ("void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, "
            "true, false>(cublasLt::cublasSplitKParams<float>, float const*, float const*, "
            "float*, float const*, float const*, float const*, float const*, float*, void*, long, "
            "float*, int*)")
K_SUM = ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::"
         "func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()"
         "(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::"
         "ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
         "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, "
         "4>)")
K_DROPOUT = ("void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, "
             "unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<float const, unsigned int>, "
             "at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<bool,"
             " unsigned int>, unsigned int, float, at::PhiloxCudaState)")
K_DROPOUT_BWD = ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
                 "namespace)::masked_scale_kernel<bool, float, float>(at::Tensor&, at::Tensor "
                 "const&, at::Tensor const&, float)::{lambda(float, bool)#1}, at::detail::Array"
                 "<char*, 3> >(int, at::native::(anonymous namespace)::masked_scale_kernel<bool, "
                 "float, float>(at::Tensor&, at::Tensor const&, at::Tensor const&, float)::"
                 "{lambda(float, bool)#1}, at::detail::Array<char*, 3>)")
K_SOFTMAX = ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float,"
             " at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*,"
             " int)")
K_SOFTMAX_BWD = ("void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, "
                 "float, at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, "
                 "float const*, float const*, long)")
K_NLL = ("void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, "
         "float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, "
         "long, long)")
K_NLL_BWD = ("void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<"
             "float, long>(float*, float const*, long const*, float const*, float const*, bool, "
             "int, int, long, long)")
K_ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def _foreach_kernel(functor: str, depth: int) -> str:
    meta = f"at::native::(anonymous namespace)::TensorListMetadata<{depth}>"
    f = f"at::native::(anonymous namespace)::{functor}"
    return (f"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<{meta}, {f}, "
            f"float>({meta}, {f}, float)")


K_FOREACH = {
    "aten::_foreach_lerp_": _foreach_kernel("TernaryOpScalarFunctor<float, 2, 2, 0>", 2),
    "aten::_foreach_mul_": _foreach_kernel("BinaryOpScalarFunctor<float, 1, 1, 0>", 1),
    "aten::_foreach_addcmul_": _foreach_kernel("PointwiseOpScalarFunctor<float, 3, 3, 0>", 3),
    "aten::_foreach_sqrt": _foreach_kernel("UnaryOpFunctor<float, 2, 1, 1>", 2),
    "aten::_foreach_div_": _foreach_kernel("BinaryOpScalarFunctor<float, 1, 1, 0>", 1),
    "aten::_foreach_add_": _foreach_kernel("BinaryOpScalarFunctor<float, 1, 1, 0>", 1),
    "aten::_foreach_addcdiv_": _foreach_kernel("PointwiseOpScalarListFunctor<float, 3, 3, 0>", 3),
}


def j(obj) -> str:
    return json.dumps(obj, separators=(",", ":"))


def legacy_safe(text: str) -> str:
    """The same JSON without the substring "mod" (written "m\\u006fd", an escape every JSON
    reader decodes to the same key): NVIDIA PyProf's parse bins any range text containing "mod",
    "op", "args" and "type" as one of its own markers and eval()s it, which fails on JSON
    (`false`, `null`) or a missing 'mod' key. Only "ceil_mode" arguments hit this here."""
    return text.replace("mod", "m\\u006fd")


# -- the model's shapes and argument JSON (computed once) ------------------------------------
CONVS = [  # name, in, out, spatial in, spatial out (after pool)
    ("conv1", 3, 32, 32), ("conv2", 32, 64, 16)]
PARAMS = []  # (name, shape)
for name, cin, cout, hw in CONVS:
    PARAMS += [(f"{name}.weight", [cout, cin, 3, 3]), (f"{name}.bias", [cout])]
    bn = "bn" + name[-1]
    PARAMS += [(f"{bn}.weight", [cout]), (f"{bn}.bias", [cout])]
PARAMS += [("fc1.weight", [256, 4096]), ("fc1.bias", [256]), ("fc2.weight", [10, 256]),
           ("fc2.bias", [10])]


class Spec:
    """Argument JSON of every op call site, built once."""

    def __init__(self):
        x = tensor([BATCH, 3, 32, 32])
        self.to = j({"self": tensor([BATCH, 3, 32, 32], device="cpu"), "device": "cuda:0",
                     "dtype": None, "non_blocking": True, "copy": False, "memory_format": None})
        self.to_copy = j({"self": tensor([BATCH, 3, 32, 32], device="cpu"), "dtype": None,
                          "layout": None, "device": "cuda:0", "pin_memory": None,
                          "non_blocking": True, "memory_format": None})
        self.copy = j({"self": x, "src": tensor([BATCH, 3, 32, 32], device="cpu"),
                       "non_blocking": True})
        self.to_t = j({"self": tensor([BATCH], "int64", "cpu"), "device": "cuda:0",
                       "dtype": None, "non_blocking": True, "copy": False, "memory_format": None})
        self.div = j({"self": x, "other": 255.0})
        self.conv, self.bn, self.relu, self.pool = {}, {}, {}, {}
        self.conv_bwd, self.bn_bwd, self.relu_bwd, self.pool_bwd = {}, {}, {}, {}
        for name, cin, cout, hw in CONVS:
            inp, w, b = tensor([BATCH, cin, hw, hw]), tensor([cout, cin, 3, 3]), tensor([cout])
            out = tensor([BATCH, cout, hw, hw])
            common = {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1]}
            self.conv[name] = {
                "aten::conv2d": j({"input": inp, "weight": w, "bias": b, **common, "groups": 1}),
                "aten::convolution": j({"input": inp, "weight": w, "bias": b, **common,
                                        "transposed": False, "output_padding": [0, 0],
                                        "groups": 1}),
                "aten::_convolution": j({"input": inp, "weight": w, "bias": b, **common,
                                         "transposed": False, "output_padding": [0, 0],
                                         "groups": 1, "benchmark": False, "deterministic": False,
                                         "cudnn_enabled": True, "allow_tf32": True}),
                "aten::cudnn_convolution": j({"self": inp, "weight": w, **common, "groups": 1,
                                              "benchmark": False, "deterministic": False,
                                              "allow_tf32": True}),
            }
            self.conv_bwd[name] = j({"grad_output": out, "input": inp, "weight": w,
                                     "bias_sizes": [cout], **common, "transposed": False,
                                     "output_padding": [0, 0], "groups": 1,
                                     "output_mask": [cin != 3, True, True]})
            stat = tensor([cout])
            self.bn[name] = {
                "aten::batch_norm": j({"input": out, "weight": stat, "bias": stat,
                                       "running_mean": stat, "running_var": stat,
                                       "training": True, "momentum": 0.1, "eps": 1e-05,
                                       "cudnn_enabled": True}),
                "aten::_batch_norm_impl_index": j({"input": out, "weight": stat, "bias": stat,
                                                   "running_mean": stat, "running_var": stat,
                                                   "training": True, "momentum": 0.1,
                                                   "eps": 1e-05, "cudnn_enabled": True}),
                "aten::cudnn_batch_norm": j({"input": out, "weight": stat, "bias": stat,
                                             "running_mean": stat, "running_var": stat,
                                             "training": True, "exponential_average_factor": 0.1,
                                             "epsilon": 1e-05}),
            }
            self.bn_bwd[name] = j({"input": out, "grad_output": out, "weight": stat,
                                   "running_mean": stat, "running_var": stat, "save_mean": stat,
                                   "save_var": stat, "epsilon": 1e-05,
                                   "reserveSpace": tensor([0], "uint8")})
            self.relu[name] = j({"self": out})
            self.relu_bwd[name] = j({"grad_output": out, "self": out, "threshold": 0})
            pool = {"self": out, "kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0],
                    "dilation": [1, 1], "ceil_mode": False}
            self.pool[name] = j(pool)
            self.pool_bwd[name] = j({"grad_output": tensor([BATCH, cout, hw // 2, hw // 2]),
                                     **pool, "indices": tensor([BATCH, cout, hw // 2, hw // 2],
                                                               "int64")})
        flat_in = tensor([BATCH, 64, 8, 8])
        self.flatten = j({"self": flat_in, "start_dim": 1, "end_dim": -1})
        self.view = j({"self": flat_in, "size": [BATCH, 4096]})
        self.linear, self.t, self.addmm, self.mm, self.lin_sum = {}, {}, {}, {}, {}
        for name, fin, fout in (("fc1", 4096, 256), ("fc2", 256, 10)):
            x_, w, b = tensor([BATCH, fin]), tensor([fout, fin]), tensor([fout])
            wt = tensor([fin, fout], stride=[1, fin])
            self.linear[name] = j({"input": x_, "weight": w, "bias": b})
            self.t[name] = j({"self": w})
            self.addmm[name] = j({"self": b, "mat1": x_, "mat2": wt, "beta": 1, "alpha": 1})
            g = tensor([BATCH, fout])
            self.mm[name] = (j({"self": g, "mat2": w}),
                             j({"self": tensor([fout, BATCH], stride=[1, fout]), "mat2": x_}))
            self.lin_sum[name] = j({"self": g, "dim": [0], "keepdim": True, "dtype": None})
        h = tensor([BATCH, 256])
        self.relu["fc1"] = j({"self": h})
        self.relu_bwd["fc1"] = j({"grad_output": h, "self": h, "threshold": 0})
        self.dropout = j({"input": h, "p": 0.5, "train": True})
        self.native_dropout = j({"input": h, "p": 0.5, "train": True})
        self.dropout_bwd = j({"grad_output": h, "mask": tensor([BATCH, 256], "bool"),
                              "scale": 2.0})
        logits, target = tensor([BATCH, 10]), tensor([BATCH], "int64")
        self.cross_entropy = j({"self": logits, "target": target, "weight": None,
                                "reduction": 1, "ignore_index": -100, "label_smoothing": 0.0})
        self.log_softmax = j({"self": logits, "dim": 1, "dtype": None})
        self._log_softmax = j({"self": logits, "dim": 1, "half_to_float": False})
        self.nll = j({"self": logits, "target": target, "weight": None, "reduction": 1,
                      "ignore_index": -100})
        self.nll_bwd = j({"grad_output": tensor([]), "self": logits, "target": target,
                          "weight": None, "reduction": 1, "ignore_index": -100,
                          "total_weight": tensor([])})
        self.zero = j({"self": logits})
        self.softmax_bwd = j({"grad_output": logits, "output": logits, "dim": 1,
                              "input_dtype": "float32"})
        self.ones_like = j({"self": tensor([]), "dtype": None, "layout": None, "device": None,
                            "pin_memory": None, "memory_format": "preserve_format"})
        self.fill = j({"self": tensor([]), "value": 1})
        self.item = j({"self": tensor([])})
        self.local_scalar = j({"self": tensor([])})
        self.grad = {n: j({"0": tensor(s)}) for n, s in PARAMS}
        params = [tensor(s) for _, s in PARAMS]
        self.foreach = {
            "aten::_foreach_lerp_": j({"self": params, "tensors1": params, "weight": 0.1}),
            "aten::_foreach_mul_": j({"self": params, "scalar": 0.999}),
            "aten::_foreach_addcmul_": j({"self": params, "tensor1": params, "tensor2": params,
                                          "value": 0.001}),
            "aten::_foreach_sqrt": j({"self": params}),
            "aten::_foreach_div_": j({"self": params, "scalar": 0.0316}),
            "aten::_foreach_add_": j({"self": params, "scalar": 1e-08}),
            "aten::_foreach_addcdiv_": j({"self": params, "tensor1": params, "tensor2": params,
                                          "scalars": [-0.001] * len(params)}),
        }
        self.allreduce = j({"0": params[:4]})
        # backward nodes: the incoming gradients
        node = {("view", None): [BATCH, 4096], ("dropout", None): [BATCH, 256],
                ("log_softmax", None): [BATCH, 10], ("nll", None): []}
        for name, cin, cout, hw in CONVS:
            for kind in ("conv", "bn", "relu"):
                node[(kind, name)] = [BATCH, cout, hw, hw]
            node[("pool", name)] = [BATCH, cout, hw // 2, hw // 2]
        for name, fin, fout in (("fc1", 4096, 256), ("fc2", 256, 10)):
            node[("t", name)] = [fin, fout]
            node[("addmm", name)] = [BATCH, fout]
        node[("relu", "fc1")] = [BATCH, 256]
        self.node = {k: j({"0": tensor(v)}) for k, v in node.items()}


SPEC = Spec()


class Trainer:
    """One process running the training loop (main thread + autograd thread)."""

    def __init__(self, db: SynthDb, pid: int, rank: int, ranks: int, legacy: bool,
                 interned: bool = False):
        self.db, self.rank, self.ranks, self.legacy = db, rank, ranks, legacy
        self.interned = interned
        self.t = db.thread(pid, pid, name="python3", process_name="python3")
        self.bw = db.thread(pid, pid + 11, name="pt_autograd_0")
        self.device = rank
        self.seq = 0
        self.nodes: list = []  # (backward fn, seq) pushed by the forward, run in reverse

    # helpers -------------------------------------------------------------------------------
    def launch(self, t: Thread, kernel: str, duration: int, grid=(128, 1, 1), block=(256, 1, 1),
               stream: int = MAIN_STREAM, **kw) -> None:
        t.launch(kernel, duration=duration, grid=grid, block=block, device=self.device,
                 stream=stream, **kw)

    def module(self, path: str, type_: str):
        return self.t.pyprof_module(path, type_, registered=not self.legacy)

    def op(self, t: Thread, name: str, args: str, seq: int = -1, **kw):
        t.advance(1200)  # dispatcher + Python overhead before the op's RecordFunction
        if self.legacy:
            args = legacy_safe(args)
        return t.pyprof_op(name, seq=seq, args_json=args, interned=self.interned, **kw)

    def chain(self, names_args, seq, kernels, t: Thread | None = None, node=None, cpu=3000):
        """Nested op markers (outermost first) sharing `seq`; `kernels` launched innermost."""
        t = t or self.t
        opened = []
        for name, args in names_args:
            cm = self.op(t, name, args, seq)
            cm.__enter__()
            opened.append(cm)
        t.advance(cpu)
        for k in kernels:
            self.launch(t, *k)
        for cm in reversed(opened):
            cm.__exit__(None, None, None)
        if node is not None:
            self.nodes.append((node, seq))

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    # one iteration --------------------------------------------------------------------------
    def iteration(self, it: int) -> None:
        t, s = self.t, SPEC
        with t.range(f"iteration {it}", color=0xFF76B900):
            # data: copy stream
            with self.op(t, "prefetch", "{}", scope="user"):
                with self.op(t, "aten::to", s.to):
                    with self.op(t, "aten::_to_copy", s.to_copy):
                        with self.op(t, "aten::copy_", s.copy):
                            t.memcpy(BATCH * 3 * 32 * 32 * 4, "HtoD", src_kind="pinned",
                                     device=self.device, stream=COPY_STREAM)
                with self.op(t, "aten::to", s.to_t):
                    with self.op(t, "aten::_to_copy", s.to_t):
                        with self.op(t, "aten::copy_", s.to_t):
                            t.memcpy(BATCH * 8, "HtoD", src_kind="pinned", device=self.device,
                                     stream=COPY_STREAM)
                with self.op(t, "aten::div_", s.div):
                    self.launch(t, K_DIV, 3000, grid=(192, 1, 1), stream=COPY_STREAM)
            with self.op(t, "Optimizer.zero_grad#Adam.zero_grad", "{}", scope="user"):
                t.advance(8000)
            self.forward(it)
            self.backward(it)
            if self.ranks > 1:
                with self.op(t, "nccl:all_reduce", s.allreduce, scope="user"):
                    self.launch(t, K_ALLREDUCE, 40_000, grid=(2, 1, 1), block=(512, 1, 1),
                                stream=NCCL_STREAM)
            self.step(it)
            if it % 10 == 9:
                with self.op(t, "aten::item", s.item):
                    with self.op(t, "aten::_local_scalar_dense", s.local_scalar):
                        t.memcpy(4, "DtoH", src_kind="device", dst_kind="pageable",
                                 device=self.device)
                        t.synchronize(self.device, MAIN_STREAM)

    def forward(self, it: int) -> None:
        t, s = self.t, SPEC
        self.nodes.clear()
        with self.module("Net", "Net"):
            for name, cin, cout, hw in CONVS:
                n = name[-1]
                with self.module(f"Net.{name}", "Conv2d"):
                    kernels = [(K_CONV_FPROP, 30_000 if n == "1" else 45_000, (64, 4, 1),
                                (128, 1, 1))]
                    if it % 2 == 0:  # cuDNN picks a layout conversion now and then
                        kernels.insert(0, (K_NCHW2NHWC, 4_000, (256, 1, 1)))
                    self.chain(list(s.conv[name].items()), self.next_seq(), kernels,
                               node=("conv", name))
                with self.module(f"Net.bn{n}", "BatchNorm2d"):
                    self.chain(list(s.bn[name].items()), self.next_seq(),
                               [(K_BN_FWD, 12_000, (cout, 1, 1), (512, 1, 1))], node=("bn", name))
                with self.module(f"Net.relu{n}", "ReLU"):
                    self.chain([("aten::relu_", s.relu[name])], self.next_seq(),
                               [(K_RELU, 6_000, (BATCH * cout * hw * hw // 1024, 1, 1))],
                               node=("relu", name))
                with self.module(f"Net.pool{n}", "MaxPool2d"):
                    self.chain([("aten::max_pool2d", s.pool[name]),
                                ("aten::max_pool2d_with_indices", s.pool[name])],
                               self.next_seq(), [(K_POOL, 8_000, (256, 1, 1))],
                               node=("pool", name))
            with self.module("Net.flatten", "Flatten"):
                self.chain([("aten::flatten", s.flatten), ("aten::view", s.view)],
                           self.next_seq(), [], node=("view", None), cpu=1500)
            self.linear("fc1", it)
            with self.module("Net.relu3", "ReLU"):
                self.chain([("aten::relu", s.relu["fc1"])], self.next_seq(),
                           [(K_RELU, 3_000, (64, 1, 1))], node=("relu", "fc1"))
            with self.module("Net.dropout", "Dropout"):
                self.chain([("aten::dropout", s.dropout),
                            ("aten::native_dropout", s.native_dropout)], self.next_seq(),
                           [(K_DROPOUT, 3_500, (64, 1, 1))], node=("dropout", None))
            self.linear("fc2", it)
        with self.module("CrossEntropyLoss", "CrossEntropyLoss"):
            with self.op(t, "aten::cross_entropy_loss", s.cross_entropy, seq=self.seq + 1):
                self.chain([("aten::log_softmax", s.log_softmax),
                            ("aten::_log_softmax", s._log_softmax)], self.next_seq(),
                           [(K_SOFTMAX, 4_000, (BATCH, 1, 1))], node=("log_softmax", None))
                self.chain([("aten::nll_loss_nd", s.nll), ("aten::nll_loss", s.nll),
                            ("aten::nll_loss_forward", s.nll)], self.next_seq(),
                           [(K_NLL, 3_000, (1, 1, 1), (32, 1, 1))], node=("nll", None))

    def linear(self, name: str, it: int) -> None:
        t, s = self.t, SPEC
        with self.module(f"Net.{name}", "Linear"):
            seq = self.next_seq()
            with self.op(t, "aten::linear", s.linear[name], seq):
                with self.op(t, "aten::t", s.t[name], seq):
                    with self.op(t, "aten::transpose", s.t[name], seq):
                        t.advance(800)
                kernels = [(K_GEMM, 20_000 if name == "fc1" else 6_000, (16, 4, 1), (128, 1, 1))]
                if name == "fc1" and it % 2 == 0:
                    kernels.append((K_SPLITK, 3_000, (64, 1, 1)))
                self.chain([("aten::addmm", s.addmm[name])], seq, kernels)
        self.nodes.append((("t", name), seq))
        self.nodes.append((("addmm", name), seq))

    def backward(self, it: int) -> None:
        t, bw, s = self.t, self.bw, SPEC
        # loss.backward() on the main thread: the root gradient
        with self.op(t, "aten::ones_like", s.ones_like):
            t.advance(600)
            with self.op(t, "aten::fill_", s.fill):
                self.launch(t, K_FILL, 1_500, grid=(1, 1, 1), block=(64, 1, 1))
        bw.wait_until(t.now + 3000)  # the autograd device thread picks the graph up
        for (kind, name), seq in reversed(self.nodes):
            node = {"conv": "ConvolutionBackward0", "bn": "CudnnBatchNormBackward0",
                    "relu": "ReluBackward0", "pool": "MaxPool2DWithIndicesBackward0",
                    "view": "ViewBackward0", "t": "TBackward0", "addmm": "AddmmBackward0",
                    "dropout": "NativeDropoutBackward0", "log_softmax": "LogSoftmaxBackward0",
                    "nll": "NllLossBackward0"}[kind]
            with self.op(bw, f"autograd::engine::evaluate_function: {node}", "{}"):
                with self.op(bw, node, s.node[(kind, name)], seq, scope="backward",
                             fwd_tid=self.t.rf_tid):
                    self.backward_ops(kind, name)
            if kind in ("conv", "bn", "addmm"):
                prefix = {"conv": name, "bn": "bn" + (name or "")[-1:], "addmm": name}[kind]
                for p in (f"{prefix}.weight", f"{prefix}.bias"):
                    self.accumulate(p)

    def backward_ops(self, kind: str, name: str | None) -> None:
        bw, s = self.bw, SPEC
        if kind == "conv":
            kernels = [(K_CONV_WGRAD, 50_000, (32, 8, 1)), (K_SUM, 6_000, (64, 1, 1))]
            if name != "conv1":
                kernels.insert(0, (K_CONV_DGRAD, 45_000, (64, 4, 1)))
            self.chain([("aten::convolution_backward", s.conv_bwd[name])], -1, kernels, t=bw)
        elif kind == "bn":
            self.chain([("aten::cudnn_batch_norm_backward", s.bn_bwd[name])], -1,
                       [(K_BN_BWD, 18_000, (64, 1, 1), (512, 1, 1))], t=bw)
        elif kind == "relu":
            self.chain([("aten::threshold_backward", s.relu_bwd[name])], -1,
                       [(K_RELU_BWD, 6_000, (256, 1, 1))], t=bw)
        elif kind == "pool":
            with self.op(bw, "aten::max_pool2d_with_indices_backward", s.pool_bwd[name]):
                self.chain([("aten::zero_", s.zero), ("aten::fill_", s.fill)], -1,
                           [(K_FILL, 4_000, (512, 1, 1))], t=bw, cpu=800)
                self.launch(bw, K_POOL_BWD, 9_000, grid=(256, 1, 1))
        elif kind == "view":
            self.chain([("aten::reshape", s.view), ("aten::view", s.view)], -1, [], t=bw, cpu=900)
        elif kind == "t":
            self.chain([("aten::t", s.t[name]), ("aten::transpose", s.t[name])], -1, [], t=bw,
                       cpu=700)
        elif kind == "addmm":
            mm1, mm2 = s.mm[name]
            self.chain([("aten::t", s.t[name])], -1, [], t=bw, cpu=500)
            self.chain([("aten::mm", mm1)], -1, [(K_GEMM_NN, 9_000, (8, 4, 1), (128, 1, 1))],
                       t=bw)
            self.chain([("aten::t", s.t[name])], -1, [], t=bw, cpu=500)
            self.chain([("aten::mm", mm2)], -1, [(K_GEMM, 11_000, (16, 2, 1), (128, 1, 1))],
                       t=bw)
            self.chain([("aten::sum", s.lin_sum[name])], -1, [(K_SUM, 3_000, (4, 1, 1))], t=bw)
            self.chain([("aten::view", s.lin_sum[name])], -1, [], t=bw, cpu=400)
        elif kind == "dropout":
            self.chain([("aten::native_dropout_backward", s.dropout_bwd)], -1,
                       [(K_DROPOUT_BWD, 3_000, (64, 1, 1))], t=bw)
        elif kind == "log_softmax":
            self.chain([("aten::_log_softmax_backward_data", s.softmax_bwd)], -1,
                       [(K_SOFTMAX_BWD, 3_500, (BATCH, 1, 1))], t=bw)
        elif kind == "nll":
            with self.op(bw, "aten::nll_loss_backward", s.nll_bwd):
                with self.op(bw, "aten::zero_", s.zero):
                    bw.memset(BATCH * 10 * 4, 0, device=self.device, stream=MAIN_STREAM)
                self.launch(bw, K_NLL_BWD, 2_500, grid=(1, 1, 1), block=(32, 1, 1))

    def accumulate(self, param: str) -> None:
        bw, s = self.bw, SPEC
        with self.op(bw, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
                     "{}"):
            with self.op(bw, "torch::autograd::AccumulateGrad", s.grad[param], scope="backward",
                         fwd_tid=self.t.rf_tid):
                bw.advance(500)  # set_to_none: the gradient is stolen, no op runs

    def step(self, it: int) -> None:
        t, s = self.t, SPEC
        t.wait_until(self.bw.now)  # backward() returned
        with self.op(t, "Optimizer.step#Adam.step", "{}", scope="user"):
            t.advance(15_000)
            for op, args in s.foreach.items():
                with self.op(t, op, args):
                    chunks = 1 if op in ("aten::_foreach_sqrt", "aten::_foreach_div_") else 2
                    for c in range(chunks):
                        self.launch(t, K_FOREACH[op], 7_000, grid=(320, 1, 1), block=(512, 1, 1))
                t.advance(2000)


PERIOD = 20  # iterations simulated once and replayed: a multiple of every `it % n` above

GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
              "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
TIMED_TABLES = GPU_TABLES + ("CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS")
OP_TEXT = re.compile(r'^(\{"v":1,"op":.*?,"id":)(\d+)(,"seq":)(-?\d+)(,.*)$', re.S)


class Period:
    """PERIOD iterations simulated with the SynthDb builder (the rows, and per iteration where
    each table's rows start), plus what advances from one period to the next: the time span and,
    per process, the correlation ids, op ids, grid ids and sequence numbers used."""

    def __init__(self, processes: int, legacy: bool, layout: str, interned: bool = False):
        db = self.db = SynthDb(layout)
        for rank in range(processes):
            db.gpu(rank)
        trainers = [Trainer(db, 41_000 + 1000 * r, r, processes, legacy, interned)
                    for r in range(processes)]
        for tr in trainers:  # created once, before the loop: not part of what repeats
            tr.t.domain("pyprof")
        self.bounds = [self._lengths()]
        before = self._counters(trainers)
        for it in range(PERIOD):
            for tr in trainers:
                tr.iteration(it)
            self.bounds.append(self._lengths())
        after = self._counters(trainers)
        self.delta = {pid: tuple(a - b for a, b in zip(after[pid], before[pid]))
                      for pid in after}  # pid -> (corr, op id, grid id, seq)
        last = max([t.now for t in db.threads] +
                   [r[1] for table in GPU_TABLES for r in db.rows(table)])
        self.span = last - db.start + 10_000
        db.finish()  # thread names, processes, GPUs, metadata, StringIds

    def _lengths(self) -> dict[str, int]:
        return {table: len(self.db.rows(table)) for table in TIMED_TABLES}

    @staticmethod
    def _counters(trainers) -> dict[int, tuple]:
        return {tr.t.pid: (tr.t.process.next_corr, tr.t.process.next_op_id,
                           tr.t.process.next_grid_id, tr.seq) for tr in trainers}

    def rows(self, table: str, it: int | None = None) -> list[tuple]:
        """Rows of iteration `it` of the period; None: rows before (setup) and after (tail)."""
        rows = self.db.rows(table)
        if table not in TIMED_TABLES:
            return rows if it is None else []
        if it is None:
            return rows[:self.bounds[0][table]] + rows[self.bounds[-1][table]:]
        return rows[self.bounds[it][table]:self.bounds[it + 1][table]]


class Replayer:
    """Rows of iteration `it` of repetition `rep` of a Period: times shifted by rep * span,
    per-process ids by rep * their per-period delta, op marker texts re-rendered (interned op
    markers: their uint64Value op id and category seq + 1 shifted instead)."""

    def __init__(self, period: Period):
        self.period = period
        self.tables = {}
        for table in TIMED_TABLES:
            cols = columns(table)
            self.tables[table] = {c: cols.index(c) for c in (
                "start", "end", "correlationId", "globalPid", "globalTid", "gridId", "text",
                "uint64Value", "category")
                if c in cols}
        # per template NVTX row: how to render its text in another repetition
        self.renderers = []
        text_i = self.tables["NVTX_EVENTS"]["text"]
        tid_i = self.tables["NVTX_EVENTS"]["globalTid"]
        u64_i = self.tables["NVTX_EVENTS"].get("uint64Value")
        for it in range(PERIOD):
            out = []
            for row in period.rows("NVTX_EVENTS", it):
                text = row[text_i]
                m = OP_TEXT.match(text) if text else None
                if m:
                    _, d_op, _, d_seq = period.delta[(row[tid_i] >> 24) & 0xFFFFFF]
                    out.append((m.group(1), int(m.group(2)), d_op, m.group(3), int(m.group(4)),
                                d_seq, m.group(5)))
                elif text == f"iteration {it}":
                    out.append("iteration")
                elif u64_i is not None and row[u64_i] is not None:
                    _, d_op, _, d_seq = period.delta[(row[tid_i] >> 24) & 0xFFFFFF]
                    out.append(("interned", d_op, d_seq))
                else:
                    out.append(None)
            self.renderers.append(out)

    def rows(self, table: str, rep: int, it: int) -> list[tuple]:
        template = self.period.rows(table, it)
        if rep == 0:
            return template
        dt = rep * self.period.span
        idx = self.tables[table]
        delta = self.period.delta
        s_i, e_i = idx["start"], idx["end"]
        assert (s_i, e_i) == (0, 1)
        if table == "NVTX_EVENTS":
            t_i = idx["text"]
            out = []
            for row, r in zip(template, self.renderers[it]):
                end = row[1]
                if r is None:
                    text = row[t_i]
                elif r == "iteration":
                    text = f"iteration {rep * PERIOD + it}"
                elif r[0] == "interned":
                    u_i, c_i = idx["uint64Value"], idx["category"]
                    new = list(row)
                    new[0] += dt
                    new[1] = None if end is None else end + dt
                    new[u_i] += rep * r[1]
                    if new[c_i] is not None:  # seq + 1; NULL for an op without seq
                        new[c_i] += rep * r[2]
                    out.append(tuple(new))
                    continue
                else:
                    seq = r[4] + rep * r[5] if r[4] >= 0 else r[4]
                    text = f"{r[0]}{r[1] + rep * r[2]}{r[3]}{seq}{r[6]}"
                out.append((row[0] + dt, None if end is None else end + dt) + row[2:t_i]
                           + (text,) + row[t_i + 1:])
            return out
        c_i = idx["correlationId"]
        p_i = idx.get("globalPid", idx.get("globalTid"))
        g_i = idx.get("gridId")
        out = []
        for row in template:
            d = delta[(row[p_i] >> 24) & 0xFFFFFF]
            new = (row[0] + dt, row[1] + dt) + row[2:c_i] + (row[c_i] + rep * d[0],) + \
                row[c_i + 1:]
            if g_i is not None:
                new = new[:g_i] + (new[g_i] + rep * d[2],) + new[g_i + 1:]
            out.append(new)
        return out


def generate(path: str, kernels: int, *, processes: int = 1, legacy: bool = False,
             layout: str = "2024.6", chunk_rows: int = 50_000, interned: bool = False) -> dict:
    """Writes the database (at least `kernels` kernels, whole iterations) and returns what it
    counted."""
    t0 = time.perf_counter()
    if interned and legacy:
        raise ValueError("--interned and --legacy-compatible exclude each other")
    period = Period(processes, legacy, layout, interned)
    replay = Replayer(period)
    if os.path.exists(path):
        os.remove(path)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("PRAGMA synchronous=OFF")
    con.execute("BEGIN")
    writer = RowWriter(con, layout)
    pending = {table: [] for table in TIMED_TABLES}

    def flush(table):
        writer.write(table, pending[table], create=False)
        pending[table] = []

    for table in TIMED_TABLES:
        pending[table].extend(period.rows(table)[:period.bounds[0][table]])
    kernel_table = "CUPTI_ACTIVITY_KIND_KERNEL"
    done, it_total = 0, 0
    while done < kernels:
        rep, it = divmod(it_total, PERIOD)
        for table in TIMED_TABLES:
            rows = replay.rows(table, rep, it)
            pending[table].extend(rows)
            if table == kernel_table:
                done += len(rows)
            if len(pending[table]) >= chunk_rows:
                flush(table)
        it_total += 1
    for table in TIMED_TABLES:
        pending[table].extend(period.rows(table)[period.bounds[-1][table]:])
        flush(table)
    for table in period.db.tables():
        if table not in TIMED_TABLES:
            writer.write(table, period.rows(table))
    con.execute("COMMIT")
    con.close()
    gen_s = time.perf_counter() - t0
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    count = {}
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME",
                  "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                  "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS", "StringIds"):
        try:
            count[table] = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        except sqlite3.OperationalError:
            count[table] = 0
    ranges = con.execute("SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60)"
                         ).fetchone()[0]
    con.close()
    return {"path": path, "iterations": it_total, "processes": processes, "layout": layout,
            "legacy_compatible": legacy, "interned": interned, "kernels": count["CUPTI_ACTIVITY_KIND_KERNEL"],
            "runtime": count["CUPTI_ACTIVITY_KIND_RUNTIME"],
            "memcpy": count["CUPTI_ACTIVITY_KIND_MEMCPY"],
            "memset": count["CUPTI_ACTIVITY_KIND_MEMSET"],
            "sync": count["CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"],
            "nvtx_rows": count["NVTX_EVENTS"], "nvtx_ranges": ranges,
            "strings": count["StringIds"],
            "ranges_per_kernel": round(ranges / max(count["CUPTI_ACTIVITY_KIND_KERNEL"], 1), 2),
            "bytes": os.path.getsize(path), "seconds": round(gen_s, 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", type=int, default=10_000,
                    help="at least this many kernels (whole iterations; default 10000)")
    ap.add_argument("-o", "--output", required=True, help="database to write (replaced)")
    ap.add_argument("--processes", type=int, default=1,
                    help="processes (ranks) in the file; correlation ids collide (default 1)")
    ap.add_argument("--legacy-compatible", action="store_true",
                    help="module markers as plain text, not registered strings (for NVIDIA "
                         "PyProf's parser, which reads only NVTX_EVENTS.text)")
    ap.add_argument("--interned", action="store_true",
                    help="op markers in the interned form pyprof records by default (registered "
                         "strings, op id and seq in the row; docs/formats.md §1.1)")
    ap.add_argument("--layout", default="2024.6", choices=LAYOUTS)
    ap.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    a = ap.parse_args(argv)
    if a.interned and a.legacy_compatible:
        ap.error("--interned and --legacy-compatible exclude each other")
    info = generate(a.output, a.kernels, processes=a.processes, legacy=a.legacy_compatible,
                    layout=a.layout, interned=a.interned)
    if a.json:
        print(json.dumps(info))
    else:
        print(f"wrote {info['path']} ({info['bytes'] / 2**20:.1f} MiB, nsys {info['layout']} "
              f"layout) in {info['seconds']:.1f} s")
        print(f"  iterations {info['iterations']} x {info['processes']} process(es)")
        print(f"  kernels {info['kernels']}, runtime rows {info['runtime']}, memcpy "
              f"{info['memcpy']}, memset {info['memset']}")
        print(f"  NVTX rows {info['nvtx_rows']} ({info['nvtx_ranges']} ranges, "
              f"{info['ranges_per_kernel']} per kernel), StringIds {info['strings']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

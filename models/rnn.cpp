// The rnn family: LSTM/GRU/RNN cells (lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell), the
// fused CUDA cell kernels (_thnn_fused_lstm_cell, _thnn_fused_gru_cell) and their backward ops,
// the whole-sequence ops (aten::lstm/gru/rnn_tanh/rnn_relu, _cudnn_rnn, miopen_rnn,
// mkldnn_rnn_layer) and their backward ops. FlopCounterMode has no RNN formulas; these are ours
// (docs/ops.md "rnn"):
//
//   gate GEMMs, per step and batch row: 2 * G*H * (I + Hout) (+ 2 * P*H with an LSTM projection),
//     G = 4 (LSTM), 3 (GRU), 1 (RNN); I the layer's input size, Hout = P (proj_size) or H;
//   elementwise, per step, batch row and hidden unit (activations count 1 FLOP each):
//     LSTM 13 (+8 with biases), GRU 10 (+6), RNN 2 (+2);
//   backward: the gate GEMMs twice (grad of inputs/hidden, grad of weights) and elementwise
//     LSTM 23 (+4 bias-gradient sums), GRU 15 (+6), RNN 3 (+1).
#include <string>
#include <vector>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using shape_util::dtype_suffix;
using shape_util::elem_size;
using shape_util::unmodeled;

const char* kind_name(int gates) { return gates == 4 ? "LSTM" : gates == 3 ? "GRU" : "RNN"; }

// Elementwise FLOPs per step, batch row and hidden unit.
double elementwise_fwd(int gates, bool bias) {
  if (gates == 4) return 13 + (bias ? 8 : 0);
  if (gates == 3) return 10 + (bias ? 6 : 0);
  return 2 + (bias ? 2 : 0);
}

double elementwise_bwd(int gates, bool bias) {
  if (gates == 4) return 23 + (bias ? 4 : 0);
  if (gates == 3) return 15 + (bias ? 6 : 0);
  return 3 + (bias ? 1 : 0);
}

// cudnnRNNMode_t / miopen / aten mode numbers: 0 RNN_RELU, 1 RNN_TANH, 2 LSTM, 3 GRU.
int gates_of_mode(int64_t mode) { return mode == 2 ? 4 : mode == 3 ? 3 : 1; }

// Rows of a sequence input: steps * batch ([T, B, I], [B, T, I], [T, I] or packed [sum T, I]).
double rows_of(const Tensor& x) {
  int64_t i = x.dim(-1);
  return i > 0 ? static_cast<double>(x.numel()) / static_cast<double>(i) : 0;
}

// Multiply-adds of all gate weight matrices of a stacked RNN, per step and batch row.
double weight_macs(int gates, int64_t in, int64_t h, int64_t proj, int64_t layers, int64_t dirs) {
  int64_t hout = proj > 0 ? proj : h;
  double macs = 0;
  for (int64_t l = 0; l < layers; ++l) {
    int64_t layer_in = l == 0 ? in : count_mul(dirs, hout);
    double per_dir = static_cast<double>(gates) * static_cast<double>(h) *
                     static_cast<double>(count_add(layer_in, hout));
    if (proj > 0) per_dir += static_cast<double>(proj) * static_cast<double>(h);
    macs += per_dir * static_cast<double>(dirs);
  }
  return macs;
}

// One stacked RNN call, forward or backward.
struct Rnn {
  int gates = 4;
  double rows = 0;  // steps * batch
  int64_t in = 0, h = 0, hout = 0, layers = 1, dirs = 1;
  bool bias = true;
  double macs = 0;  // weight multiply-adds per row (all layers and directions)
  std::string dtype;

  double gemm_flops() const { return 2 * rows * macs; }
  double units() const {
    return rows * static_cast<double>(layers) * static_cast<double>(dirs) * static_cast<double>(h);
  }
  double forward_flops() const { return gemm_flops() + units() * elementwise_fwd(gates, bias); }
  std::string params() const {
    std::string p = std::string(kind_name(gates)) +
                    ",rows=" + std::to_string(static_cast<int64_t>(rows)) +
                    ",I=" + std::to_string(in) + ",H=" + std::to_string(h);
    if (hout != h) p += ",P=" + std::to_string(hout);
    if (layers != 1) p += ",L=" + std::to_string(layers);
    if (dirs == 2) p += ",bidirectional";
    p += dtype_suffix(dtype);
    return p;
  }
};

void finish(OpCost& cost, const Rnn& r, double flops, double bytes) {
  cost.flops = flops;
  cost.bytes = bytes;
  cost.dtype = r.dtype;
  // The gate GEMMs: M = G*H, N = rows, K = I (+H); fp32 may run on TF32.
  cost.tc_eligible = tc_eligible(r.dtype, r.gates * r.h, r.hout, r.in, /*allow_tf32=*/true);
  cost.params = r.params();
}

// Sum of bytes of the tensors of a list argument (0 when it is not a readable list).
double list_bytes(const Value* v) {
  double b = 0;
  if (v && v->kind == Value::Kind::kTensorList) {
    for (const Tensor& t : v->tensors) b += tensor_bytes(t);
  }
  return b;
}

double tensor_or_list_bytes(const Value* v) {
  if (v && v->kind == Value::Kind::kTensor && v->tensor.rank() > 0) return tensor_bytes(v->tensor);
  return list_bytes(v);
}

// ---- cells: (input[B, I] or [I], hx (LSTM: [h, c]), w_ih[G*H, I], w_hh[G*H, H], b_ih, b_hh) ----

bool cell(const OpArgs& args, OpCost& cost, int gates) {
  const Tensor* x = args.tensor("input", 0);
  const Tensor* w_ih = args.tensor("w_ih", 2);
  const Tensor* w_hh = args.tensor("w_hh", 3);
  if (!x || !w_ih || !w_hh || w_ih->rank() != 2 || w_hh->rank() != 2 || x->rank() == 0) {
    return unmodeled(cost, "rnn cell: needs input, w_ih, w_hh");
  }
  Rnn r;
  r.gates = gates;
  r.h = w_hh->shape[1];
  r.hout = r.h;
  r.in = w_ih->shape[1];
  if (r.h <= 0 || w_ih->shape[0] != gates * r.h || x->dim(-1) != r.in) {
    return unmodeled(cost, "rnn cell: weight shapes do not match the cell");
  }
  r.rows = x->rank() == 2 ? static_cast<double>(x->shape[0]) : 1;
  const Tensor* b_ih = args.tensor("b_ih", 4);
  const Tensor* b_hh = args.tensor("b_hh", 5);
  if (b_ih && b_ih->rank() == 0) b_ih = nullptr;  // emit_nvtx placeholder
  if (b_hh && b_hh->rank() == 0) b_hh = nullptr;
  r.bias = b_ih || b_hh;
  r.macs = static_cast<double>(gates) * static_cast<double>(r.h) * static_cast<double>(r.in + r.h);
  r.dtype = x->dtype;
  double state = r.rows * static_cast<double>(r.h) * elem_size(r.dtype);  // one [B, H] tensor
  int states = gates == 4 ? 2 : 1;                                        // h (and c)
  double hx = tensor_or_list_bytes(args.arg("hx", 1));
  if (hx == 0) hx = states * state;  // hx unreadable or omitted (zeros): count its size
  double bytes = tensor_bytes(*x) + hx + tensor_bytes(*w_ih) + tensor_bytes(*w_hh) +
                 (b_ih ? tensor_bytes(*b_ih) : 0) + (b_hh ? tensor_bytes(*b_hh) : 0) +
                 states * state;
  finish(cost, r, r.forward_flops(), bytes);
  return true;
}

// _thnn_fused_lstm_cell(input_gates[B, 4H], hidden_gates[B, 4H], cx[B, H], input_bias?,
// hidden_bias?) -> hy, cy, workspace[B, 4H]; _thnn_fused_gru_cell(input_gates[B, 3H],
// hidden_gates[B, 3H], hx[B, H], input_bias?, hidden_bias?) -> hy, workspace[B, 5H]. The GEMMs
// ran before (linear); only the elementwise part is here.
bool fused_cell(const OpArgs& args, OpCost& cost, int gates) {
  const Tensor* ig = args.tensor("input_gates", 0);
  const Tensor* hg = args.tensor("hidden_gates", 1);
  const Tensor* state = args.tensor(gates == 4 ? "cx" : "hx", 2);
  if (!ig || !hg || !state || ig->rank() != 2 || state->rank() != 2) {
    return unmodeled(cost, "fused cell: needs input_gates, hidden_gates, state");
  }
  Rnn r;
  r.gates = gates;
  r.rows = static_cast<double>(state->shape[0]);
  r.h = r.hout = state->shape[1];
  if (ig->shape[1] != gates * r.h) return unmodeled(cost, "fused cell: gate size differs");
  const Tensor* bi = args.tensor("input_bias", 3);
  const Tensor* bh = args.tensor("hidden_bias", 4);
  if (bi && bi->rank() == 0) bi = nullptr;
  if (bh && bh->rank() == 0) bh = nullptr;
  r.bias = bi || bh;
  r.dtype = ig->dtype;
  double unit = r.rows * static_cast<double>(r.h) * elem_size(r.dtype);
  double bytes = tensor_bytes(*ig) + tensor_bytes(*hg) + tensor_bytes(*state) +
                 (bi ? tensor_bytes(*bi) : 0) + (bh ? tensor_bytes(*bh) : 0);
  bytes += gates == 4 ? unit * (2 + 4) : unit * (1 + 5);  // outputs and the saved workspace
  finish(cost, r, r.units() * elementwise_fwd(gates, r.bias), bytes);
  cost.tc_eligible = false;
  return true;
}

// _thnn_fused_lstm_cell_backward(_impl)(grad_hy?, grad_cy?, cx[B, H], cy, workspace[B, 4H],
// has_bias) -> grad_gates[B, 4H], grad_cx[B, H], grad_bias[4H].
bool fused_lstm_cell_backward(const OpArgs& args, OpCost& cost) {
  const Tensor* cx = args.tensor("cx", 2);
  const Tensor* ws = args.tensor("workspace", 4);
  if (!cx || !ws || cx->rank() != 2 || ws->rank() != 2) {
    return unmodeled(cost, "fused lstm backward: needs cx, workspace");
  }
  Rnn r;
  r.rows = static_cast<double>(cx->shape[0]);
  r.h = r.hout = cx->shape[1];
  r.bias = args.bool_or("has_bias", 5, true);
  r.dtype = cx->dtype;
  double bytes = 0;
  for (const Tensor* t : args.tensors()) {
    if (t->rank() > 0) bytes += tensor_bytes(*t);  // grad_hy, grad_cy, cx, cy, workspace
  }
  double unit = r.rows * static_cast<double>(r.h) * elem_size(r.dtype);
  bytes += unit * (4 + 1) + (r.bias ? 4 * static_cast<double>(r.h) * elem_size(r.dtype) : 0);
  finish(cost, r, r.units() * elementwise_bwd(4, r.bias), bytes);
  cost.tc_eligible = false;
  return true;
}

// _thnn_fused_gru_cell_backward(grad_hy[B, H], workspace[B, 5H], has_bias) ->
// grad_input_gates[B, 3H], grad_hidden_gates[B, 3H], grad_hx[B, H], 2 x grad_bias[3H].
bool fused_gru_cell_backward(const OpArgs& args, OpCost& cost) {
  const Tensor* gh = args.tensor("grad_hy", 0);
  const Tensor* ws = args.tensor("workspace", 1);
  if (!gh || !ws || gh->rank() != 2 || ws->rank() != 2) {
    return unmodeled(cost, "fused gru backward: needs grad_hy, workspace");
  }
  Rnn r;
  r.gates = 3;
  r.rows = static_cast<double>(gh->shape[0]);
  r.h = r.hout = gh->shape[1];
  r.bias = args.bool_or("has_bias", 2, true);
  r.dtype = gh->dtype;
  double unit = r.rows * static_cast<double>(r.h) * elem_size(r.dtype);
  double bytes = tensor_bytes(*gh) + tensor_bytes(*ws) + unit * (3 + 3 + 1) +
                 (r.bias ? 6 * static_cast<double>(r.h) * elem_size(r.dtype) : 0);
  finish(cost, r, r.units() * elementwise_bwd(3, r.bias), bytes);
  cost.tc_eligible = false;
  return true;
}

// ---- whole sequences ----

// aten::lstm/gru/rnn_tanh/rnn_relu:
//   .input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
//   .data(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)
// params: per layer and direction w_ih, w_hh[, b_ih, b_hh][, w_hr]. The weight multiply-adds are
// the weight matrices' sizes (projection included), so nothing needs the layer formula.
bool sequence(const OpArgs& args, OpCost& cost, int gates) {
  const Tensor* x = args.tensor("input", 0);
  bool packed = false;
  if (!x) {
    x = args.tensor("data", 0);
    packed = x != nullptr;
  }
  if (!packed && !args.get("input")) {  // positional: .data has a 1-D batch_sizes second
    const Tensor* bs = args.tensor("", 1);
    packed = bs && bs->rank() == 1;
  }
  size_t off = packed ? 1 : 0;
  const Value* hx = args.arg("hx", 1 + off);
  const Value* params = args.arg("params", 2 + off);
  if (!x || x->rank() == 0 || !params || params->kind != Value::Kind::kTensorList) {
    return unmodeled(cost, "rnn: needs input and the params list");
  }
  Rnn r;
  r.gates = gates;
  r.rows = rows_of(*x);
  r.in = x->dim(-1);
  r.bias = args.bool_or("has_biases", 3 + off, true);
  r.layers = args.int_or("num_layers", 4 + off, 1);
  r.dirs = args.bool_or("bidirectional", 7 + off, false) ? 2 : 1;
  const std::vector<Tensor>& ps = params->tensors;
  if (ps.size() < 2 || ps[0].rank() != 2 || ps[1].rank() != 2) {
    return unmodeled(cost, "rnn: params must start with w_ih, w_hh");
  }
  r.h = ps[0].shape[0] / gates;
  r.hout = ps[1].shape[1];
  for (const Tensor& p : ps) {
    if (p.rank() == 2) r.macs += static_cast<double>(p.numel());
  }
  r.dtype = x->dtype.empty() ? ps[0].dtype : x->dtype;
  double states = tensor_or_list_bytes(hx);
  double bytes = tensor_bytes(*x) + list_bytes(params) + 2 * states +  // hx read, hy written
                 r.rows * static_cast<double>(r.dirs * r.hout) * elem_size(r.dtype);
  finish(cost, r, r.forward_flops(), bytes);
  return true;
}

// _cudnn_rnn / miopen_rnn / their backward: the positions of their arguments.
struct Fused {
  int weight = 1, weight_buf = 3, hx = 4, cx = 5, mode = 6, hidden = 7, proj = 8, layers = 9,
      bidir = 13, output_mask = -1;
  bool backward = false;
};

// _cudnn_rnn(input, weight, weight_stride0, weight_buf, hx, cx, mode, hidden_size, proj_size,
// num_layers, batch_first, dropout, train, bidirectional, batch_sizes, dropout_state).
// _cudnn_rnn_backward(input, weight, weight_stride0, weight_buf, hx, cx, output, grad_output,
// grad_hy, grad_cy, mode, hidden_size, proj_size, num_layers, batch_first, dropout, train,
// bidirectional, batch_sizes, dropout_state, reserve, output_mask[input, hx, cx, weights]).
bool fused_sequence(const OpArgs& args, OpCost& cost, const Fused& f) {
  const Tensor* x = args.tensor("input", 0);
  if (!x || x->rank() < 2) return unmodeled(cost, "rnn: needs input");
  const Value* mode = args.arg("mode", static_cast<size_t>(f.mode));
  const Value* hidden = args.arg("hidden_size", static_cast<size_t>(f.hidden));
  if (!mode || mode->kind != Value::Kind::kInt || !hidden || hidden->kind != Value::Kind::kInt) {
    return unmodeled(cost, "rnn: mode and hidden_size unknown");
  }
  Rnn r;
  r.gates = gates_of_mode(mode->i);
  r.h = hidden->i;
  int64_t proj = f.proj >= 0 ? args.int_or("proj_size", static_cast<size_t>(f.proj), 0) : 0;
  r.hout = proj > 0 ? proj : r.h;
  r.layers = args.int_or("num_layers", static_cast<size_t>(f.layers), 1);
  r.dirs = args.bool_or("bidirectional", static_cast<size_t>(f.bidir), false) ? 2 : 1;
  r.rows = rows_of(*x);
  r.in = x->dim(-1);
  r.dtype = x->dtype;
  // Biases: the weight list holds 4 (LSTM: 4 or 5 with projection) tensors per layer and
  // direction with biases, 2 (3) without; assume biases when the list is unreadable.
  const Value* wl = args.arg("weight", static_cast<size_t>(f.weight));
  r.bias = true;
  if (wl && wl->kind == Value::Kind::kTensorList && !wl->tensors.empty()) {
    size_t rank1 = 0;
    for (const Tensor& t : wl->tensors) rank1 += t.rank() == 1 ? 1 : 0;
    r.bias = rank1 > 0;
  }
  r.macs = weight_macs(r.gates, r.in, r.h, proj, r.layers, r.dirs);
  double weights = 0;
  if (f.weight_buf >= 0) {
    const Tensor* buf = args.tensor("weight_buf", static_cast<size_t>(f.weight_buf));
    if (buf && buf->rank() > 0) weights = tensor_bytes(*buf);
  }
  if (weights == 0) weights = list_bytes(wl);
  if (weights == 0) {
    double biases =
        r.bias ? 2.0 * r.gates * static_cast<double>(r.h) * static_cast<double>(r.layers * r.dirs)
               : 0;
    weights = (r.macs + biases) * elem_size(r.dtype);
  }
  const Tensor* hx = args.tensor("hx", static_cast<size_t>(f.hx));
  const Tensor* cx = args.tensor("cx", static_cast<size_t>(f.cx));
  double states = (hx && hx->rank() > 0 ? tensor_bytes(*hx) : 0) +
                  (cx && cx->rank() > 0 ? tensor_bytes(*cx) : 0);
  double output = r.rows * static_cast<double>(r.dirs * r.hout) * elem_size(r.dtype);
  if (!f.backward) {
    // Reads input, weights, hx, cx; writes output, hy, cy (the training reserve is not counted:
    // its size is cuDNN's choice).
    finish(cost, r, r.forward_flops(), tensor_bytes(*x) + weights + 2 * states + output);
    return true;
  }
  std::vector<int64_t> mask =
      args.ints_or("output_mask", static_cast<size_t>(f.output_mask), {1, 1, 1, 1});
  mask.resize(4, 0);
  // Reads: input, weights, hx, cx, output, grad_output, grad_hy, grad_cy, reserve.
  double reads = tensor_bytes(*x) + weights + states;
  for (const char* name : {"output", "grad_output", "grad_hy", "grad_cy", "reserve"}) {
    const Value* v = args.get(name);  // named records only: positional ones lack mode above
    if (v && v->is_tensor() && v->tensor.rank() > 0) reads += tensor_bytes(v->tensor);
  }
  double writes =
      (mask[0] ? tensor_bytes(*x) : 0) + (mask[1] && hx && hx->rank() > 0 ? tensor_bytes(*hx) : 0) +
      (mask[2] && cx && cx->rank() > 0 ? tensor_bytes(*cx) : 0) + (mask[3] ? weights : 0);
  // The data gradient (inputs and hidden state) is always computed: BPTT needs it.
  double flops = r.gemm_flops() * (mask[3] ? 2 : 1) + r.units() * elementwise_bwd(r.gates, r.bias);
  finish(cost, r, flops, reads + writes);
  return true;
}

// mkldnn_rnn_layer(input, weight0 (w_ih), weight1 (w_hh), weight2, weight3 (biases), hx_, cx_,
// reverse, batch_sizes, mode, hidden_size, num_layers, has_biases, bidirectional, batch_first,
// train): one layer, one direction (the CPU LSTM). mkldnn_rnn_layer_backward(input, weight1..4,
// hx_, cx_tmp, output, hy_, cy_, grad_output, grad_hy, grad_cy, reverse, mode, hidden_size,
// num_layers, has_biases, train, bidirectional, batch_sizes, batch_first, workspace).
template <bool kBackward>
bool mkldnn_layer(const OpArgs& args, OpCost& cost) {
  const Tensor* x = args.tensor("input", 0);
  const Tensor* w_ih = args.tensor(kBackward ? "weight1" : "weight0", 1);
  const Tensor* w_hh = args.tensor(kBackward ? "weight2" : "weight1", 2);
  if (!x || !w_ih || !w_hh || w_ih->rank() != 2 || w_hh->rank() != 2 || x->rank() < 2) {
    return unmodeled(cost, "mkldnn_rnn_layer: needs input and the two weight matrices");
  }
  Rnn r;
  r.h = args.int_or("hidden_size", kBackward ? 15 : 10, w_hh->shape[1]);
  if (r.h <= 0) return unmodeled(cost, "mkldnn_rnn_layer: bad hidden_size");
  r.gates = static_cast<int>(w_ih->shape[0] / r.h);
  r.hout = w_hh->shape[1];
  r.in = w_ih->shape[1];
  r.rows = rows_of(*x);
  r.bias = args.bool_or("has_biases", kBackward ? 17 : 12, true);
  r.macs = static_cast<double>(w_ih->numel() + w_hh->numel());
  r.dtype = x->dtype;
  double weights = tensor_bytes(*w_ih) + tensor_bytes(*w_hh);
  double biases = 0;
  for (int i = 3; i <= 4; ++i) {
    const Tensor* b =
        args.tensor(kBackward ? (i == 3 ? "weight3" : "weight4") : (i == 3 ? "weight2" : "weight3"),
                    static_cast<size_t>(i));
    if (b && b->rank() > 0) biases += tensor_bytes(*b);
  }
  // hx_ and cx_ ([B, H] each, [B, P] for a projected hx).
  double states = 0;
  for (size_t pos : {5, 6}) {
    const Tensor* t = args.tensor(pos == 5 ? "hx_" : (kBackward ? "cx_tmp" : "cx_"), pos);
    if (t && t->rank() > 0) states += tensor_bytes(*t);
  }
  double output = r.rows * static_cast<double>(r.hout) * elem_size(r.dtype);
  if (!kBackward) {
    // Reads input, weights, biases, hx, cx; writes output, hy, cy.
    finish(cost, r, r.forward_flops(), tensor_bytes(*x) + weights + biases + 2 * states + output);
    return true;
  }
  double reads = 0;
  for (const Tensor* t : args.tensors()) {
    if (t->rank() > 0) reads += tensor_bytes(*t);
  }
  // Writes grad_input, grad of the weights and biases, grad_hx, grad_cx.
  double writes = tensor_bytes(*x) + weights + biases + states;
  double flops = 2 * r.gemm_flops() + r.units() * elementwise_bwd(r.gates, r.bias);
  finish(cost, r, flops, reads + writes);
  return true;
}

}  // namespace

void register_rnn(Registry& r) {
  const std::string f = "rnn";
  r.add("lstm_cell", f, [](const OpArgs& a, OpCost& c) { return cell(a, c, 4); });
  r.add("gru_cell", f, [](const OpArgs& a, OpCost& c) { return cell(a, c, 3); });
  r.add("rnn_tanh_cell", f, [](const OpArgs& a, OpCost& c) { return cell(a, c, 1); });
  r.add("rnn_relu_cell", f, [](const OpArgs& a, OpCost& c) { return cell(a, c, 1); });
  r.add("_thnn_fused_lstm_cell", f, [](const OpArgs& a, OpCost& c) { return fused_cell(a, c, 4); });
  r.add("_thnn_fused_gru_cell", f, [](const OpArgs& a, OpCost& c) { return fused_cell(a, c, 3); });
  r.add("_thnn_fused_lstm_cell_backward_impl", f, fused_lstm_cell_backward);
  r.add("_thnn_fused_lstm_cell_backward", f, fused_lstm_cell_backward);
  r.add("_thnn_fused_gru_cell_backward", f, fused_gru_cell_backward);
  r.add("lstm", f, [](const OpArgs& a, OpCost& c) { return sequence(a, c, 4); });
  r.add("gru", f, [](const OpArgs& a, OpCost& c) { return sequence(a, c, 3); });
  r.add("rnn_tanh", f, [](const OpArgs& a, OpCost& c) { return sequence(a, c, 1); });
  r.add("rnn_relu", f, [](const OpArgs& a, OpCost& c) { return sequence(a, c, 1); });
  Fused cudnn;
  r.add("_cudnn_rnn", f,
        [cudnn](const OpArgs& a, OpCost& c) { return fused_sequence(a, c, cudnn); });
  Fused cudnn_b{1, 3, 4, 5, 10, 11, 12, 13, 17, 21, true};
  r.add("_cudnn_rnn_backward", f,
        [cudnn_b](const OpArgs& a, OpCost& c) { return fused_sequence(a, c, cudnn_b); });
  // miopen_rnn(input, weight, weight_stride0, hx, cx, mode, hidden_size, num_layers, batch_first,
  // dropout, train, bidirectional, batch_sizes, dropout_state)
  Fused miopen{1, -1, 3, 4, 5, 6, -1, 7, 11, -1, false};
  r.add("miopen_rnn", f,
        [miopen](const OpArgs& a, OpCost& c) { return fused_sequence(a, c, miopen); });
  // miopen_rnn_backward(input, weight, weight_stride0, weight_buf, hx, cx, output, grad_output,
  // grad_hy, grad_cy, mode, hidden_size, num_layers, batch_first, dropout, train, bidirectional,
  // batch_sizes, dropout_state, reserve, output_mask)
  Fused miopen_b{1, 3, 4, 5, 10, 11, -1, 12, 16, 20, true};
  r.add("miopen_rnn_backward", f,
        [miopen_b](const OpArgs& a, OpCost& c) { return fused_sequence(a, c, miopen_b); });
  r.add("mkldnn_rnn_layer", f, mkldnn_layer<false>);
  r.add("mkldnn_rnn_layer_backward", f, mkldnn_layer<true>);
}

}  // namespace pyprof::models

// The attention family: scaled_dot_product_attention and the kernels it dispatches to (flash,
// flash for CPU, memory-efficient, cuDNN, math, overrideable) with their backward ops, and the
// raw _flash_attention_* / _efficient_attention_* / _cudnn_attention_* ops. Formulas and
// deviations: docs/ops.md "attention".
//
// FLOPs follow FlopCounterMode's sdpa_flop_count / sdpa_backward_flop_count: the two (forward)
// or five (backward) batched GEMMs, 2 FLOPs per multiply-add, softmax/scaling/dropout not
// counted, over the query-key pairs the kernel computes:
//   forward  2 * B*Hq * pairs * (D + Dv)
//   backward 2 * B*Hq * pairs * (3*D + 2*Dv)
// (grouped-query attention: Hq query heads share Hkv key/value heads; the count uses Hq).
// Without a causal mask pairs = Sq * Sk, FlopCounterMode's count. A causal flash, memory-
// efficient or cuDNN kernel skips the score blocks its mask hides, so pairs are those the mask
// keeps (causal_pairs): the exact triangle, not the kernel's tiles, whose sizes the trace does not
// say (docs/ops.md "attention"). The dense count stays in OpCost::masked_flops.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using shape_util::dtype_suffix;
using shape_util::elem_size;
using shape_util::unmodeled;

// Where an attention op keeps its arguments; -1: not an argument of this op.
struct Spec {
  bool bshd = false;      // raw kernels: [B, S, H, D] (varlen: [T, H, D] / [1, T, H, D])
  bool backward = false;  // grad_out first, then query, key, value
  const char* causal_name = "is_causal";
  int causal = -1;
  // How a causal mask lines up when Sq != Sk: SDPA's is_causal keeps key j for query i when
  // j <= i (top-left); FlashAttention-2's kernels when j <= i + Sk - Sq (bottom-right). The raw
  // memory-efficient kernel says which by its custom_mask_type (1 top-left, 2 bottom-right).
  bool causal_bottom_right = false;
  bool mask_type_says = false;  // `causal` is custom_mask_type
  bool skips_masked = true;     // false: the math path computes the masked scores too
  // Variable-length (nested/jagged) batches: cumulative sequence offsets and max lengths.
  const char* cum_q_name = "cum_seq_q";
  const char* cum_k_name = "cum_seq_k";
  const char* max_q_name = "max_q";
  const char* max_k_name = "max_k";
  int cum_q = -1, cum_k = -1, max_q = -1, max_k = -1;
  // The logsumexp output: 0 none, 1 always, 2 when the flag argument is true.
  int lse = 0;
  const char* lse_flag_name = "compute_log_sumexp";
  int lse_flag = -1;
  bool writes_attn = false;  // _scaled_dot_product_attention_math returns the attention matrix
  const char* grad_mask_name = "grad_input_mask";
  int grad_mask = -1;  // backward: which of grad_q, grad_k, grad_v(, grad_bias) are written
  // The libraries' names of query, key, value and the output gradient (flash-attn: q, k, v,
  // dout).
  const char* q_name = "query";
  const char* k_name = "key";
  const char* v_name = "value";
  const char* go_name = "grad_out";
  // Local (sliding-window) attention, FlashAttention's window_size_left/right: a query keeps
  // the keys from left before to right after its diagonal (-1: unbounded).
  const char* wl_name = "window_size_left";
  const char* wr_name = "window_size_right";
  int wl = -1, wr = -1;
  // Outputs the caller passes in (flash-attn's backward dq, dk, dv; vLLM's out): written, not
  // read. Backward gradients are counted by `grad_mask`'s rule already.
  struct Named {
    const char* name;
    int position;
  };
  std::vector<Named> outputs;
  // A paged KV cache: key/value are the cache ([blocks, block_size, Hkv, D], or [slots, Hkv, D]),
  // not the keys this call reads. `block_table` ([B, blocks per sequence], vLLM/flash-attn) or
  // `page_indices` (aiter: one entry a page, [pages]) bounds the keys read.
  const char* block_table_name = "block_table";
  int block_table = -1;
  const char* page_indices_name = "kv_page_indices";
  int page_indices = -1;
};

struct Shape {
  double bh = 0;  // batch * query heads
  int64_t b = 0, hq = 0, hkv = 0, sq = 0, sk = 0, d = 0, dv = 0;
  double pairs = 0;  // sum over sequences of Sq*Sk (B*Hq*pairs query-key products per head dim)
  bool varlen = false;
  bool paged = false;            // varlen over a paged KV cache: sk is a bound on the keys read
  int64_t max_q = 0, max_k = 0;  // varlen: the longest sequences (0: not given)
};

// The pairs a bottom-right aligned local window keeps, per (batch, head): query i sees key j when
// i + c - left <= j <= i + c + right, c = Sk - Sq, j in [0, Sk). f(i), the keys of row i, is
// piecewise linear in i, bending where the window's ends meet the sequence's (b1, b2): summed
// exactly, segment by segment. left/right at least Sq + Sk mean unbounded.
double window_pairs(int64_t sq_, int64_t sk_, int64_t left_, int64_t right_) {
  const double sq = static_cast<double>(sq_), sk = static_cast<double>(sk_);
  const double c = sk - sq;
  const double left = static_cast<double>(std::min(left_, sq_ + sk_));
  const double right = static_cast<double>(std::min(right_, sq_ + sk_));
  auto keys = [&](double i) {
    return std::min(sk - 1, i + c + right) - std::max(0.0, i + c - left) + 1;
  };
  const double first = std::max(0.0, -c - right), last = std::min(sq - 1, sk - 1 - c + left);
  if (sk <= 0 || last < first) return 0;
  double cuts[2] = {sk - 1 - c - right, left - c};
  std::sort(cuts, cuts + 2);
  double total = 0, start = first;
  for (double cut : cuts) {
    if (cut < start || cut >= last) continue;
    total += (cut - start + 1) * (keys(start) + keys(cut)) / 2;
    start = cut + 1;
  }
  return total + (last - start + 1) * (keys(start) + keys(last)) / 2;
}

// The query-key pairs a causal mask keeps, per (batch, head). Dense: Sq rows, row i keeping
// min(i + 1, Sk) keys (top-left) or clamp(i + 1 + Sk - Sq, 0, Sk) (bottom-right).
// Variable-length batches give only totals and maxima: when Tq = Tk and max_q = max_k (self-
// attention packing: each sequence its own triangle, whichever the alignment), a sequence of S
// keeps S(S+1)/2 <= S(max+1)/2 pairs, so at most Tq*(max_q+1)/2; otherwise the dense bound stays.
// Bottom-right alignment with Tq <= Tk (queries the last tokens of their sequences, as in
// prefill over a cache): sequence i keeps Sq_i*Sk_i - Sq_i(Sq_i-1)/2, and sum Sq_i^2 >= Tq^2/n
// (n sequences), so pairs <= dense bound - (Tq^2/n - Tq)/2.
double causal_pairs(const Shape& sh, bool bottom_right) {
  if (sh.varlen) {
    double pairs = sh.pairs;
    if (sh.sq == sh.sk && sh.max_q > 0 && sh.max_q == sh.max_k) {
      pairs = std::min(pairs, static_cast<double>(sh.sq) * (static_cast<double>(sh.max_q) + 1) / 2);
    }
    if (bottom_right && sh.sq <= sh.sk && sh.b > 0) {
      const double tq = static_cast<double>(sh.sq);
      pairs =
          std::min(pairs, std::max(0.0, sh.pairs - (tq * tq / static_cast<double>(sh.b) - tq) / 2));
    }
    return pairs;
  }
  const double sq = static_cast<double>(sh.sq), sk = static_cast<double>(sh.sk);
  if (bottom_right) {
    // sq <= sk: each row keeps sk - sq keys more than its triangle; sq > sk: the first sq - sk
    // rows keep none, the rest a triangle of sk.
    return sq <= sk ? sq * (sk - sq) + sq * (sq + 1) / 2 : sk * (sk + 1) / 2;
  }
  const double n = std::min(sq, sk);
  return n * (n + 1) / 2 + std::max(0.0, sq - sk) * sk;
}

bool read_shape(const OpArgs& args, const Spec& s, const Tensor& q, const Tensor& k,
                const Tensor& v, Shape& sh, std::string& why) {
  const Tensor* cum_q =
      s.cum_q >= 0 ? args.tensor(s.cum_q_name, static_cast<size_t>(s.cum_q)) : nullptr;
  sh.varlen = s.bshd && cum_q && cum_q->rank() == 1 && cum_q->shape[0] >= 2;
  const Tensor* table = s.block_table >= 0
                            ? args.tensor(s.block_table_name, static_cast<size_t>(s.block_table))
                            : nullptr;
  const Tensor* pages = s.page_indices >= 0
                            ? args.tensor(s.page_indices_name, static_cast<size_t>(s.page_indices))
                            : nullptr;
  if (table && table->rank() == 0) table = nullptr;  // None
  if (pages && pages->rank() != 1) pages = nullptr;
  sh.paged = sh.varlen && (table || pages);
  if (sh.varlen) {
    // q [Tq, Hq, D] (flash) or [1, Tq, Hq, D] (efficient); sequence lengths are not in the args:
    // sum_i Sq_i*Sk_i <= min(Tq*max_k, max_q*Tk), an upper bound (FlopCounterMode's worst case
    // with fake tensors is nseq*max_q*max_k, larger still). A paged cache's k/v are the cache:
    // [blocks, block_size, Hkv, D] or [slots, Hkv, D]; Tk is bounded by the pages listed.
    if (q.rank() < 3 || (!sh.paged && (k.rank() != q.rank() || v.rank() != q.rank())) ||
        (sh.paged && (k.rank() < 3 || k.rank() > 4 || v.rank() != k.rank()))) {
      why = "attention: varlen q/k/v must be [T, H, D]";
      return false;
    }
    int64_t nseq = cum_q->shape[0] - 1;
    sh.sq = q.dim(-3);
    sh.sk = k.dim(-3);
    if (sh.paged) {
      const int64_t block = k.rank() == 4 ? k.dim(1) : 1;
      sh.sk = count_mul(table ? table->numel() : pages->numel(), block);
      const int64_t max_k_arg =
          s.max_k >= 0 ? args.int_or(s.max_k_name, static_cast<size_t>(s.max_k), 0) : 0;
      if (table && max_k_arg > 0) sh.sk = std::min(sh.sk, count_mul(nseq, max_k_arg));
    }
    sh.hq = q.dim(-2);
    sh.hkv = k.dim(-2);
    sh.d = q.dim(-1);
    sh.dv = v.dim(-1);
    sh.b = nseq;
    sh.bh = static_cast<double>(sh.hq);
    int64_t max_q = s.max_q >= 0 ? args.int_or(s.max_q_name, static_cast<size_t>(s.max_q), 0) : 0;
    int64_t max_k = s.max_k >= 0 ? args.int_or(s.max_k_name, static_cast<size_t>(s.max_k), 0) : 0;
    sh.max_q = max_q;
    sh.max_k = max_k;
    double tq = static_cast<double>(sh.sq), tk = static_cast<double>(sh.sk);
    if (max_q > 0 && max_k > 0) {
      sh.pairs = std::min(tq * static_cast<double>(max_k), static_cast<double>(max_q) * tk);
    } else {
      sh.pairs = tq * tk / static_cast<double>(nseq > 0 ? nseq : 1);
    }
  } else if (s.bshd) {
    if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) {
      why = "attention: q/k/v must be [B, S, H, D]";
      return false;
    }
    sh.b = q.shape[0];
    sh.sq = q.shape[1];
    sh.hq = q.shape[2];
    sh.sk = k.shape[1];
    sh.hkv = k.shape[2];
    sh.d = q.shape[3];
    sh.dv = v.shape[3];
    sh.bh = static_cast<double>(sh.b) * static_cast<double>(sh.hq);
    sh.pairs = static_cast<double>(sh.sq) * static_cast<double>(sh.sk);
    if (k.shape[3] != sh.d || v.shape[1] != sh.sk) {
      why = "attention: q/k/v shapes differ";
      return false;
    }
  } else {
    // [..., H, S, D]: any number of leading batch dims.
    if (q.rank() < 2 || k.rank() < 2 || v.rank() < 2) {
      why = "attention: q/k/v must be [..., S, D]";
      return false;
    }
    sh.bh = 1;
    for (int i = 0; i + 2 < q.rank(); ++i) sh.bh *= static_cast<double>(q.shape[i]);
    sh.b = q.rank() >= 4 ? q.dim(-4) : 0;
    sh.hq = q.rank() >= 3 ? q.dim(-3) : 1;
    sh.hkv = k.rank() >= 3 ? k.dim(-3) : 1;
    sh.sq = q.dim(-2);
    sh.d = q.dim(-1);
    sh.sk = k.dim(-2);
    sh.dv = v.dim(-1);
    sh.pairs = static_cast<double>(sh.sq) * static_cast<double>(sh.sk);
    if (k.dim(-1) != sh.d || v.dim(-2) != sh.sk) {
      why = "attention: q/k/v shapes differ";
      return false;
    }
  }
  if (sh.hkv <= 0 || sh.hq % sh.hkv != 0) {
    why = "attention: query heads are not a multiple of key/value heads";
    return false;
  }
  return true;
}

bool attention(const OpArgs& args, OpCost& cost, const Spec& s) {
  size_t base = s.backward ? 1 : 0;
  const Tensor* go = s.backward ? args.tensor(s.go_name, 0) : nullptr;
  if (s.backward && !go) go = args.tensor("grad_out_", 0);
  const Tensor* q = args.tensor(s.q_name, base);
  const Tensor* k = args.tensor(s.k_name, base + 1);
  const Tensor* v = args.tensor(s.v_name, base + 2);
  if (!q || !k || !v || (s.backward && !go))
    return unmodeled(cost, "attention: needs query, key, value");
  Shape sh;
  std::string why;
  if (!read_shape(args, s, *q, *k, *v, sh, why)) return unmodeled(cost, why);
  bool causal = false, bottom_right = s.causal_bottom_right;
  if (s.causal >= 0) {
    const Value* c = args.arg(s.causal_name, static_cast<size_t>(s.causal));
    causal = c && (c->kind == Value::Kind::kBool || c->kind == Value::Kind::kInt) && c->i != 0;
    if (causal && s.mask_type_says) bottom_right = c->i == 2;
  }
  // A local window (FlashAttention's window_size_left/right; causal is a right window of 0).
  constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max() / 4;
  int64_t left = kUnbounded, right = kUnbounded;
  if (s.wl >= 0) {
    int64_t l = args.int_or(s.wl_name, static_cast<size_t>(s.wl), -1);
    int64_t rr = args.int_or(s.wr_name, static_cast<size_t>(s.wr), -1);
    if (l >= 0) left = l;
    if (rr >= 0) right = rr;
  }
  const bool windowed = left != kUnbounded || (right != kUnbounded && !causal);
  if (causal) right = 0;
  double dd = static_cast<double>(sh.d), dv = static_cast<double>(sh.dv);
  const double per_pair = s.backward ? 2 * (3 * dd + 2 * dv) : 2 * (dd + dv);
  const double dense = sh.bh * sh.pairs * per_pair;
  double kept = causal && s.skips_masked ? causal_pairs(sh, bottom_right) : sh.pairs;
  if (windowed) {
    if (sh.varlen) {
      // At most left + 1 + right keys a query.
      const double span = static_cast<double>(std::min(left, sh.sk)) + 1 +
                          static_cast<double>(std::min(right, sh.sk));
      kept = std::min(kept, static_cast<double>(sh.sq) * span);
    } else {
      kept = std::min(kept, window_pairs(sh.sq, sh.sk, left, right));
    }
  }
  cost.flops = sh.bh * kept * per_pair;
  cost.masked_flops = dense - cost.flops;
  double per = sh.bh * sh.pairs;  // query-key products of the dense score matrix

  // Bytes: every tensor argument is read once (query, key, value, mask/bias, and in backward
  // grad_out, out, logsumexp); rank-0 values are emit_nvtx placeholders or scalars, skipped.
  // Outputs passed in (dq, dk, dv; out) are written, not read. A paged cache is read only for
  // the keys the call can reach: Tk·Hkv·(D + Dv) elements.
  std::vector<const Tensor*> skip;
  for (const Spec::Named& o : s.outputs) {
    if (const Tensor* t = args.tensor(o.name, static_cast<size_t>(o.position))) skip.push_back(t);
  }
  if (sh.paged) {
    skip.push_back(k);
    skip.push_back(v);
  }
  double bytes = 0;
  for (const Tensor* t : args.tensors()) {
    if (t->rank() > 0 && std::find(skip.begin(), skip.end(), t) == skip.end()) {
      bytes += tensor_bytes(*t);
    }
  }
  if (sh.paged) {
    bytes += static_cast<double>(sh.sk) * static_cast<double>(sh.hkv) *
             (dd * shape_util::elem_size(k->dtype) + dv * shape_util::elem_size(v->dtype));
  }
  std::string dt = q->dtype;
  double rows = sh.bh * static_cast<double>(sh.sq);  // query rows (varlen: Hq * Tq)
  if (!s.backward) {
    bytes += rows * dv * elem_size(dt);  // out
    bool lse = s.lse == 1 || (s.lse == 2 && args.bool_or(s.lse_flag_name,
                                                         static_cast<size_t>(s.lse_flag), false));
    if (lse) bytes += rows * 4;  // logsumexp, float32
    if (s.writes_attn) bytes += per * elem_size(dt);
  } else {
    std::vector<int64_t> mask = {1, 1, 1, 0};
    if (s.grad_mask >= 0) {
      mask = args.ints_or(s.grad_mask_name, static_cast<size_t>(s.grad_mask), mask);
      mask.resize(4, 0);
    }
    if (mask[0]) bytes += tensor_bytes(*q);
    if (mask[1]) bytes += tensor_bytes(*k);
    if (mask[2]) bytes += tensor_bytes(*v);
  }
  cost.bytes = bytes;
  cost.dtype = dt;
  // Tensor Cores: fp16/bf16 (fp8) attention with a head dim multiple of 8 (16); fp32 through
  // TF32 in the math path.
  cost.tc_eligible = tc_eligible(dt, sh.d, sh.dv, sh.d, /*allow_tf32=*/true);
  std::string p;
  if (sh.varlen) {
    p = "varlen,seqs=" + std::to_string(sh.b) + ",H=" + std::to_string(sh.hq);
  } else if (sh.b > 0) {
    p = "B=" + std::to_string(sh.b) + ",H=" + std::to_string(sh.hq);
  } else {
    p = "BH=" + std::to_string(static_cast<int64_t>(sh.bh));
  }
  if (sh.hkv != sh.hq) p += ",Hkv=" + std::to_string(sh.hkv);
  p += sh.varlen ? ",Tq=" : ",Sq=";
  p += std::to_string(sh.sq) + (sh.varlen ? ",Tk=" : ",Sk=") + std::to_string(sh.sk) +
       ",D=" + std::to_string(sh.d);
  if (sh.dv != sh.d) p += ",Dv=" + std::to_string(sh.dv);
  p += dtype_suffix(dt);
  if (causal) p += ",causal";
  if (windowed) {
    p += ",window=" + (left == kUnbounded ? std::string("-1") : std::to_string(left)) + ":" +
         (right == kUnbounded ? std::string("-1") : std::to_string(right));
  }
  if (sh.paged) p += ",paged";
  cost.params = std::move(p);
  return true;
}

ModelFn model(Spec s) {
  return [s](const OpArgs& args, OpCost& cost) { return attention(args, cost, s); };
}

// ---- the libraries' attention ops (FlashAttention-2 kernels: causal masks bottom-right) ----
void register_library_attention(Registry& r) {
  const std::string f = "attention";
  // flash-attn (flash_attn/flash_attn_interface.py), namespace flash_attn (2.6/2.7) or flashattn:
  // _flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, window_size_left,
  // window_size_right, softcap, alibi_slopes, return_softmax) -> (out, softmax_lse, S_dmask,
  // rng_state), [B, S, H, D].
  Spec fa;
  fa.bshd = true;
  fa.q_name = "q";
  fa.k_name = "k";
  fa.v_name = "v";
  fa.go_name = "dout";
  fa.causal_name = "causal";
  fa.causal = 5;
  fa.causal_bottom_right = true;
  fa.wl = 6;
  fa.wr = 7;
  fa.lse = 1;
  // _flash_attn_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
  // dropout_p, softmax_scale, causal, window_size_left, window_size_right, softcap,
  // alibi_slopes, return_softmax, block_table, leftpad_k, seqused_k): [T, H, D].
  Spec fa_var = fa;
  fa_var.cum_q_name = "cu_seqlens_q";
  fa_var.cum_k_name = "cu_seqlens_k";
  fa_var.max_q_name = "max_seqlen_q";
  fa_var.max_k_name = "max_seqlen_k";
  fa_var.cum_q = 3;
  fa_var.cum_k = 4;
  fa_var.max_q = 5;
  fa_var.max_k = 6;
  fa_var.causal = 9;
  fa_var.wl = 10;
  fa_var.wr = 11;
  fa_var.block_table = 15;
  // _flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, dropout_p, softmax_scale,
  // causal, window_size_left, window_size_right, softcap, alibi_slopes, deterministic,
  // rng_state): dq, dk, dv are the caller's buffers, written.
  Spec fa_b = fa;
  fa_b.backward = true;
  fa_b.lse = 0;
  fa_b.causal = 11;
  fa_b.wl = 12;
  fa_b.wr = 13;
  fa_b.outputs = {{"dq", 6}, {"dk", 7}, {"dv", 8}};
  // _flash_attn_varlen_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, cu_seqlens_q,
  // cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, causal,
  // window_size_left, window_size_right, softcap, alibi_slopes, deterministic, rng_state).
  Spec fa_var_b = fa_b;
  fa_var_b.cum_q_name = "cu_seqlens_q";
  fa_var_b.cum_k_name = "cu_seqlens_k";
  fa_var_b.max_q_name = "max_seqlen_q";
  fa_var_b.max_k_name = "max_seqlen_k";
  fa_var_b.cum_q = 9;
  fa_var_b.cum_k = 10;
  fa_var_b.max_q = 11;
  fa_var_b.max_k = 12;
  fa_var_b.causal = 15;
  fa_var_b.wl = 16;
  fa_var_b.wr = 17;
  for (const char* ns : {"flash_attn::", "flashattn::"}) {
    r.add(std::string(ns) + "_flash_attn_forward", f, model(fa));
    r.add(std::string(ns) + "_flash_attn_varlen_forward", f, model(fa_var));
    r.add(std::string(ns) + "_flash_attn_backward", f, model(fa_b));
    r.add(std::string(ns) + "_flash_attn_varlen_backward", f, model(fa_var_b));
  }
  // vLLM's FlashAttention-2 build (vllm-flash-attn, namespace _vllm_fa2_C): varlen_fwd(q, k, v,
  // out?, cu_seqlens_q, cu_seqlens_k, seqused_k?, leftpad_k?, block_table?, alibi_slopes?,
  // max_seqlen_q, max_seqlen_k, p_dropout, softmax_scale, zero_tensors, is_causal,
  // window_size_left, window_size_right, softcap, return_softmax, gen?): with a block_table, k
  // and v are the paged cache.
  Spec vllm_fa2 = fa_var;
  vllm_fa2.cum_q = 4;
  vllm_fa2.cum_k = 5;
  vllm_fa2.block_table = 8;
  vllm_fa2.max_q = 10;
  vllm_fa2.max_k = 11;
  vllm_fa2.causal_name = "is_causal";
  vllm_fa2.causal = 15;
  vllm_fa2.wl = 16;
  vllm_fa2.wr = 17;
  vllm_fa2.outputs = {{"out", 3}};
  r.add("_vllm_fa2_C::varlen_fwd", f, model(vllm_fa2));
  // xformers (xformers/ops/fmha/flash.py, namespace xformers_flash): flash_fwd(query, key, value,
  // cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, p, softmax_scale, is_causal,
  // return_softmax) -> (out, lse), q [T, H, D] (a batch flattened); later releases put
  // seqused_k after cu_seqlens_k and window_left/right after is_causal.
  Spec xf = fa_var;
  xf.q_name = "query";
  xf.k_name = "key";
  xf.v_name = "value";
  xf.causal_name = "is_causal";
  xf.causal = 9;
  xf.wl = -1;
  xf.block_table = -1;
  Spec xf_new = xf;  // (..., cu_seqlens_k, seqused_k, max_seqlen_q, max_seqlen_k, p,
                     //  softmax_scale, is_causal, window_left, window_right, ...)
  xf_new.max_q = 6;
  xf_new.max_k = 7;
  xf_new.causal = 10;
  xf_new.wl_name = "window_left";
  xf_new.wr_name = "window_right";
  xf_new.wl = 11;
  xf_new.wr = 12;
  r.add("xformers_flash::flash_fwd", f, [xf, xf_new](const OpArgs& args, OpCost& cost) {
    const Value* at5 = args.at(5);
    const bool old = args.get("seqused_k") == nullptr && (args.get("max_seqlen_q") != nullptr ||
                                                          (at5 && at5->kind == Value::Kind::kInt));
    return attention(args, cost, old ? xf : xf_new);
  });
  // flash_bwd(dout, query, key, value, out, softmax_lse_, dq, dk, dv, cu_seqlens_q,
  // cu_seqlens_k, max_seqlen_q, max_seqlen_k, p, softmax_scale, is_causal)
  Spec xf_b = fa_var_b;
  xf_b.q_name = "query";
  xf_b.k_name = "key";
  xf_b.v_name = "value";
  xf_b.causal_name = "is_causal";
  xf_b.wl = -1;
  r.add("xformers_flash::flash_bwd", f, model(xf_b));
  // aiter (aiter/ops/mha.py): mha_batch_prefill(q, k, v, cu_seqlens_q, kv_indptr,
  // kv_page_indices, max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, logits_soft_cap,
  // zero_tensors, is_causal, window_size_left, window_size_right, return_softmax_lse, ...):
  // k/v the paged pool ([pages, page_size, Hkv, D] or [slots, Hkv, D]), kv_page_indices the
  // pages this batch reads.
  Spec aiter_prefill = fa_var;
  aiter_prefill.cum_k = -1;
  aiter_prefill.block_table = -1;
  aiter_prefill.page_indices = 5;
  aiter_prefill.max_q = 6;
  aiter_prefill.max_k = 7;
  aiter_prefill.causal_name = "is_causal";
  aiter_prefill.causal = 12;
  aiter_prefill.wl = 13;
  aiter_prefill.wr = 14;
  aiter_prefill.lse = 2;
  aiter_prefill.lse_flag_name = "return_softmax_lse";
  aiter_prefill.lse_flag = 15;
  r.add("aiter::mha_batch_prefill", f, model(aiter_prefill));
}

}  // namespace

void register_attention(Registry& r) {
  const std::string f = "attention";
  // ---- forward, [..., H, S, D] ----
  Spec sdpa;  // (query, key, value, attn_mask, dropout_p, is_causal, *, scale, enable_gqa)
  sdpa.causal = 5;
  r.add("scaled_dot_product_attention", f, model(sdpa));
  Spec math = sdpa;  // (..., attn_mask, dropout_p, is_causal, dropout_mask, *, scale, enable_gqa)
  math.writes_attn = true;
  math.skips_masked = false;
  r.add("_scaled_dot_product_attention_math", f, model(math));
  Spec flash;  // (query, key, value, dropout_p, is_causal, return_debug_mask, *, scale)
  flash.causal = 4;
  flash.lse = 1;
  r.add("_scaled_dot_product_flash_attention", f, model(flash));
  r.add("_scaled_dot_product_flash_attention_for_cpu", f, model(flash));
  Spec eff;  // (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, ...)
  eff.causal = 6;
  eff.lse = 2;
  eff.lse_flag = 4;
  r.add("_scaled_dot_product_efficient_attention", f, model(eff));
  r.add("_scaled_dot_product_cudnn_attention", f, model(eff));
  Spec over;  // (query, key, value, attn_bias, dropout_p, is_causal, return_debug_mask, *, scale)
  over.causal = 5;
  over.lse = 1;
  r.add("_scaled_dot_product_fused_attention_overrideable", f, model(over));
  // _cudnn_attention_forward(query, key, value, attn_bias, cum_seq_q, cum_seq_k, max_q, max_k,
  // compute_log_sumexp, dropout_p, is_causal, ...): [B, H, S, D], or [T, H, D] with offsets.
  Spec cudnn_raw;
  cudnn_raw.cum_q = 4;
  cudnn_raw.cum_k = 5;
  cudnn_raw.max_q = 6;
  cudnn_raw.max_k = 7;
  cudnn_raw.lse = 2;
  cudnn_raw.lse_flag = 8;
  cudnn_raw.causal = 10;
  {
    Spec c = cudnn_raw;
    r.add("_cudnn_attention_forward", f, [c](const OpArgs& args, OpCost& cost) {
      // Dense calls are [B, H, S, D]; with offsets the layout is [T, H, D].
      Spec s = c;
      const Tensor* cq = args.tensor(s.cum_q_name, static_cast<size_t>(s.cum_q));
      s.bshd = cq && cq->rank() == 1 && cq->shape[0] >= 2;
      return attention(args, cost, s);
    });
  }
  // ---- forward, raw kernels, [B, S, H, D] ----
  // _flash_attention_forward(query, key, value, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p,
  // is_causal, return_debug_mask, ...)
  Spec flash_raw;
  flash_raw.bshd = true;
  flash_raw.cum_q = 3;
  flash_raw.cum_k = 4;
  flash_raw.max_q = 5;
  flash_raw.max_k = 6;
  flash_raw.causal = 8;
  flash_raw.causal_bottom_right = true;
  flash_raw.lse = 1;
  r.add("_flash_attention_forward", f, model(flash_raw));
  // _efficient_attention_forward(query, key, value, bias, cu_seqlens_q, cu_seqlens_k,
  // max_seqlen_q, max_seqlen_k, dropout_p, custom_mask_type, compute_log_sumexp, ...)
  Spec eff_raw;
  eff_raw.bshd = true;
  eff_raw.cum_q_name = "cu_seqlens_q";
  eff_raw.cum_k_name = "cu_seqlens_k";
  eff_raw.max_q_name = "max_seqlen_q";
  eff_raw.max_k_name = "max_seqlen_k";
  eff_raw.cum_q = 4;
  eff_raw.cum_k = 5;
  eff_raw.max_q = 6;
  eff_raw.max_k = 7;
  eff_raw.causal_name = "custom_mask_type";  // 0 none, 1/2 causal (upper-left/lower-right)
  eff_raw.causal = 9;
  eff_raw.mask_type_says = true;
  eff_raw.lse = 2;
  eff_raw.lse_flag = 10;
  r.add("_efficient_attention_forward", f, model(eff_raw));

  // ---- backward (grad_out, query, key, value, ...) ----
  // _scaled_dot_product_flash_attention_backward(grad_out, query, key, value, out, logsumexp,
  // cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, ...)
  Spec flash_b;
  flash_b.backward = true;
  flash_b.causal = 11;
  r.add("_scaled_dot_product_flash_attention_backward", f, model(flash_b));
  // _scaled_dot_product_flash_attention_for_cpu_backward(grad_out, query, key, value, out,
  // logsumexp, dropout_p, is_causal, *, attn_mask, scale)
  Spec cpu_b;
  cpu_b.backward = true;
  cpu_b.causal = 7;
  r.add("_scaled_dot_product_flash_attention_for_cpu_backward", f, model(cpu_b));
  // _scaled_dot_product_efficient_attention_backward(grad_out_, query, key, value, attn_bias,
  // out, logsumexp, philox_seed, philox_offset, dropout_p, grad_input_mask, is_causal, ...)
  Spec eff_b;
  eff_b.backward = true;
  eff_b.grad_mask = 10;
  eff_b.causal = 11;
  r.add("_scaled_dot_product_efficient_attention_backward", f, model(eff_b));
  // _scaled_dot_product_cudnn_attention_backward(grad_out, query, key, value, out, logsumexp,
  // philox_seed, philox_offset, attn_bias, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p,
  // is_causal, ...)
  Spec cudnn_b;
  cudnn_b.backward = true;
  cudnn_b.causal = 14;
  r.add("_scaled_dot_product_cudnn_attention_backward", f, model(cudnn_b));
  {
    Spec c = cudnn_b;
    c.cum_q = 9;
    c.cum_k = 10;
    c.max_q = 11;
    c.max_k = 12;
    r.add("_cudnn_attention_backward", f, [c](const OpArgs& args, OpCost& cost) {
      Spec s = c;
      const Tensor* cq = args.tensor(s.cum_q_name, static_cast<size_t>(s.cum_q));
      s.bshd = cq && cq->rank() == 1 && cq->shape[0] >= 2;
      return attention(args, cost, s);
    });
  }
  // _scaled_dot_product_fused_attention_overrideable_backward(grad_out, query, key, value,
  // attn_bias, grad_input_mask, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p,
  // is_causal, ...)
  Spec over_b;
  over_b.backward = true;
  over_b.grad_mask = 5;
  over_b.causal = 13;
  r.add("_scaled_dot_product_fused_attention_overrideable_backward", f, model(over_b));
  // _flash_attention_backward(grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k,
  // max_q, max_k, dropout_p, is_causal, ...): [B, S, H, D]
  Spec flash_raw_b = flash_raw;
  flash_raw_b.backward = true;
  flash_raw_b.cum_q = 6;
  flash_raw_b.cum_k = 7;
  flash_raw_b.max_q = 8;
  flash_raw_b.max_k = 9;
  flash_raw_b.causal = 11;
  flash_raw_b.lse = 0;
  r.add("_flash_attention_backward", f, model(flash_raw_b));
  // _efficient_attention_backward(grad_out_, query, key, value, bias, out, cu_seqlens_q,
  // cu_seqlens_k, max_seqlen_q, max_seqlen_k, logsumexp, dropout_p, philox_seed, philox_offset,
  // custom_mask_type, bias_requires_grad, ...)
  Spec eff_raw_b = eff_raw;
  eff_raw_b.backward = true;
  eff_raw_b.cum_q = 6;
  eff_raw_b.cum_k = 7;
  eff_raw_b.max_q = 8;
  eff_raw_b.max_k = 9;
  eff_raw_b.causal = 14;
  eff_raw_b.lse = 0;
  r.add("_efficient_attention_backward", f, model(eff_raw_b));
  register_library_attention(r);
}

}  // namespace pyprof::models

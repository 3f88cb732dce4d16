// The movement family's KV-cache writes of serving stacks: vLLM's reshape_and_cache(_flash) and
// concat_and_cache_mla (namespace _C_cache_ops), SGLang's store_cache(_quant). Each copies the
// new tokens' keys and values into their cache slots. Formulas: docs/ops.md "Library and serving
// ops".
//
// Bytes: the new keys and values and the slot indices read, as many cache elements written (in
// the cache's dtype), the scales read; the rest of the cache is not touched (its size is the
// pool's, not the work's). FLOPs: 0 for a copy; a cache in a narrower dtype (an FP8 cache)
// quantizes each element: * 1/scale and the clamp, 3 (as the FP8 quantization ops). Slots a
// padded batch marks -1 are skipped by the kernels; the arguments do not say how many: every
// token is counted.
#include <string>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using shape_util::describe;
using shape_util::fl;
using shape_util::nbytes;
using shape_util::unmodeled;

struct CacheArgs {
  const char* key;
  const char* value;  // nullptr: one source (MLA: kv_c and k_pe are both written to one cache)
  const char* key_cache;
  const char* value_cache;
  const char* slots;
  int k = 0, v = 1, kc = 2, vc = 3, s = 4;
  int scale_k = -1, scale_v = -1;
  const char* scale_k_name = "k_scale";
  const char* scale_v_name = "v_scale";
};

const Tensor* present(const OpArgs& a, const char* name, int position) {
  if (position < 0) return nullptr;
  const Tensor* t = a.tensor(name, static_cast<size_t>(position));
  if (t && t->rank() == 0 && t->dtype.empty()) return nullptr;
  return t;
}

// One stream of new rows written into a cache: read, written at the cache's element size, and
// the quantization's FLOPs when the cache is narrower.
void stream(const Tensor& src, const Tensor& cache, OpCost& c) {
  const double e = static_cast<double>(src.numel());
  c.bytes += tensor_bytes(src) + nbytes(e, cache.dtype);
  const int from = dtype_size(src.dtype), to = dtype_size(cache.dtype);
  if (from > 0 && to > 0 && to < from) c.flops += e * fl(3);
}

bool cache_write(const OpArgs& a, OpCost& c, const CacheArgs& s) {
  const Tensor* k = present(a, s.key, s.k);
  const Tensor* v = present(a, s.value, s.v);
  const Tensor* kc = present(a, s.key_cache, s.kc);
  const Tensor* vc = s.value_cache ? present(a, s.value_cache, s.vc) : kc;
  const Tensor* slots = present(a, s.slots, s.s);
  if (!k || !v || !kc || !vc || !slots) {
    return unmodeled(c, "kv cache write: needs the keys, values, caches and slots");
  }
  c.flops = 0;
  c.bytes = tensor_bytes(*slots);
  stream(*k, *kc, c);
  stream(*v, *vc, c);
  c.bytes +=
      nbytes(present(a, s.scale_k_name, s.scale_k)) + nbytes(present(a, s.scale_v_name, s.scale_v));
  c.dtype = canonical_dtype(k->dtype);
  std::string p = "T=" + std::to_string(slots->numel()) + "," + describe(*k);
  if (kc->dtype != k->dtype && !kc->dtype.empty()) p += ",cache=" + short_dtype(kc->dtype);
  c.params = std::move(p);
  return true;
}

ModelFn cache_model(CacheArgs s) {
  return [s](const OpArgs& a, OpCost& c) { return cache_write(a, c, s); };
}

}  // namespace

void register_kv_cache(Registry& r) {
  const std::string f = "movement";
  // reshape_and_cache(_flash)(Tensor key, Tensor value, Tensor! key_cache, Tensor! value_cache,
  // Tensor slot_mapping, str kv_cache_dtype, Tensor k_scale, Tensor v_scale)
  CacheArgs vllm{"key", "value", "key_cache", "value_cache", "slot_mapping"};
  vllm.scale_k = 6;
  vllm.scale_v = 7;
  r.add("_C_cache_ops::reshape_and_cache", f, cache_model(vllm));
  r.add("_C_cache_ops::reshape_and_cache_flash", f, cache_model(vllm));
  // concat_and_cache_mla(Tensor kv_c, Tensor k_pe, Tensor! kv_cache, Tensor slot_mapping,
  // str kv_cache_dtype, Tensor scale): kv_c and k_pe into one cache's rows.
  CacheArgs mla{"kv_c", "k_pe", "kv_cache", nullptr, "slot_mapping", 0, 1, 2, 2, 3};
  mla.scale_k = 5;
  mla.scale_k_name = "scale";
  r.add("_C_cache_ops::concat_and_cache_mla", f, cache_model(mla));
  // SGLang: store_cache(Tensor k, Tensor v, Tensor! k_cache, Tensor! v_cache, Tensor indices,
  // *, int row_bytes, int num_split, int size_limit); store_cache_quant(k, v, k_cache, v_cache,
  // indices, k_scale?, v_scale?, *, ...): k and v [T, H*D].
  CacheArgs sgl{"k", "v", "k_cache", "v_cache", "indices"};
  r.add("sglang::store_cache", f, cache_model(sgl));
  CacheArgs sgl_quant = sgl;
  sgl_quant.scale_k = 5;
  sgl_quant.scale_v = 6;
  r.add("sglang::store_cache_quant", f, cache_model(sgl_quant));
}

}  // namespace pyprof::models

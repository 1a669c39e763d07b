#include "backend/cpu/blas_onednn.h"

#include <omp.h>

#include <dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <list>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/cpu/gemm_convert.h"
#include "core/parallel.h"

namespace unmask::cpu::onednn {
namespace {

using Dims = dnnl::memory::dims;
using DataType = dnnl::memory::data_type;
using FormatTag = dnnl::memory::format_tag;

dnnl::engine& Engine() {
  // Never destroyed: cached primitives and thread-local streams refer to it until exit.
  static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

dnnl::stream& ThreadStream() {
  thread_local dnnl::stream stream(Engine());
  return stream;
}

Status FromDnnlError(const dnnl::error& e, std::string_view what) {
  std::string msg = "oneDNN " + std::string(what) + ": " + e.what();
  if (e.status == dnnl_out_of_memory) return ResourceExhaustedError(std::move(msg));
  return InternalError(std::move(msg));
}

// The oneDNN types of a compute type: source (activations), weights, destination.
struct Types {
  DataType src, weights, dst;
};
Types TypesOf(ComputeType type) {
  switch (type) {
    case ComputeType::kBf16:
      return {DataType::bf16, DataType::bf16, DataType::f32};
    case ComputeType::kInt8:
      return {DataType::s8, DataType::s8, DataType::s32};
    case ComputeType::kF32:
      break;
  }
  return {DataType::f32, DataType::f32, DataType::f32};
}

// threads: OpenMP threads the primitive was created for (oneDNN fixes its split at creation).
struct CacheKey {
  int64_t m, k, n;
  int threads;
  ComputeType type;
  bool operator==(const CacheKey&) const = default;
};

struct CacheKeyHash {
  size_t operator()(const CacheKey& key) const {
    uint64_t h = static_cast<uint64_t>(key.m) * 0x9E3779B97F4A7C15ull;
    h ^= static_cast<uint64_t>(key.k) + 0x7F4A7C159E3779B9ull + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(key.n) + 0x2545F4914F6CDD1Dull + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(key.threads) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(key.type) + 0x2545F4914F6CDD1Dull + (h << 6) + (h >> 2);
    return static_cast<size_t>(h);
  }
};

// Process-wide LRU cache of matmul primitives keyed by (M, K, N, threads, type); each entry
// remembers the weight layout it was built for.
class PrimitiveCache {
 public:
  static PrimitiveCache& Get() {
    static PrimitiveCache* cache =
        new PrimitiveCache();  // never destroyed: used at exit by threads
    return *cache;
  }

  // Returns the primitive for (key, weights). May throw dnnl::error.
  dnnl::matmul Lookup(const CacheKey& key, const dnnl::memory::desc& weights) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end() && it->second->weights == weights) {
      lru_.splice(lru_.begin(), lru_, it->second);  // most recently used first
      return it->second->primitive;
    }
    dnnl::matmul primitive = Create(key, weights);
    if (it != map_.end()) {  // same shape, another layout (not seen with oneDNN 2.6): replace
      lru_.erase(it->second);
      map_.erase(it);
    }
    lru_.push_front(Entry{key, weights, primitive});
    map_[key] = lru_.begin();
    while (map_.size() > capacity_) {
      map_.erase(lru_.back().key);
      lru_.pop_back();
    }
    return primitive;
  }

  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.size();
  }

  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    map_.clear();
    lru_.clear();
  }

  void SetCapacity(size_t capacity) {
    std::lock_guard<std::mutex> lock(mu_);
    capacity_ = std::max<size_t>(1, capacity);
    while (map_.size() > capacity_) {
      map_.erase(lru_.back().key);
      lru_.pop_back();
    }
  }

 private:
  struct Entry {
    CacheKey key;
    dnnl::memory::desc weights;
    dnnl::matmul primitive;
  };

  static dnnl::matmul Create(const CacheKey& key, const dnnl::memory::desc& weights) {
    const Types t = TypesOf(key.type);
    const dnnl::memory::desc src(Dims{key.m, key.k}, t.src, FormatTag::ab);
    const dnnl::memory::desc dst(Dims{key.m, key.n}, t.dst, FormatTag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, weights, dst), Engine());
    return dnnl::matmul(pd);
  }

  std::mutex mu_;
  size_t capacity_ = PackedWeight::kDefaultCacheCapacity;
  std::list<Entry> lru_;
  std::unordered_map<CacheKey, std::list<Entry>::iterator, CacheKeyHash> map_;
};

}  // namespace

struct PackedWeight::State {
  dnnl::memory::desc desc;       // [k, n] in the blocked layout
  dnnl::memory memory;           // owns the packed data
  std::vector<float> col_scale;  // kInt8: [n], the scale of each output channel (row of W)
};

std::string Version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

std::string EffectiveIsaName() {
  const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  // Bit masks (dnnl_types.h): each ISA includes the bits of those below it.
  struct Named {
    unsigned mask;
    const char* name;
  };
  for (const Named& n :
       {Named{dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"},
        Named{dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
        Named{dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"},
        Named{dnnl_cpu_isa_avx512_core, "avx512_core"}, Named{dnnl_cpu_isa_avx2_vnni, "avx2_vnni"},
        Named{dnnl_cpu_isa_avx2, "avx2"}, Named{dnnl_cpu_isa_avx, "avx"},
        Named{dnnl_cpu_isa_sse41, "sse41"}}) {
    if ((isa & n.mask) == n.mask) return n.name;
  }
  return "baseline";
}

bool HasNativeKernels(ComputeType type) {
  const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  auto has = [isa](unsigned mask) { return (isa & mask) == mask; };
  switch (type) {
    case ComputeType::kF32:
      return true;
    case ComputeType::kBf16:
      return has(dnnl_cpu_isa_avx512_core_bf16);  // AMX's mask includes it
    case ComputeType::kInt8:
      return has(dnnl_cpu_isa_avx512_core_vnni) || has(dnnl_cpu_isa_avx2_vnni);
  }
  return false;
}

bool Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  return dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta,
                    c, ldc) == dnnl_success;
}

PackedWeight::PackedWeight(int64_t n, int64_t k, ComputeType type) : n_(n), k_(k), type_(type) {}
PackedWeight::~PackedWeight() = default;

StatusOr<std::unique_ptr<PackedWeight>> PackedWeight::Pack(const float* w, int64_t n, int64_t k,
                                                           ComputeType type) {
  if (w == nullptr || n < 1 || k < 1) {
    return InvalidArgumentError("oneDNN PackedWeight::Pack: need a [n, k] weight with n, k >= 1");
  }
  try {
    std::unique_ptr<PackedWeight> packed(new PackedWeight(n, k, type));
    auto state = std::make_unique<State>();
    const Types t = TypesOf(type);
    // The weight in the compute type, still [n, k] row-major (W^T [k, n] with strides (1, k):
    // format tag "ba"), for the reorder into the blocked layout.
    std::vector<uint16_t> w_bf16;
    std::vector<int8_t> w_s8;
    const void* plain_data = w;
    if (type == ComputeType::kBf16) {
      w_bf16.resize(static_cast<size_t>(n * k));
      ConvertToBf16(w, n * k, w_bf16.data());
      plain_data = w_bf16.data();
    } else if (type == ComputeType::kInt8) {
      w_s8.resize(static_cast<size_t>(n * k));
      state->col_scale.resize(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) {
        const float d = QuantizeRowS8(w + j * k, k, w_s8.data() + j * k);
        if (std::isnan(d)) {
          return InvalidArgumentError("int8 compute: weight row " + std::to_string(j) +
                                      " holds a NaN or an infinity, which int8 cannot represent");
        }
        state->col_scale[static_cast<size_t>(j)] = d;
      }
      plain_data = w_s8.data();
    }
    // Let a matmul for a representative M choose the weight layout.
    const dnnl::memory::desc src(Dims{kPackM, k}, t.src, FormatTag::ab);
    const dnnl::memory::desc any(Dims{k, n}, t.weights, FormatTag::any);
    const dnnl::memory::desc dst(Dims{kPackM, n}, t.dst, FormatTag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, any, dst), Engine());
    state->desc = pd.weights_desc();
    state->memory = dnnl::memory(state->desc, Engine());
    const dnnl::memory::desc plain(Dims{k, n}, t.weights, FormatTag::ba);
    dnnl::memory src_mem(plain, Engine(), const_cast<void*>(plain_data));
    dnnl::stream& stream = ThreadStream();
    dnnl::reorder(src_mem, state->memory).execute(stream, src_mem, state->memory);
    stream.wait();
    packed->bytes_ = state->desc.get_size() + state->col_scale.size() * sizeof(float);
    packed->state_ = std::move(state);
    return packed;
  } catch (const dnnl::error& e) {
    return FromDnnlError(e, std::string(ComputeTypeName(type)) + " weight packing");
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("out of memory packing a [" + std::to_string(n) + ", " +
                                  std::to_string(k) + "] weight for oneDNN");
  }
}

namespace {

// Elements per chunk of the per-call conversions run with ParallelFor (about 64 K: smaller
// products convert on the calling thread).
constexpr int64_t kConvertGrain = 64 * 1024;

// Per-thread activation buffers of the bf16 and int8 paths (grown, never shrunk).
struct ActivationBuffers {
  std::vector<uint16_t> bf16;
  std::vector<int8_t> s8;
  std::vector<float> row_scale;
};
ActivationBuffers& ThreadBuffers() {
  thread_local ActivationBuffers buffers;
  return buffers;
}

}  // namespace

Status PackedWeight::Run(const float* x, int64_t m, float* y) const {
  if (m < 1) return Status::Ok();
  try {
    const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
    const dnnl::matmul primitive =
        PrimitiveCache::Get().Lookup(CacheKey{m, k_, n_, threads, type_}, state_->desc);
    const Types t = TypesOf(type_);
    const size_t mk = static_cast<size_t>(m * k_);
    void* src_data = const_cast<float*>(x);
    ActivationBuffers& buffers = ThreadBuffers();
    if (type_ == ComputeType::kBf16) {
      if (buffers.bf16.size() < mk) buffers.bf16.resize(mk);
      ConvertToBf16(x, m * k_, buffers.bf16.data());
      src_data = buffers.bf16.data();
    } else if (type_ == ComputeType::kInt8) {
      if (buffers.s8.size() < mk) buffers.s8.resize(mk);
      if (buffers.row_scale.size() < static_cast<size_t>(m)) buffers.row_scale.resize(m);
      float* row_scale = buffers.row_scale.data();
      int8_t* q = buffers.s8.data();
      ParallelFor(m, std::max<int64_t>(1, kConvertGrain / k_), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          row_scale[i] = QuantizeRowS8(x + i * k_, k_, q + i * k_);
      });
      src_data = buffers.s8.data();
    }
    const dnnl::memory::desc src(Dims{m, k_}, t.src, FormatTag::ab);
    // int8: the int32 accumulators go to y's memory (4 bytes each, like the f32 result) and are
    // rescaled there in place.
    const dnnl::memory::desc dst(Dims{m, n_}, t.dst, FormatTag::ab);
    dnnl::memory src_mem(src, Engine(), src_data);
    dnnl::memory dst_mem(dst, Engine(), y);
    dnnl::stream& stream = ThreadStream();
    primitive.execute(
        stream,
        {{DNNL_ARG_SRC, src_mem}, {DNNL_ARG_WEIGHTS, state_->memory}, {DNNL_ARG_DST, dst_mem}});
    stream.wait();
    if (type_ == ComputeType::kInt8) {
      const float* row_scale = buffers.row_scale.data();
      const float* col_scale = state_->col_scale.data();
      ParallelFor(m, std::max<int64_t>(1, kConvertGrain / n_), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          RescaleRowS32(reinterpret_cast<const int32_t*>(y + i * n_), n_, row_scale[i], col_scale,
                        y + i * n_);
        }
      });
    }
    return Status::Ok();
  } catch (const dnnl::error& e) {
    return FromDnnlError(e, std::string(ComputeTypeName(type_)) + " matmul");
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("out of memory in oneDNN matmul");
  }
}

size_t CachedPrimitives() { return PrimitiveCache::Get().size(); }
void ClearPrimitiveCache(bool also_onednn_cache) {
  PrimitiveCache::Get().Clear();
  if (also_onednn_cache) {
    const int capacity = dnnl::get_primitive_cache_capacity();
    dnnl::set_primitive_cache_capacity(0);
    dnnl::set_primitive_cache_capacity(capacity);
  }
}
void SetPrimitiveCacheCapacity(size_t capacity) { PrimitiveCache::Get().SetCapacity(capacity); }

}  // namespace unmask::cpu::onednn

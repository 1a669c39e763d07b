#include "backend/cpu/blas_onednn.h"

#include <omp.h>

#include <dnnl.hpp>

#include <algorithm>
#include <cstdint>
#include <list>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>

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

// threads: OpenMP threads the primitive was created for (oneDNN fixes its split at creation).
struct CacheKey {
  int64_t m, k, n;
  int threads;
  bool operator==(const CacheKey&) const = default;
};

struct CacheKeyHash {
  size_t operator()(const CacheKey& key) const {
    uint64_t h = static_cast<uint64_t>(key.m) * 0x9E3779B97F4A7C15ull;
    h ^= static_cast<uint64_t>(key.k) + 0x7F4A7C159E3779B9ull + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(key.n) + 0x2545F4914F6CDD1Dull + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(key.threads) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return static_cast<size_t>(h);
  }
};

// Process-wide LRU cache of matmul primitives keyed by (M, K, N); each entry remembers the weight
// layout it was built for.
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
    const dnnl::memory::desc src(Dims{key.m, key.k}, DataType::f32, FormatTag::ab);
    const dnnl::memory::desc dst(Dims{key.m, key.n}, DataType::f32, FormatTag::ab);
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
  dnnl::memory::desc desc;  // [k, n] in the blocked layout
  dnnl::memory memory;      // owns the packed data
};

std::string Version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

bool Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  return dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta,
                    c, ldc) == dnnl_success;
}

PackedWeight::PackedWeight(int64_t n, int64_t k) : n_(n), k_(k) {}
PackedWeight::~PackedWeight() = default;

StatusOr<std::unique_ptr<PackedWeight>> PackedWeight::Pack(const float* w, int64_t n, int64_t k) {
  if (w == nullptr || n < 1 || k < 1) {
    return InvalidArgumentError("oneDNN PackedWeight::Pack: need a [n, k] weight with n, k >= 1");
  }
  try {
    std::unique_ptr<PackedWeight> packed(new PackedWeight(n, k));
    // Let a matmul for a representative M choose the weight layout.
    const dnnl::memory::desc src(Dims{kPackM, k}, DataType::f32, FormatTag::ab);
    const dnnl::memory::desc any(Dims{k, n}, DataType::f32, FormatTag::any);
    const dnnl::memory::desc dst(Dims{kPackM, n}, DataType::f32, FormatTag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, any, dst), Engine());
    auto state = std::make_unique<State>();
    state->desc = pd.weights_desc();
    state->memory = dnnl::memory(state->desc, Engine());
    // W [n, k] row-major is W^T [k, n] with strides (1, k): format tag "ba".
    const dnnl::memory::desc plain(Dims{k, n}, DataType::f32, FormatTag::ba);
    dnnl::memory src_mem(plain, Engine(), const_cast<float*>(w));
    dnnl::stream& stream = ThreadStream();
    dnnl::reorder(src_mem, state->memory).execute(stream, src_mem, state->memory);
    stream.wait();
    packed->bytes_ = state->desc.get_size();
    packed->state_ = std::move(state);
    return packed;
  } catch (const dnnl::error& e) {
    return FromDnnlError(e, "weight packing");
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("out of memory packing a [" + std::to_string(n) + ", " +
                                  std::to_string(k) + "] weight for oneDNN");
  }
}

Status PackedWeight::Run(const float* x, int64_t m, float* y) const {
  if (m < 1) return Status::Ok();
  try {
    const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
    const dnnl::matmul primitive =
        PrimitiveCache::Get().Lookup(CacheKey{m, k_, n_, threads}, state_->desc);
    const dnnl::memory::desc src(Dims{m, k_}, DataType::f32, FormatTag::ab);
    const dnnl::memory::desc dst(Dims{m, n_}, DataType::f32, FormatTag::ab);
    dnnl::memory src_mem(src, Engine(), const_cast<float*>(x));
    dnnl::memory dst_mem(dst, Engine(), y);
    dnnl::stream& stream = ThreadStream();
    primitive.execute(
        stream,
        {{DNNL_ARG_SRC, src_mem}, {DNNL_ARG_WEIGHTS, state_->memory}, {DNNL_ARG_DST, dst_mem}});
    stream.wait();
    return Status::Ok();
  } catch (const dnnl::error& e) {
    return FromDnnlError(e, "matmul");
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

#include "backend/cpu/blas_openblas.h"

#include <cblas.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "backend/cpu/cpu_isa.h"

namespace unmask::cpu::openblas {
namespace {

using SgemmFn = decltype(&cblas_sgemm);
using SetNumThreadsFn = decltype(&openblas_set_num_threads);
using GetStringFn = decltype(&openblas_get_config);

struct Library {
  std::string name;
  void* handle = nullptr;
  SgemmFn sgemm = nullptr;
  SetNumThreadsFn set_num_threads = nullptr;
  GetStringFn get_corename = nullptr;
  GetStringFn get_config = nullptr;
  std::string core_type_source;
};

std::mutex& Mutex() {
  static std::mutex mu;
  return mu;
}

// Published (release) under Mutex() once fully initialised; never freed, so readers may keep it.
std::atomic<Library*> g_library{nullptr};
bool g_env_set_by_unmask = false;  // guarded by Mutex()

template <typename Fn>
Status Resolve(void* handle, const char* symbol, const std::string& library, Fn* out) {
  dlerror();
  void* p = dlsym(handle, symbol);
  if (p == nullptr) {
    const char* err = dlerror();
    return FailedPreconditionError("OpenBLAS library '" + library + "' lacks symbol " + symbol +
                                   ": " + (err ? err : "null"));
  }
  *out = reinterpret_cast<Fn>(p);
  return Status::Ok();
}

// Sets OPENBLAS_CORETYPE from CPUID unless the user set it; returns who chose the core type.
// Called under Mutex().
std::string FixCoreType(const std::string& library) {
  if (void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD); h != nullptr) {
    dlclose(h);
    return "library was already loaded";  // its constructor has run; the variable is read there
  }
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  if (env != nullptr && env[0] != '\0') {
    return g_env_set_by_unmask ? "OPENBLAS_CORETYPE set by unmask"
                               : "OPENBLAS_CORETYPE set by the user";
  }
  const std::string_view core = OpenBlasCoreTypeFor(GetCpuFeatures());
  if (core.empty()) return "auto-detected";
  setenv("OPENBLAS_CORETYPE", std::string(core).c_str(), /*overwrite=*/1);
  g_env_set_by_unmask = true;
  return "OPENBLAS_CORETYPE set by unmask";
}

const Library* Get() { return g_library.load(std::memory_order_acquire); }

}  // namespace

Status Load(std::string_view library) {
  std::lock_guard<std::mutex> lock(Mutex());
  const std::string name(library);
  const Library* current = g_library.load(std::memory_order_relaxed);
  if (current != nullptr && current->name == name) return Status::Ok();
  auto lib = std::make_unique<Library>();
  lib->name = name;
  lib->core_type_source = FixCoreType(name);
  dlerror();
  lib->handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib->handle == nullptr) {
    const char* err = dlerror();
    return FailedPreconditionError(
        "cannot load OpenBLAS ('" + name + "'): " + (err ? err : "unknown dlopen error") +
        " (install libopenblas0-pthread or choose another GEMM provider)");
  }
  Status s = Resolve(lib->handle, "cblas_sgemm", name, &lib->sgemm);
  if (s.ok()) s = Resolve(lib->handle, "openblas_set_num_threads", name, &lib->set_num_threads);
  if (s.ok()) s = Resolve(lib->handle, "openblas_get_corename", name, &lib->get_corename);
  if (s.ok()) s = Resolve(lib->handle, "openblas_get_config", name, &lib->get_config);
  if (!s.ok()) return s;  // the handle stays open: unloading a half-used BLAS is not worth the risk
  // The previous Library (if any) is leaked on purpose: concurrent callers may still hold it.
  g_library.store(lib.release(), std::memory_order_release);
  return Status::Ok();
}

bool IsLoaded() { return Get() != nullptr; }

void Sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc) {
  const Library* lib = Get();
  if (lib == nullptr) return;
  lib->sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
             trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void SetNumThreads(int n) {
  const Library* lib = Get();
  if (lib != nullptr) lib->set_num_threads(n);
}

std::string CoreName() {
  const Library* lib = Get();
  if (lib == nullptr) return "";
  const char* s = lib->get_corename();
  return s ? s : "";
}

std::string Config() {
  const Library* lib = Get();
  if (lib == nullptr) return "";
  const char* s = lib->get_config();
  return s ? s : "";
}

std::string Version() {
  const std::string config = Config();
  constexpr std::string_view kPrefix = "OpenBLAS ";
  if (config.rfind(kPrefix, 0) != 0) return "";
  const size_t end = config.find(' ', kPrefix.size());
  return config.substr(kPrefix.size(),
                       end == std::string::npos ? std::string::npos : end - kPrefix.size());
}

std::string CoreTypeSource() {
  const Library* lib = Get();
  return lib ? lib->core_type_source : "";
}

}  // namespace unmask::cpu::openblas

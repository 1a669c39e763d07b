// The backend seam (ARCHITECTURE.md "Main interfaces", STYLE.md §3): the object that owns a
// device's compute settings. A loaded model owns one (LoadOptions::backend, Model::backend());
// tensors say where their memory lives (TensorView::device) and each op's public entry
// (src/ops/<op>.cc) dispatches on that device to the backend's kernels. The CPU backend
// (src/backend/cpu: oneDNN / OpenBLAS / the project's own kernels, ISA dispatch, thread count)
// runs models; the CUDA backend (src/backend/cuda, built with UNMASK_CUDA, cmake/cuda.cmake) has
// its row kernels and cuBLAS products but runs no model yet (docs/engine.md "A backend").
#ifndef UNMASK_BACKEND_BACKEND_H_
#define UNMASK_BACKEND_BACKEND_H_

#include <memory>
#include <string>
#include <string_view>

#include "core/compute.h"
#include "core/device.h"
#include "core/status.h"

namespace unmask {

// What a tool asks for when it creates a backend (the CLI's -t / --blas / --compute flags).
struct BackendOptions {
  std::string device = "cpu";   // DeviceName: "cpu" | "cuda" (in builds with UNMASK_CUDA)
  int num_threads = 0;          // <= 0: all hardware threads
  std::string gemm = "onednn";  // GEMM provider: "onednn" | "openblas" | "reference" (tests)
  // The number type of the packed weights' products (core/compute.h): "auto" | "f32" | "bf16" |
  // "int8". "auto" is f32: the type whose outputs every golden and conformance case pins; bf16
  // and int8 change some greedy tokens (docs/decoding.md "Compute precision" has the measured
  // agreement), so they are opted into.
  std::string compute = "auto";
};

// One device's compute settings. Shared by the models loaded with it (std::shared_ptr); its
// const methods are safe to call from any thread.
//
// The CPU backend: its settings (the OpenMP, oneDNN and OpenBLAS thread counts and the GEMM
// provider) live in process-wide libraries, not in the object. Creating a CPU backend applies its
// options process-wide, so creating a second one with other options re-applies them for the
// whole process, including the models loaded with the first: the options of the CPU backend
// created last are in effect. Describe(), num_threads() and MeasureGemmPeakGflops() report and
// use the settings in effect; options() returns what this backend was created with. Weights
// packed at load time keep the GEMM provider that was in effect then (backend/cpu/packed_gemm.h).
class Backend {
 public:
  virtual ~Backend() = default;

  virtual Device device() const = 0;
  // The options it was created with.
  virtual const BackendOptions& options() const = 0;
  // One line for reports, e.g. "onednn 2.6.3 (avx512_core_amx), 2 threads, avx512, bf16 compute" or
  // "openblas 0.3.21 (core Haswell, OPENBLAS_CORETYPE set by unmask), 2 threads, avx2".
  virtual std::string Describe() const = 0;
  // Threads the backend's loops and libraries use (>= 1).
  virtual int num_threads() const = 0;
  // The compute type models loaded onto this backend pack their weights in: options().compute
  // resolved ("auto" -> f32), or f32 where the device cannot run the requested type fast (then
  // compute_note() says why).
  virtual ComputeType compute() const = 0;
  // Empty, or one sentence on how compute() differs from the request, e.g. "bf16 compute: this
  // CPU (oneDNN ISA avx2) has no bf16 matrix instructions (AVX512-BF16 or AMX); using f32".
  virtual std::string compute_note() const = 0;
  // True when the device multiplies `type` in hardware with this backend's GEMM provider (f32:
  // always; CPU bf16: AVX512-BF16 or AMX-BF16, int8: VNNI or AMX-INT8, both through oneDNN).
  virtual bool HasNativeCompute(ComputeType type) const = 0;
  // The GEMM peak this backend reaches now in `type`: y[512, 2048] = x[512, 768] W^T with W
  // prepacked (as the models' kPacked weights are), best of `reps` (>= 1) timed runs after a
  // warm-up, in GFLOP/s (GOP/s for int8; the roofline's compute axis; about 1.6 GFLOP per run).
  // Errors: InvalidArgument for reps < 1; FailedPrecondition for bf16 / int8 on a GEMM provider
  // without them; those of the GEMM library.
  virtual StatusOr<double> MeasureGemmPeakGflops(int reps,
                                                 ComputeType type = ComputeType::kF32) const = 0;
};

// Creates and applies a backend. Errors: InvalidArgument for an unknown device name, GEMM
// provider name or compute type (the message lists the known ones), or for bf16 / int8 compute
// with a GEMM provider other than oneDNN; for "cuda": Unimplemented in a build without the CUDA
// backend, FailedPrecondition when no CUDA device is visible (cuda/cuda_backend.h);
// FailedPrecondition when the provider's library cannot be loaded (e.g. libopenblas.so.0
// missing; the message has the dlopen error). On error no setting changes.
StatusOr<std::shared_ptr<Backend>> CreateBackend(const BackendOptions& options);

// The backend of callers that pass none (LoadOptions::backend == nullptr): a CPU backend with
// default options, created once at the first call (thread-safe) and then always the same object.
// Creating it changes no process-wide setting: before any CreateBackend the defaults are in
// effect already (oneDNN; OpenMP's thread count, i.e. $OMP_NUM_THREADS or all hardware
// threads), and after one, that backend's settings stay in effect.
std::shared_ptr<Backend> DefaultBackend();

}  // namespace unmask

#endif  // UNMASK_BACKEND_BACKEND_H_

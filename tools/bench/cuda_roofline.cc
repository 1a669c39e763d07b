// unmask_cuda_roofline: the roofline of the GPU at hand, measured first by scripts/device-check.sh
// (issue 23): cuBLAS GEMM rates (bf16 and f32, square products) and the device-to-device copy
// rate, each the best of several timed runs after a warm-up (CUDA events), with the card's name.
// Prints a markdown table (stdout); --json FILE also writes the numbers. Exit status 1 with the
// reason when there is no CUDA device.
//
//   build/cuda/bin/unmask_cuda_roofline [--reps N] [--json FILE]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cuda/cublas_gemm.h"
#include "backend/cuda/cuda_runtime.h"

namespace {

int Run(int reps, const char* json_path) {
  using namespace unmask;
  std::string why;
  if (cuda::DeviceCount(&why) == 0) {
    std::fprintf(stderr, "unmask_cuda_roofline: no CUDA device (%s)\n", why.c_str());
    return 1;
  }
  auto info = cuda::GetDeviceInfo(0);
  auto gemm = cuda::CublasGemm::Create();
  if (!info.ok() || !gemm.ok()) {
    std::fprintf(stderr, "unmask_cuda_roofline: %s\n",
                 (!info.ok() ? info.status() : gemm.status()).ToString().c_str());
    return 1;
  }
  std::printf("device: %s (sm_%d%d, %d SMs, %.1f GiB), %s\n\n", info->name.c_str(), info->major,
              info->minor, info->multiprocessors,
              static_cast<double>(info->memory_bytes) / (1 << 30), (*gemm)->Version().c_str());
  std::printf("| measurement | size | rate |\n|---|---:|---:|\n");
  std::string json = "{\"device\": \"" + info->name + "\", \"gemm\": [";
  bool first = true;
  struct Case {
    ComputeType type;
    int64_t size;
  };
  const std::vector<Case> cases = {{ComputeType::kBf16, 2048},
                                   {ComputeType::kBf16, 4096},
                                   {ComputeType::kBf16, 8192},
                                   {ComputeType::kF32, 4096},
                                   {ComputeType::kF32, 8192}};
  for (const Case& c : cases) {
    auto g = (*gemm)->MeasureGflops(c.type, c.size, reps);
    if (!g.ok()) {
      std::fprintf(stderr, "unmask_cuda_roofline: %s\n", g.status().ToString().c_str());
      return 1;
    }
    std::printf("| GEMM %s (cuBLAS) | %lld^3 | %.1f TFLOP/s |\n",
                std::string(ComputeTypeName(c.type)).c_str(), static_cast<long long>(c.size),
                *g / 1000.0);
    json += std::string(first ? "" : ", ") + "{\"type\": \"" +
            std::string(ComputeTypeName(c.type)) + "\", \"size\": " + std::to_string(c.size) +
            ", \"gflops\": " + std::to_string(*g) + "}";
    first = false;
  }
  json += "], \"copy\": [";
  first = true;
  for (int64_t mib : {256, 1024, 4096}) {
    auto gbps = cuda::MeasureCopyGbps(mib << 20, reps);
    if (!gbps.ok()) {
      std::fprintf(stderr, "unmask_cuda_roofline: %s\n", gbps.status().ToString().c_str());
      return 1;
    }
    std::printf("| copy device to device (read + write) | %lld MiB | %.0f GB/s |\n",
                static_cast<long long>(mib), *gbps);
    json += std::string(first ? "" : ", ") + "{\"mib\": " + std::to_string(mib) +
            ", \"gbps\": " + std::to_string(*gbps) + "}";
    first = false;
  }
  json += "]}\n";
  if (json_path != nullptr) {
    FILE* f = std::fopen(json_path, "w");
    if (f == nullptr || std::fputs(json.c_str(), f) < 0 || std::fclose(f) != 0) {
      std::fprintf(stderr, "unmask_cuda_roofline: cannot write %s\n", json_path);
      return 1;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 10;
  const char* json = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: unmask_cuda_roofline [--reps N] [--json FILE]\n"
                   "  cuBLAS GEMM (bf16, f32) and device copy rates of CUDA device 0\n");
      return 2;
    }
  }
  if (reps < 1) {
    std::fprintf(stderr, "unmask_cuda_roofline: --reps must be >= 1\n");
    return 2;
  }
  return Run(reps, json);
}

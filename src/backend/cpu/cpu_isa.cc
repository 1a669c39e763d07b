#include "backend/cpu/cpu_isa.h"

#include <cpuid.h>

namespace unmask::cpu {
namespace {

// CPUID leaf 1, ECX bit 29 (Intel SDM vol. 2A, CPUID). Read directly: clang 16's
// __builtin_cpu_supports does not know "f16c".
bool HasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 29)) != 0;
}

CpuFeatures Detect() {
  __builtin_cpu_init();
  CpuFeatures f;
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.f16c = HasF16c();
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  return f;
}

bool HasAvx512(const CpuFeatures& f) { return f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl; }
bool HasAvx2(const CpuFeatures& f) { return f.avx2 && f.fma; }

}  // namespace

const CpuFeatures& GetCpuFeatures() {
  static const CpuFeatures features = Detect();
  return features;
}

std::string_view CpuIsaName(const CpuFeatures& features) {
  if (HasAvx512(features)) return "avx512";
  if (HasAvx2(features)) return "avx2";
  return "baseline";
}

std::string_view OpenBlasCoreTypeFor(const CpuFeatures& features) {
  if (HasAvx512(features)) return "SkylakeX";
  if (HasAvx2(features)) return "Haswell";
  return "";
}

}  // namespace unmask::cpu

#include "backend/cpu/cpu_isa.h"

namespace unmask::cpu {
namespace {

CpuFeatures Detect() {
  __builtin_cpu_init();
  CpuFeatures f;
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.f16c = __builtin_cpu_supports("f16c");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
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

// CPU feature detection (CPUID through __builtin_cpu_supports) for ISA reporting and for choosing
// OpenBLAS's core type before the library loads.
#ifndef UNMASK_BACKEND_CPU_CPU_ISA_H_
#define UNMASK_BACKEND_CPU_CPU_ISA_H_

#include <string_view>

namespace unmask::cpu {

// Features of the CPU this process runs on (not the ones the binary was compiled for).
struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512dq = false;
  bool avx512vl = false;
  bool avx512bf16 = false;
  bool avx512vnni = false;  // AVX512_VNNI (vpdpbusd / vpdpwssd on zmm; on ymm with AVX512VL)
};

// Detected once (thread-safe static initialisation).
const CpuFeatures& GetCpuFeatures();

// "avx512" (F+BW+DQ+VL), "avx2" (AVX2+FMA) or "baseline".
std::string_view CpuIsaName(const CpuFeatures& features);

// The OPENBLAS_CORETYPE value whose kernels this CPU can run at full width: "SkylakeX" with
// AVX-512 F/BW/DQ/VL (the SkylakeX sgemm kernel needs them), "Haswell" with AVX2+FMA, and ""
// (leave OpenBLAS to detect) otherwise.
std::string_view OpenBlasCoreTypeFor(const CpuFeatures& features);

}  // namespace unmask::cpu

#endif  // UNMASK_BACKEND_CPU_CPU_ISA_H_

// Ops-internal: <immintrin.h> without GCC 12's false warnings inside the AVX-512 intrinsics that
// use _mm512_undefined_*() (-Wmaybe-uninitialized, -Wuninitialized: GCC bug 105593, fixed in GCC
// 13). Only the include: safe in the files compiled with wider ISA flags, which must include no
// project header with inline code.
#ifndef UNMASK_OPS_IMMINTRIN_QUIET_H_
#define UNMASK_OPS_IMMINTRIN_QUIET_H_

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

#endif  // UNMASK_OPS_IMMINTRIN_QUIET_H_

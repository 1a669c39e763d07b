// The GCC 12 wrong-code bug of cmake/cpu_flags.cmake, as a table of small programs: constants of
// 16, 32 and 64 bytes whose first half (or first element) repeats and whose rest differs, built
// the ways product code builds them (std::vector and std::array initializers, structs, local
// tables), each returned from a noinline function so that the constant is really materialised.
// Included by compiler_test.cc (the project's flags) and compiler_avx512_test.cc (the flags for
// run-time-dispatched AVX-512 code); a wrong build shows a broadcast first element.
#ifndef UNMASK_TESTS_CORE_COMPILER_PATTERNS_H_
#define UNMASK_TESTS_CORE_COMPILER_PATTERNS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace unmask::compiler_patterns {

#define UNMASK_NOINLINE __attribute__((noinline))

UNMASK_NOINLINE inline std::vector<int64_t> VecI64() { return {1, 1, 0, 0}; }  // the case
UNMASK_NOINLINE inline std::vector<int64_t> VecI64Wide() { return {5, 5, 5, 5, 5, 5, 5, 2}; }
UNMASK_NOINLINE inline std::vector<int32_t> VecI32() { return {7, 7, 7, 7, 7, 7, 7, 0}; }
UNMASK_NOINLINE inline std::vector<int32_t> VecI32Half() { return {3, 3, 3, 3, 9, 9, 9, 9}; }
UNMASK_NOINLINE inline std::vector<int16_t> VecI16() {
  return {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1};
}
UNMASK_NOINLINE inline std::vector<int8_t> VecI8() {
  return {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
          2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0};
}
UNMASK_NOINLINE inline std::vector<float> VecF32() { return {2.0f, 2.0f, 2.0f, 1.0f}; }
UNMASK_NOINLINE inline std::vector<float> VecF32Wide() {
  return {1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0, 0, 0, 0};
}
UNMASK_NOINLINE inline std::vector<double> VecF64() { return {1.0, 1.0, 0.0, 0.0}; }
UNMASK_NOINLINE inline std::array<int64_t, 8> ArrI64() { return {9, 9, 9, 9, 1, 2, 3, 4}; }
UNMASK_NOINLINE inline std::vector<int64_t> Schedule() {
  return {2, 2, 1, 1};  // NumTransferTokens(6, 4): the schedule test that failed
}

struct Row {
  int64_t a, b, c, d;
};
UNMASK_NOINLINE inline std::vector<Row> Rows() { return {{1, 1, 0, 0}, {1, 1, 1, 0}}; }

// Every element of got equals want.
template <typename A, typename B>
bool Same(const A& got, const B& want) {
  if (got.size() != want.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) return false;
  }
  return true;
}

// Names of the patterns that came out wrong (empty: the build is right).
inline std::vector<const char*> WrongPatterns() {
  std::vector<const char*> wrong;
  auto check = [&](bool ok, const char* name) {
    if (!ok) wrong.push_back(name);
  };
  const std::vector<int64_t> direct = std::vector<int64_t>{1, 1, 0, 0};
  check(direct[2] == 0 && direct[3] == 0, "inline vector<int64_t>{1,1,0,0}");
  const int64_t i64[] = {1, 1, 0, 0};
  check(Same(VecI64(), std::vector<int64_t>(i64, i64 + 4)), "vector<int64_t>{1,1,0,0}");
  const int64_t i64w[] = {5, 5, 5, 5, 5, 5, 5, 2};
  check(Same(VecI64Wide(), std::vector<int64_t>(i64w, i64w + 8)), "vector<int64_t> x8");
  const int32_t i32[] = {7, 7, 7, 7, 7, 7, 7, 0};
  check(Same(VecI32(), std::vector<int32_t>(i32, i32 + 8)), "vector<int32_t> x8");
  const int32_t i32h[] = {3, 3, 3, 3, 9, 9, 9, 9};
  check(Same(VecI32Half(), std::vector<int32_t>(i32h, i32h + 8)), "vector<int32_t> halves");
  const std::vector<int16_t> i16 = VecI16();
  check(i16.size() == 16 && i16[0] == 4 && i16[14] == 4 && i16[15] == 1, "vector<int16_t> x16");
  const std::vector<int8_t> i8 = VecI8();
  check(i8.size() == 32 && i8[30] == 2 && i8[31] == 0, "vector<int8_t> x32");
  const std::vector<float> f = VecF32();
  check(f.size() == 4 && f[2] == 2.0f && f[3] == 1.0f, "vector<float> x4");
  const std::vector<float> fw = VecF32Wide();
  check(fw.size() == 16 && fw[7] == 1.5f && fw[8] == 0.5f && fw[15] == 0.0f, "vector<float> x16");
  const std::vector<double> d = VecF64();
  check(d.size() == 4 && d[1] == 1.0 && d[2] == 0.0 && d[3] == 0.0, "vector<double> x4");
  const std::array<int64_t, 8> a = ArrI64();
  check(a[3] == 9 && a[4] == 1 && a[7] == 4, "array<int64_t, 8>");
  const std::vector<int64_t> s = Schedule();
  check(s.size() == 4 && s[1] == 2 && s[2] == 1 && s[3] == 1, "schedule {2,2,1,1}");
  const std::vector<Row> r = Rows();
  check(r.size() == 2 && r[0].c == 0 && r[0].d == 0 && r[1].c == 1 && r[1].d == 0,
        "vector<struct of 4 int64_t>");
  return wrong;
}

#undef UNMASK_NOINLINE

}  // namespace unmask::compiler_patterns

#endif  // UNMASK_TESTS_CORE_COMPILER_PATTERNS_H_

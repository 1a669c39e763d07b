// The hardware table: the repository's data/hardware.json parses, holds the five machines with the
// figures of SERVING.md §4 and a source for every number; malformed tables are errors that name
// the entry and field.
#include "plan/hardware.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "test_util.h"

namespace unmask::plan {
namespace {

std::string RepoTable() {
  std::ifstream in(testing::SourceDir() + "/data/hardware.json");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

constexpr const char* kEntry = R"({"id": "x", "name": "X", "kind": "gpu",
  "peak_tflops": {"bf16": 100}, "memory_bandwidth_gbs": 1000, "memory_gb": 10,
  "price_per_hour": {"low": 1, "typical": 2, "high": 3},
  "efficiency": {"compute": 0.5, "bandwidth": 0.8}, "sources": {"peak_tflops": ["u"]}})";

std::string Table(const std::string& entry) {
  return R"({"schema": "unmask-hardware/1", "hardware": [)" + entry + "]}";
}

std::string With(const std::string& from, const std::string& to) {
  std::string e = kEntry;
  const size_t at = e.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return e.replace(at, from.size(), to);
}

TEST(HardwareTest, RepositoryTableHasTheFiveMachinesWithSources) {
  auto table = ParseHardwareTable(RepoTable(), "data/hardware.json");
  ASSERT_TRUE(table.ok()) << table.status().message();
  for (const char* id : {"h100-sxm", "h200", "a100", "l4", "cpu"}) {
    auto h = FindHardware(*table, id);
    ASSERT_TRUE(h.ok()) << id;
    EXPECT_TRUE(h->peak_tflops.count("bf16")) << id;
    for (const char* field : {"peak_tflops", "memory_bandwidth_gbs", "price_per_hour"}) {
      EXPECT_FALSE(h->sources[field].empty()) << id << " " << field;
    }
  }
  // SERVING.md §4.1: dense BF16 989.4 TFLOP/s; 3.35 and 4.8 TB/s.
  const Hardware h100 = FindHardware(*table, "h100-sxm").value();
  const Hardware h200 = FindHardware(*table, "h200").value();
  EXPECT_DOUBLE_EQ(h100.peak_tflops.at("bf16"), 989.4);
  EXPECT_DOUBLE_EQ(h100.memory_bandwidth_gbs, 3350);
  EXPECT_DOUBLE_EQ(h200.memory_bandwidth_gbs, 4800);
  EXPECT_DOUBLE_EQ(h100.price.high, 6.88);  // AWS p5 per GPU (SERVING.md §4.2)
  EXPECT_DOUBLE_EQ(h200.price.typical, 4.59);
  EXPECT_EQ(FindHardware(*table, "tpu").status().code(), StatusCode::kNotFound);
  EXPECT_NE(FindHardware(*table, "tpu").status().message().find("h200"), std::string::npos);
}

TEST(HardwareTest, RatesApplyTheEfficiencies) {
  auto h = ParseHardwareTable(Table(kEntry), "t")->front();
  const MachineRates r = RatesFor(h, "bf16", 0.01).value();
  EXPECT_DOUBLE_EQ(r.flops_per_second, 50e12);
  EXPECT_DOUBLE_EQ(r.bytes_per_second, 800e9);
  EXPECT_DOUBLE_EQ(r.ridge(), 62.5);
  EXPECT_DOUBLE_EQ(r.weight_bytes_per_parameter, 2);
  EXPECT_DOUBLE_EQ(r.overhead_ms, 0.01);
  EXPECT_DOUBLE_EQ(r.memory_bytes, 10e9);
  const Status fp8 = RatesFor(h, "fp8", 0).status();
  EXPECT_EQ(fp8.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(fp8.message().find("it has: bf16"), std::string::npos) << fp8.message();
  EXPECT_FALSE(RatesFor(h, "int3", 0).ok());
}

TEST(HardwareTest, MalformedTablesNameTheEntryAndField) {
  struct Case {
    std::string text;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"{not json", "not valid JSON"},
      {R"({"hardware": []})", "schema"},
      {R"({"schema": "unmask-hardware/2", "hardware": []})", "unmask-hardware/1"},
      {R"({"schema": "unmask-hardware/1", "machines": []})", "'hardware' list"},
      {R"({"schema": "unmask-hardware/1", "hardware": []})", "empty"},
      {Table(With(R"("id": "x")", R"("id": "../x")")), "may hold only"},
      {Table(With(R"("id": "x")", R"("id": "a,b")")), "may hold only"},
      {Table("3"), "must be an object"},
      {Table(With(R"("memory_gb": 10)", R"("memory_gb": -1)")), "('x'): 'memory_gb' must be > 0"},
      {Table(With(R"("memory_gb": 10)", R"("memory_gb": "ten")")), "'memory_gb' must be a number"},
      {Table(With(R"("kind": "gpu")", R"("kind": "fpga")")), "'kind'"},
      {Table(With(R"("peak_tflops": {"bf16": 100})", R"("peak_tflops": {})")), "peak_tflops"},
      {Table(With(R"("compute": 0.5)", R"("compute": 1.5)")), "fractions"},
      {Table(With(R"("low": 1)", R"("low": 5)")), "low <= typical <= high"},
      {Table(With(R"("sources": {"peak_tflops": ["u"]})", R"("sources": {"peak_tflops": "u"})")),
       "must be a list"},
      {Table(With(R"("id": "x", )", "")), "'id'"},
      {Table(std::string(kEntry) + "," + kEntry), "duplicate id 'x'"},
  };
  for (const Case& c : cases) {
    const auto t = ParseHardwareTable(c.text, "table.json");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(c.expect), std::string::npos)
        << t.status().message() << " / expected: " << c.expect;
    EXPECT_EQ(t.status().message().rfind("table.json", 0), 0u) << t.status().message();
  }
}

}  // namespace
}  // namespace unmask::plan

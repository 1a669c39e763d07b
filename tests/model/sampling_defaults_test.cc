// A model file's recommended sampling (model/sampling_defaults.h): llama.cpp's general.sampling.*
// keys read with their ranges, and generation_config.json written as those keys.
#include "model/sampling_defaults.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace unmask {
namespace {

StatusOr<SamplingDefaults> FromKeys(std::vector<gguf::MetadataEntry> md) {
  UNMASK_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::FromParts("mem.gguf", std::move(md), {}, {}));
  return ReadSamplingDefaults(*file);
}

TEST(SamplingDefaultsTest, ReadsLlamaCppKeys) {
  auto d = FromKeys({{"general.sampling.temp", gguf::Value::F32(0.6f)},
                     {"general.sampling.top_k", gguf::Value::I32(20)},
                     {"general.sampling.top_p", gguf::Value::F32(0.95f)},
                     {"general.sampling.min_p", gguf::Value::F32(0.0f)},
                     {"general.sampling.penalty_repeat", gguf::Value::F32(1.05f)},
                     {"general.sampling.penalty_last_n", gguf::Value::I32(-1)}});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_NEAR(*d->temperature, 0.6, 1e-6);
  EXPECT_EQ(*d->top_k, 20);
  EXPECT_NEAR(*d->top_p, 0.95, 1e-6);
  EXPECT_EQ(*d->min_p, 0.0);  // a declared zero is a choice, kept
  EXPECT_NEAR(*d->repeat_penalty, 1.05, 1e-6);
  EXPECT_EQ(*d->repeat_last_n, -1);
  auto none = FromKeys({{"general.name", gguf::Value::String("x")}});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(SamplingDefaultsTest, BadValuesNameTheKey) {
  for (auto [key, value] : std::vector<std::pair<std::string, gguf::Value>>{
           {"general.sampling.temp", gguf::Value::F32(-1)},
           {"general.sampling.top_p", gguf::Value::F32(0)},
           {"general.sampling.top_p", gguf::Value::F32(1.5f)},
           {"general.sampling.min_p", gguf::Value::F32(2)},
           {"general.sampling.top_k", gguf::Value::I32(-3)},
           {"general.sampling.penalty_repeat", gguf::Value::F32(0)},
           {"general.sampling.penalty_last_n", gguf::Value::I32(-2)},
           {"general.sampling.temp", gguf::Value::String("hot")}}) {
    auto d = FromKeys({{key, value}});
    ASSERT_FALSE(d.ok()) << key;
    EXPECT_NE(d.status().message().find(key), std::string::npos) << d.status().message();
  }
}

std::string WriteConfig(const std::string& json) {
  const std::string dir = testing::TempDir() + "/gencfg." + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/generation_config.json") << json;
  return dir;
}

TEST(SamplingDefaultsTest, GenerationConfigBecomesTheKeys) {
  std::vector<gguf::MetadataEntry> md;
  const std::string dir = WriteConfig(
      R"({"do_sample": true, "temperature": 0.7, "top_p": 0.8, "top_k": 20,
          "repetition_penalty": 1.05, "eos_token_id": [1, 2]})");
  ASSERT_TRUE(AppendGenerationConfigSampling(dir, &md).ok());
  auto file = gguf::GgufFile::FromParts("mem", md, {}, {});
  ASSERT_TRUE(file.ok());
  auto d = ReadSamplingDefaults(**file);
  ASSERT_TRUE(d.ok());
  EXPECT_NEAR(*d->temperature, 0.7, 1e-6);
  EXPECT_NEAR(*d->top_p, 0.8, 1e-6);
  EXPECT_EQ(*d->top_k, 20);
  EXPECT_NEAR(*d->repeat_penalty, 1.05, 1e-6);
  EXPECT_FALSE(d->min_p);
  // do_sample false is transformers' greedy decoding, whatever the temperature says.
  md.clear();
  ASSERT_TRUE(AppendGenerationConfigSampling(WriteConfig(R"({"do_sample": false,
      "temperature": 0.9})"),
                                             &md)
                  .ok());
  ASSERT_EQ(md.size(), 1u);
  EXPECT_EQ(md[0].key, "general.sampling.temp");
  // No file, no keys; a wrong type names the file and the key.
  md.clear();
  ASSERT_TRUE(AppendGenerationConfigSampling(testing::TempDir() + "/no-such-dir", &md).ok());
  EXPECT_TRUE(md.empty());
  const Status bad = AppendGenerationConfigSampling(WriteConfig(R"({"top_k": "forty"})"), &md);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("generation_config.json: top_k"), std::string::npos)
      << bad.message();
  // A number beyond float32 (the GGUF key's type) is refused, not converted.
  const Status huge = AppendGenerationConfigSampling(WriteConfig(R"({"temperature": 1e300})"), &md);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.message().find("temperature must be a number within float32's range"),
            std::string::npos)
      << huge.message();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace unmask

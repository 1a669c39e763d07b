// safetensors reader on arbitrary bytes: the 8-byte header length, the JSON header (dtypes,
// shapes, data offsets, __metadata__) and the checks of offsets against the data buffer.
// Seeds: the safetensors files of tests/data/hf (cut by the script to their header and a little
// data, see scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "format/safetensors.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace unmask;
  auto file =
      safetensors::SafetensorsFile::FromBytes(std::vector<uint8_t>(data, data + size), "fuzz");
  if (!file.ok()) {
    if (file.status().message().empty()) fuzz::Fail("an error without a message");
    return 0;
  }
  uint64_t previous_end = 0;
  for (const safetensors::TensorInfo& t : (*file)->tensors()) {
    if (t.end < t.begin || t.end > size) fuzz::Fail("tensor " + t.name + " has bad offsets");
    if (t.begin < previous_end) fuzz::Fail("tensor " + t.name + " overlaps the previous one");
    previous_end = t.end;
    if ((*file)->Find(t.name) == nullptr) fuzz::Fail("Find misses tensor " + t.name);
    if (auto bytes = safetensors::ElementBytes(t.dtype_name)) {
      if (static_cast<uint64_t>(t.num_elements) * static_cast<uint64_t>(*bytes) != t.num_bytes()) {
        fuzz::Fail("tensor " + t.name + ": bytes disagree with shape and dtype");
      }
    }
    // Touch the first and last byte (ASan: inside the buffer).
    if (t.num_bytes() > 0) {
      volatile uint8_t first = t.data[0];
      volatile uint8_t last = t.data[t.num_bytes() - 1];
      (void)first;
      (void)last;
    }
  }
  return 0;
}

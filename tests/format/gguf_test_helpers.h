// Test helpers for the GGUF tests: a little-endian byte builder that writes GGUF fields by hand,
// independently of GgufWriter, so tests can place malformed values at known offsets.
#ifndef UNMASK_TESTS_FORMAT_GGUF_TEST_HELPERS_H_
#define UNMASK_TESTS_FORMAT_GGUF_TEST_HELPERS_H_

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace unmask::gguf::testing {

class ByteBuilder {
 public:
  size_t size() const { return bytes_.size(); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

  template <typename T>
  ByteBuilder& Pod(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
    return *this;
  }
  ByteBuilder& U8(uint8_t v) { return Pod(v); }
  ByteBuilder& U32(uint32_t v) { return Pod(v); }
  ByteBuilder& U64(uint64_t v) { return Pod(v); }
  ByteBuilder& I32(int32_t v) { return Pod(v); }
  ByteBuilder& F32(float v) { return Pod(v); }
  // GGUF string: u64 length + bytes.
  ByteBuilder& Str(std::string_view s) {
    U64(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  ByteBuilder& Raw(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + n);
    return *this;
  }
  // Zero bytes up to the next multiple of `alignment`.
  ByteBuilder& Pad(size_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(0);
    return *this;
  }
  ByteBuilder& Header(uint32_t version, uint64_t num_tensors, uint64_t num_kv) {
    Raw("GGUF", 4);
    U32(version);
    U64(num_tensors);
    return U64(num_kv);
  }
  // Tensor info: name, n_dims, dims, type id, offset.
  ByteBuilder& TensorInfo(std::string_view name, const std::vector<uint64_t>& dims,
                          uint32_t type_id, uint64_t offset) {
    Str(name);
    U32(static_cast<uint32_t>(dims.size()));
    for (const uint64_t d : dims) U64(d);
    U32(type_id);
    return U64(offset);
  }

 private:
  std::vector<uint8_t> bytes_;
};

template <typename T>
void Patch(std::vector<uint8_t>& bytes, size_t at, T v) {
  std::memcpy(bytes.data() + at, &v, sizeof(T));
}

}  // namespace unmask::gguf::testing

#endif  // UNMASK_TESTS_FORMAT_GGUF_TEST_HELPERS_H_

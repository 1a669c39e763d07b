#include "core/tensor.h"

#include <cassert>
#include <cstdlib>
#include <cstring>
#include <new>

namespace unmask {

Shape::Shape(std::initializer_list<int64_t> dims) {
  assert(dims.size() <= static_cast<size_t>(kMaxRank));
  for (int64_t d : dims) dims_[static_cast<size_t>(rank_++)] = d;
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[static_cast<size_t>(i)];
  return n;
}

bool Shape::operator==(const Shape& other) const {
  if (rank_ != other.rank_) return false;
  for (int i = 0; i < rank_; ++i) {
    if (dim(i) != other.dim(i)) return false;
  }
  return true;
}

std::string Shape::ToString() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ", ";
    s += std::to_string(dim(i));
  }
  return s + "]";
}

int64_t TensorView::rows() const {
  int64_t r = 1;
  for (int i = 0; i + 1 < shape.rank(); ++i) r *= shape[i];
  return r;
}

void AlignedDeleter::operator()(void* p) const { std::free(p); }

std::unique_ptr<void, AlignedDeleter> AllocateAligned(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  return std::unique_ptr<void, AlignedDeleter>(p);
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(shape) {
  const auto row = RowBytes(dtype, shape.rank() == 0 ? 1 : shape[shape.rank() - 1]);
  assert(row.has_value());
  int64_t rows = 1;
  for (int i = 0; i + 1 < shape.rank(); ++i) rows *= shape[i];
  bytes_ = row.value_or(0) * static_cast<size_t>(rows);
  data_ = AllocateAligned(bytes_);
}

Tensor Tensor::Copy() const {
  Tensor t(dtype_, shape_);
  t.device_ = device_;
  if (bytes_) std::memcpy(t.data_.get(), data_.get(), bytes_);
  return t;
}

}  // namespace unmask

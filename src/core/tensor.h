// Tensor views (non-owning) and owning tensors. Row-major, dims outer -> inner (NumPy order),
// contiguous. Shapes are written in comments as [dim0, dim1, ...]. Each knows the device its
// memory lives on (core/device.h); the ops dispatch on it (src/ops/<op>.cc).
#ifndef UNMASK_CORE_TENSOR_H_
#define UNMASK_CORE_TENSOR_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "core/device.h"
#include "core/dtype.h"

namespace unmask {

inline constexpr int kMaxRank = 4;

// Up to kMaxRank dims, outer -> inner.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);

  int rank() const { return rank_; }
  int64_t dim(int i) const { return dims_[static_cast<size_t>(i)]; }
  int64_t operator[](int i) const { return dim(i); }
  // Product of all dims (1 for rank 0).
  int64_t num_elements() const;
  bool operator==(const Shape& other) const;
  // "[2, 3, 4]"
  std::string ToString() const;

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// Non-owning view of contiguous row-major data.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kF32;
  Shape shape;
  Device device = Device::kCpu;  // where `data` lives; CPU code may dereference it only for kCpu

  int64_t num_elements() const { return shape.num_elements(); }
  // Rows = product of all dims but the last; cols = last dim. For rank 0 both are 1.
  int64_t rows() const;
  int64_t cols() const { return shape.rank() == 0 ? 1 : shape[shape.rank() - 1]; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

// Frees with std::free (memory from std::aligned_alloc).
struct AlignedDeleter {
  void operator()(void* p) const;
};

// 64-byte aligned, zero-initialised bytes; nullptr when bytes == 0.
// Throws std::bad_alloc when out of memory (allocation happens in Reserve/load paths only).
std::unique_ptr<void, AlignedDeleter> AllocateAligned(size_t bytes);

// Owning tensor: move-only (copy the data explicitly with Copy()). Allocates host memory, so its
// device is kCpu (a backend with memory of its own will add an allocating constructor).
class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape);  // zero-initialised
  Tensor(Tensor&&) = default;
  Tensor& operator=(Tensor&&) = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  // A deep copy on the same device.
  Tensor Copy() const;
  TensorView view() const { return TensorView{data_.get(), dtype_, shape_, device_}; }
  void* data() const { return data_.get(); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_.get());
  }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  Device device() const { return device_; }
  size_t bytes() const { return bytes_; }

 private:
  std::unique_ptr<void, AlignedDeleter> data_;
  DType dtype_ = DType::kF32;
  Shape shape_;
  Device device_ = Device::kCpu;
  size_t bytes_ = 0;
};

}  // namespace unmask

#endif  // UNMASK_CORE_TENSOR_H_

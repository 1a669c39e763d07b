// Device dispatch of every op's public entry: tensors tagged with a device that has no kernel in
// this build (kCuda) get Unimplemented naming the op and the device, tensors on different
// devices get InvalidArgument, and nothing is dereferenced (the data here is host memory that a
// kernel for the wrong device would read or write: the outputs must stay untouched).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "op_test_util.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/convert.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/rope.h"
#include "ops/softmax.h"

namespace unmask {
namespace {

// A view of v tagged as living on `device`.
TensorView On(Device device, std::vector<float>& v, Shape shape) {
  TensorView t = testing::View(v, shape);
  t.device = device;
  return t;
}

// `s` is Unimplemented and names the op and cuda.
void ExpectNoCudaKernel(const Status& s, const std::string& op) {
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();
  EXPECT_NE(s.message().find(op), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("cuda"), std::string::npos) << s.ToString();
}

// Every element still NaN: no kernel wrote to it.
void ExpectUntouched(const std::vector<float>& v) {
  for (float f : v) ASSERT_TRUE(std::isnan(f));
}

constexpr Device kCuda = Device::kCuda;
const float kNaN = std::nanf("");

TEST(DeviceDispatchTest, DeviceNames) {
  EXPECT_EQ(DeviceName(Device::kCpu), "cpu");
  EXPECT_EQ(DeviceName(Device::kCuda), "cuda");
  EXPECT_EQ(DeviceFromName("cuda"), Device::kCuda);
  EXPECT_EQ(DeviceFromName("cpu"), Device::kCpu);
  EXPECT_FALSE(DeviceFromName("CPU").has_value());
}

TEST(DeviceDispatchTest, RmsNorm) {
  std::vector<float> x(8, 1.0f), w(4, 1.0f), y(8, kNaN);
  ExpectNoCudaKernel(RmsNorm(On(kCuda, x, {2, 4}), On(kCuda, w, {4}), 1e-5f, On(kCuda, y, {2, 4})),
                     "RmsNorm");
  ExpectUntouched(y);
  // A cpu x with a cuda y: the devices differ.
  const Status mixed =
      RmsNorm(testing::View(x, {2, 4}), testing::View(w, {4}), 1e-5f, On(kCuda, y, {2, 4}));
  EXPECT_EQ(mixed.code(), StatusCode::kInvalidArgument) << mixed.ToString();
  EXPECT_NE(mixed.message().find("y is on cuda"), std::string::npos) << mixed.ToString();
  ExpectUntouched(y);
  // The same call on the cpu runs.
  EXPECT_TRUE(
      RmsNorm(testing::View(x, {2, 4}), testing::View(w, {4}), 1e-5f, testing::View(y, {2, 4}))
          .ok());
  EXPECT_FLOAT_EQ(y[0], 1.0f / std::sqrt(1.0f + 1e-5f));
}

TEST(DeviceDispatchTest, Activations) {
  std::vector<float> gate_up(8, 1.0f), out(4, kNaN);
  ExpectNoCudaKernel(SwiGlu(On(kCuda, gate_up, {2, 4}), On(kCuda, out, {2, 2})), "SwiGlu");
  ExpectUntouched(out);
  EXPECT_EQ(SwiGlu(On(kCuda, gate_up, {2, 4}), testing::View(out, {2, 2})).code(),
            StatusCode::kInvalidArgument);
  std::vector<float> y(4, kNaN), x(4, 1.0f);
  ExpectNoCudaKernel(AddInPlace(On(kCuda, y, {4}), On(kCuda, x, {4})), "AddInPlace");
  ExpectUntouched(y);
}

TEST(DeviceDispatchTest, SoftmaxAndRope) {
  std::vector<float> x(8, kNaN);
  ExpectNoCudaKernel(SoftmaxInPlace(On(kCuda, x, {2, 4})), "SoftmaxInPlace");
  auto table = RopeTable::Create(4, 10000.0, 8);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  const std::vector<int32_t> positions = {0, 1};
  ExpectNoCudaKernel(
      ApplyRope(On(kCuda, x, {2, 1, 4}), positions, *table, RopeLayout::kInterleaved), "ApplyRope");
  ExpectUntouched(x);
}

TEST(DeviceDispatchTest, Attention) {
  std::vector<float> q(8, 1.0f), k(8, 1.0f), v(8, 1.0f), out(8, kNaN);
  AttentionParams p;
  ExpectNoCudaKernel(Attention(On(kCuda, q, {2, 1, 4}), On(kCuda, k, {2, 1, 4}),
                               On(kCuda, v, {2, 1, 4}), p, On(kCuda, out, {2, 1, 4})),
                     "Attention");
  EXPECT_EQ(Attention(testing::View(q, {2, 1, 4}), testing::View(k, {2, 1, 4}),
                      On(kCuda, v, {2, 1, 4}), p, testing::View(out, {2, 1, 4}))
                .code(),
            StatusCode::kInvalidArgument);
  ExpectUntouched(out);
}

TEST(DeviceDispatchTest, GetRows) {
  std::vector<float> table(8, 1.0f), out(4, kNaN);
  const std::vector<int32_t> ids = {1};
  ExpectNoCudaKernel(GetRows(On(kCuda, table, {2, 4}), ids, On(kCuda, out, {1, 4})), "GetRows");
  EXPECT_EQ(GetRows(On(kCuda, table, {2, 4}), ids, testing::View(out, {1, 4})).code(),
            StatusCode::kInvalidArgument);
  ExpectUntouched(out);
}

TEST(DeviceDispatchTest, Linear) {
  std::vector<float> w(8, 1.0f), x(4, 1.0f), y(2, kNaN);
  const TensorView cuda_w = On(kCuda, w, {2, 4});
  const auto on_device =
      LinearWeight::Prepare(std::span<const TensorView>(&cuda_w, 1), WeightMode::kPacked);
  ASSERT_FALSE(on_device.ok());
  EXPECT_EQ(on_device.status().code(), StatusCode::kUnimplemented) << on_device.status().ToString();
  EXPECT_NE(on_device.status().message().find("cuda"), std::string::npos);

  const TensorView host_w = testing::View(w, {2, 4});
  for (WeightMode mode : {WeightMode::kPacked, WeightMode::kOnTheFly}) {
    auto lw = LinearWeight::Prepare(std::span<const TensorView>(&host_w, 1), mode);
    ASSERT_TRUE(lw.ok()) << lw.status().ToString();
    EXPECT_EQ(lw->device(), Device::kCpu);
    // x and y on cuda, the weight on the cpu: no op runs across devices.
    const Status s = Linear(On(kCuda, x, {1, 4}), *lw, On(kCuda, y, {1, 2}));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("cuda"), std::string::npos) << s.ToString();
    EXPECT_EQ(Linear(testing::View(x, {1, 4}), *lw, On(kCuda, y, {1, 2})).code(),
              StatusCode::kInvalidArgument);
    ExpectUntouched(y);
    ASSERT_TRUE(Linear(testing::View(x, {1, 4}), *lw, testing::View(y, {1, 2})).ok());
    EXPECT_FLOAT_EQ(y[0], 4.0f);
    y.assign(2, kNaN);
  }
}

TEST(DeviceDispatchTest, TensorKeepsItsDevice) {
  const Tensor t(DType::kF32, Shape{2, 3});
  EXPECT_EQ(t.device(), Device::kCpu);
  EXPECT_EQ(t.view().device, Device::kCpu);
  EXPECT_EQ(t.Copy().device(), Device::kCpu);
  EXPECT_EQ(TensorView{}.device, Device::kCpu);
  std::vector<float> v(4);
  TensorView tagged = On(kCuda, v, {4});
  const TensorView copy = tagged;
  EXPECT_EQ(copy.device, Device::kCuda);
  EXPECT_NE(testing::View(v, {4}).device, tagged.device);
}

}  // namespace
}  // namespace unmask

#include "compiler/eval/convolution.h"

#include <string>
#include <type_traits>

#include "compiler/eval/element_data.h"
#include "compiler/eval/index_util.h"
#include "compiler/eval/literal_util.h"
#include "compiler/eval/scalar_ops.h"
#include "compiler/eval/shape_ops.h"
#include "isa/error.h"
#include "isa/shape.h"

namespace tpusim::eval {
namespace {

using Dims = std::vector<int64_t>;

Dims Concat(std::initializer_list<int64_t> head, const Dims& middle,
            std::initializer_list<int64_t> tail) {
  Dims all(head);
  all.insert(all.end(), middle.begin(), middle.end());
  all.insert(all.end(), tail);
  return all;
}

[[noreturn]] void Fail(const std::string& message) { throw Error("convolution: " + message); }

// Sizes that the kernels' loops rely on, checked once.
struct ConvGeometry {
  int64_t spatial_rank = 0;
  int64_t input_batch = 0;
  int64_t input_features = 0;
  Dims input_spatial;
  int64_t group_input_features = 0;  // the kernel's input feature size
  int64_t output_features = 0;
  Dims kernel_spatial;
  int64_t output_batch = 0;
  Dims output_spatial;
  int64_t groups = 1;  // feature or batch groups (at most one is > 1)
  int64_t group_output_features = 0;
};

ConvGeometry MakeGeometry(const hlo::Literal& input, const hlo::Literal& kernel,
                          std::span<const WindowDimension> window, const ConvolutionDimensions& d,
                          int64_t feature_groups, int64_t batch_groups) {
  ConvGeometry g;
  g.spatial_rank = static_cast<int64_t>(d.input_spatial_dims.size());
  if (static_cast<int64_t>(d.kernel_spatial_dims.size()) != g.spatial_rank ||
      static_cast<int64_t>(d.output_spatial_dims.size()) != g.spatial_rank) {
    Fail("input, kernel and output have different numbers of spatial dims");
  }
  const int64_t rank = g.spatial_rank + 2;
  if (static_cast<int64_t>(input.dims().size()) != rank ||
      static_cast<int64_t>(kernel.dims().size()) != rank) {
    Fail("input " + isa::ToString(input.shape()) + " and kernel " + isa::ToString(kernel.shape()) +
         " must have rank " + std::to_string(rank));
  }
  RequirePermutation(Concat({d.input_batch_dim, d.input_feature_dim}, d.input_spatial_dims, {}),
                     rank, "convolution input dims");
  RequirePermutation(
      Concat({d.kernel_input_feature_dim, d.kernel_output_feature_dim}, d.kernel_spatial_dims, {}),
      rank, "convolution kernel dims");
  RequirePermutation(Concat({d.output_batch_dim, d.output_feature_dim}, d.output_spatial_dims, {}),
                     rank, "convolution output dims");
  ValidateWindow(window, g.spatial_rank, "convolution");
  if (feature_groups < 1 || batch_groups < 1 || (feature_groups > 1 && batch_groups > 1)) {
    Fail("feature_group_count " + std::to_string(feature_groups) + " and batch_group_count " +
         std::to_string(batch_groups) + ": both must be >= 1 and one of them 1");
  }

  g.input_batch = input.dims()[d.input_batch_dim];
  g.input_features = input.dims()[d.input_feature_dim];
  g.group_input_features = kernel.dims()[d.kernel_input_feature_dim];
  g.output_features = kernel.dims()[d.kernel_output_feature_dim];
  g.groups = feature_groups * batch_groups;
  for (int64_t i = 0; i < g.spatial_rank; ++i) {
    g.input_spatial.push_back(input.dims()[d.input_spatial_dims[i]]);
    g.kernel_spatial.push_back(kernel.dims()[d.kernel_spatial_dims[i]]);
    if (window[i].size != g.kernel_spatial.back()) {
      Fail("window dim " + std::to_string(i) + " has size " + std::to_string(window[i].size) +
           " but the kernel's spatial dim has " + std::to_string(g.kernel_spatial.back()));
    }
    g.output_spatial.push_back(WindowOutputSize(g.input_spatial.back(), window[i]));
  }
  if (g.input_features != g.group_input_features * feature_groups) {
    Fail("the input has " + std::to_string(g.input_features) + " features, the kernel takes " +
         std::to_string(g.group_input_features) + " per group and there are " +
         std::to_string(feature_groups) + " feature groups");
  }
  if (g.output_features % g.groups != 0 || g.input_batch % batch_groups != 0) {
    Fail("output features " + std::to_string(g.output_features) + " and input batch " +
         std::to_string(g.input_batch) + " must divide into the groups");
  }
  g.group_output_features = g.output_features / g.groups;
  g.output_batch = g.input_batch / batch_groups;
  return g;
}

// The convolution on arranged arrays: input [batch][spatial...][features], kernel
// [spatial...][group input features][output features], output [batch][spatial...][features].
template <typename A>
std::vector<A> Convolve(const std::vector<A>& in, const std::vector<A>& k, const ConvGeometry& g,
                        std::span<const WindowDimension> window, bool batch_grouped) {
  const auto tables = WindowTapTables(window, g.input_spatial, g.output_spatial);
  const Dims in_strides =
      RowMajorStrides(Concat({g.input_batch}, g.input_spatial, {g.input_features}));
  const Dims k_strides =
      RowMajorStrides(Concat({}, g.kernel_spatial, {g.group_input_features, g.output_features}));
  const int64_t out_positions = ElementCountOf(g.output_spatial);
  std::vector<A> out(g.output_batch * out_positions * g.output_features, A(0));

  for (int64_t b = 0; b < g.output_batch; ++b) {
    int64_t position = 0;
    ForEachIndex(g.output_spatial, [&](std::span<const int64_t> p) {
      A* row = out.data() + (b * out_positions + position++) * g.output_features;
      ForEachIndex(g.kernel_spatial, [&](std::span<const int64_t> tap) {
        int64_t in_offset = 0;
        int64_t k_offset = 0;
        for (int64_t d = 0; d < g.spatial_rank; ++d) {
          const int64_t index = tables[d][p[d] * g.kernel_spatial[d] + tap[d]];
          if (index < 0) return;  // padding or a dilation hole
          in_offset += index * in_strides[d + 1];
          const int64_t kernel_tap = window[d].reversal ? g.kernel_spatial[d] - 1 - tap[d] : tap[d];
          k_offset += kernel_tap * k_strides[d];
        }
        for (int64_t group = 0; group < g.groups; ++group) {
          const int64_t in_batch = batch_grouped ? group * g.output_batch + b : b;
          const int64_t in_feature = batch_grouped ? 0 : group * g.group_input_features;
          const A* x = in.data() + in_batch * in_strides[0] + in_offset + in_feature;
          const int64_t first_out = group * g.group_output_features;
          A* acc = row + first_out;
          for (int64_t c = 0; c < g.group_input_features; ++c) {
            const A scale = x[c];
            const A* w = k.data() + k_offset + c * g.output_features + first_out;
            for (int64_t o = 0; o < g.group_output_features; ++o) {
              acc[o] = scalar::Add(acc[o], scalar::Multiply(scale, w[o]));
            }
          }
        }
      });
    });
  }
  return out;
}

}  // namespace

hlo::Literal Convolution(const hlo::Literal& input, const hlo::Literal& kernel,
                         std::span<const WindowDimension> window, const ConvolutionDimensions& dims,
                         int64_t feature_group_count, int64_t batch_group_count,
                         isa::ElementType result_type) {
  RequireArray(input, "convolution", "the input");
  RequireArray(kernel, "convolution", "the kernel");
  const ConvGeometry g =
      MakeGeometry(input, kernel, window, dims, feature_group_count, batch_group_count);
  const Dims in_order =
      Concat({dims.input_batch_dim}, dims.input_spatial_dims, {dims.input_feature_dim});
  const Dims k_order = Concat({}, dims.kernel_spatial_dims,
                              {dims.kernel_input_feature_dim, dims.kernel_output_feature_dim});
  const Dims arranged_dims = Concat({g.output_batch}, g.output_spatial, {g.output_features});
  // Output dim i is arranged dim out_order[i]: batch is 0, spatial d is 1 + d, feature is last.
  Dims out_order(arranged_dims.size());
  out_order[dims.output_batch_dim] = 0;
  out_order[dims.output_feature_dim] = g.spatial_rank + 1;
  for (int64_t d = 0; d < g.spatial_rank; ++d) out_order[dims.output_spatial_dims[d]] = d + 1;

  hlo::Literal arranged = VisitComputeType(result_type, [&](auto tag) {
    using T = decltype(tag);
    using A = std::conditional_t<std::is_integral_v<T>, uint64_t, T>;  // as in dot.cc
    const std::vector<A> in = Widen<A>(Transpose(input, in_order));
    const std::vector<A> k = Widen<A>(Transpose(kernel, k_order));
    return Narrow<A>(result_type, arranged_dims, Convolve(in, k, g, window, batch_group_count > 1));
  });
  return Transpose(arranged, out_order);
}

}  // namespace tpusim::eval

#include "compiler/eval/batch_norm.h"

#include <cmath>
#include <string>
#include <vector>

#include "compiler/eval/element_data.h"
#include "compiler/eval/index_util.h"
#include "compiler/eval/literal_util.h"
#include "isa/error.h"
#include "isa/shape.h"

namespace tpusim::eval {
namespace {

// The feature of each element, and the feature count.
struct Features {
  int64_t count = 0;
  int64_t stride = 1;       // elements between consecutive features
  int64_t per_feature = 0;  // N: elements that share a feature

  int64_t Of(int64_t linear) const { return (linear / stride) % count; }
};

Features FeaturesOf(const hlo::Literal& operand, int64_t feature_index, const char* op) {
  RequireArray(operand, op, "the operand");
  if (!isa::IsFloat(operand.element_type())) {
    throw Error(std::string(op) + " needs a float operand, got " + isa::ToString(operand.shape()));
  }
  const int64_t rank = static_cast<int64_t>(operand.dims().size());
  if (feature_index < 0 || feature_index >= rank) {
    throw Error(std::string(op) + ": feature_index " + std::to_string(feature_index) +
                " is out of range for " + isa::ToString(operand.shape()));
  }
  Features f;
  f.count = operand.dims()[feature_index];
  f.stride = RowMajorStrides(operand.dims())[feature_index];
  f.per_feature = f.count > 0 ? operand.element_count() / f.count : 0;
  return f;
}

// A per-feature input (scale, offset, mean, variance) as doubles.
std::vector<double> PerFeature(const hlo::Literal& values, const Features& f, const char* op,
                               const char* what) {
  RequireArray(values, op, what);
  if (values.dims() != std::vector<int64_t>{f.count}) {
    throw Error(std::string(op) + ": " + what + " must have dims [" + std::to_string(f.count) +
                "], got " + isa::ToString(values.shape()));
  }
  return Widen<double>(values);
}

// Per-feature sums of term(linear, feature) over the operand, in row-major order.
template <typename Term>
std::vector<double> FeatureSums(int64_t element_count, const Features& f, Term term) {
  std::vector<double> sums(f.count, 0.0);
  for (int64_t i = 0; i < element_count; ++i) {
    const int64_t l = f.Of(i);
    sums[l] += term(i, l);
  }
  return sums;
}

std::vector<double> Normalize(const std::vector<double>& x, const Features& f,
                              const std::vector<double>& scale, const std::vector<double>& offset,
                              const std::vector<double>& mean, const std::vector<double>& variance,
                              double epsilon) {
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const int64_t l = f.Of(static_cast<int64_t>(i));
    y[i] = scale[l] * (x[i] - mean[l]) / std::sqrt(variance[l] + epsilon) + offset[l];
  }
  return y;
}

std::vector<int64_t> FeatureDims(const Features& f) { return {f.count}; }

}  // namespace

hlo::Literal BatchNormTraining(const hlo::Literal& operand, const hlo::Literal& scale,
                               const hlo::Literal& offset, float epsilon, int64_t feature_index) {
  const char* op = "batch-norm-training";
  const Features f = FeaturesOf(operand, feature_index, op);
  const std::vector<double> x = Widen<double>(operand);
  const std::vector<double> gamma = PerFeature(scale, f, op, "scale");
  const std::vector<double> beta = PerFeature(offset, f, op, "offset");
  const double n = static_cast<double>(f.per_feature);

  std::vector<double> mean =
      FeatureSums(operand.element_count(), f, [&](int64_t i, int64_t) { return x[i]; });
  for (double& m : mean) m /= n;
  std::vector<double> variance = FeatureSums(operand.element_count(), f, [&](int64_t i, int64_t l) {
    const double centered = x[i] - mean[l];
    return centered * centered;
  });
  for (double& v : variance) v /= n;

  const isa::ElementType type = operand.element_type();
  return hlo::Literal::Tuple({
      Narrow<double>(type, operand.dims(), Normalize(x, f, gamma, beta, mean, variance, epsilon)),
      Narrow<double>(type, FeatureDims(f), mean),
      Narrow<double>(type, FeatureDims(f), variance),
  });
}

hlo::Literal BatchNormInference(const hlo::Literal& operand, const hlo::Literal& scale,
                                const hlo::Literal& offset, const hlo::Literal& mean,
                                const hlo::Literal& variance, float epsilon,
                                int64_t feature_index) {
  const char* op = "batch-norm-inference";
  const Features f = FeaturesOf(operand, feature_index, op);
  const std::vector<double> y =
      Normalize(Widen<double>(operand), f, PerFeature(scale, f, op, "scale"),
                PerFeature(offset, f, op, "offset"), PerFeature(mean, f, op, "mean"),
                PerFeature(variance, f, op, "variance"), epsilon);
  return Narrow<double>(operand.element_type(), operand.dims(), y);
}

hlo::Literal BatchNormGrad(const hlo::Literal& operand, const hlo::Literal& scale,
                           const hlo::Literal& mean, const hlo::Literal& variance,
                           const hlo::Literal& grad_output, float epsilon, int64_t feature_index) {
  const char* op = "batch-norm-grad";
  const Features f = FeaturesOf(operand, feature_index, op);
  RequireArray(grad_output, op, "grad_output");
  if (grad_output.dims() != operand.dims()) {
    throw Error(std::string(op) + ": grad_output " + isa::ToString(grad_output.shape()) +
                " must have the operand's dims " + DimsToString(operand.dims()));
  }
  const std::vector<double> x = Widen<double>(operand);
  const std::vector<double> dy = Widen<double>(grad_output);
  const std::vector<double> gamma = PerFeature(scale, f, op, "scale");
  const std::vector<double> mu = PerFeature(mean, f, op, "mean");
  const std::vector<double> var = PerFeature(variance, f, op, "variance");
  const double n = static_cast<double>(f.per_feature);

  const std::vector<double> sum_dy =
      FeatureSums(operand.element_count(), f, [&](int64_t i, int64_t) { return dy[i]; });
  const std::vector<double> sum_dy_centered = FeatureSums(
      operand.element_count(), f, [&](int64_t i, int64_t l) { return dy[i] * (x[i] - mu[l]); });

  std::vector<double> grad_x(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const int64_t l = f.Of(static_cast<int64_t>(i));
    const double var_eps = var[l] + epsilon;
    grad_x[i] = gamma[l] / std::sqrt(var_eps) *
                (dy[i] - sum_dy[l] / n - (x[i] - mu[l]) * sum_dy_centered[l] / (n * var_eps));
  }
  std::vector<double> grad_scale(f.count);
  for (int64_t l = 0; l < f.count; ++l) {
    grad_scale[l] = sum_dy_centered[l] / std::sqrt(var[l] + epsilon);
  }

  const isa::ElementType type = operand.element_type();
  return hlo::Literal::Tuple({
      Narrow<double>(type, operand.dims(), grad_x),
      Narrow<double>(type, FeatureDims(f), grad_scale),
      Narrow<double>(type, FeatureDims(f), sum_dy),
  });
}

}  // namespace tpusim::eval

// The calibration set of measured TPU v4 kernel times (../shared/validation/tpu_v4/): its rows,
// the HLO module each row measured, and the error statistics of docs/validation.md. Shared by
// the tpusim_calibrate tool and the [validation] test; runs nothing itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpusim::validation {

// The shape classes docs/validation.md reports separately.
enum class RowClass { kSmallGemm, kMediumGemm, kLargeGemm, kElementwise };
const char* ClassName(RowClass row_class);  // "small gemm", "medium gemm", "large gemm", "elementwise"

struct Row {
  RowClass row_class = RowClass::kElementwise;
  std::string op;             // "dot", "multiply" or "subtract"
  std::vector<int64_t> dims;  // dot: m, n, k; element-wise: the array's dims
  double measured_us = 0;     // measured_us_mean
  std::string Label() const;  // "dot 128x64x32 (m x n x k)", "multiply 128x256"
};

// The rows of gemm.csv and gemm_medium.csv (f16[m,k] x f16[k,n]; m, n, k <= 128 is small, in
// 128..1024 medium, >= 1024 large) and of elementwise.csv. Throws tpusim::Error naming the file and line of a malformed row.
std::vector<Row> ReadGemmRows(const std::string& path);
std::vector<Row> ReadElementwiseRows(const std::string& path);

// The HLO module the row measured: jnp.matmul(A, B) of f16[m,k] x f16[k,n] -> f16[m,n], or A * B
// / A - B of two f16 arrays, as the entry's single instruction.
std::string ModuleText(const Row& row);

// (simulated - measured) / measured, in percent.
double ErrorPercent(double simulated_us, double measured_us);

struct Stats {
  int rows = 0;
  double mape_percent = 0;         // mean of |error|
  double mean_error_percent = 0;   // signed: > 0 when the model is slow
  double worst_percent = 0;        // the largest |error|, with its sign
  std::string worst_label;
};
// Over the rows with `include[i]` set; `simulated_us[i]` belongs to rows[i].
Stats Summarize(const std::vector<Row>& rows, const std::vector<double>& simulated_us,
                const std::vector<bool>& include);

}  // namespace tpusim::validation

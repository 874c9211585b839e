#include "tests/validation/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "isa/error.h"

namespace tpusim::validation {
namespace {

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, ',')) fields.push_back(field);
  return fields;
}

// The data lines of a CSV file whose header starts with `header_prefix`, with their line numbers.
std::vector<std::pair<int, std::vector<std::string>>> ReadCsv(const std::string& path, const std::string& header_prefix,
                                                              std::size_t fields) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open for reading");
  std::string line;
  if (!std::getline(in, line) || line.rfind(header_prefix, 0) != 0) {
    throw Error(path + ":1: expected a header starting with '" + header_prefix + "'");
  }
  std::vector<std::pair<int, std::vector<std::string>>> rows;
  int number = 1;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> split = SplitCsvLine(line);
    if (split.size() != fields) {
      throw Error(fmt::format("{}:{}: expected {} fields, got {}", path, number, fields, split.size()));
    }
    rows.emplace_back(number, std::move(split));
  }
  return rows;
}

int64_t ParseDim(const std::string& text, const std::string& where) {
  std::size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value <= 0) throw Error(where + ": '" + text + "' is not a positive dimension");
  return value;
}

double ParseTime(const std::string& text, const std::string& where) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(value > 0) || !std::isfinite(value)) {
    throw Error(where + ": '" + text + "' is not a positive time in us");
  }
  return value;
}

std::string JoinDims(const std::vector<int64_t>& dims, const char* separator) {
  std::string out;
  for (std::size_t i = 0; i < dims.size(); ++i) out += (i ? separator : "") + std::to_string(dims[i]);
  return out;
}

}  // namespace

const char* ClassName(RowClass row_class) {
  switch (row_class) {
    case RowClass::kSmallGemm: return "small gemm";
    case RowClass::kMediumGemm: return "medium gemm";
    case RowClass::kLargeGemm: return "large gemm";
    case RowClass::kElementwise: return "elementwise";
  }
  return "?";
}

std::string Row::Label() const {
  if (op == "dot") return fmt::format("dot {} (m x n x k)", JoinDims(dims, "x"));
  return op + " " + JoinDims(dims, "x");
}

std::vector<Row> ReadGemmRows(const std::string& path) {
  std::vector<Row> rows;
  for (const auto& [line, f] : ReadCsv(path, "m,n,k,dtype,measured_us_mean", 9)) {
    const std::string where = fmt::format("{}:{}", path, line);
    if (f[3] != "f16") throw Error(where + ": dtype '" + f[3] + "' (the set is f16)");
    Row row;
    row.op = "dot";
    row.dims = {ParseDim(f[0], where), ParseDim(f[1], where), ParseDim(f[2], where)};
    row.measured_us = ParseTime(f[4], where);
    const int64_t largest = std::max({row.dims[0], row.dims[1], row.dims[2]});
    const int64_t smallest = std::min({row.dims[0], row.dims[1], row.dims[2]});
    if (largest <= 128) {
      row.row_class = RowClass::kSmallGemm;
    } else if (smallest >= 1024) {
      row.row_class = RowClass::kLargeGemm;
    } else if (smallest >= 128 && largest <= 1024) {
      row.row_class = RowClass::kMediumGemm;
    } else {
      throw Error(where + ": m, n, k mix the small (<= 128), medium (128..1024) and large (>= 1024) ranges");
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<Row> ReadElementwiseRows(const std::string& path) {
  std::vector<Row> rows;
  for (const auto& [line, f] : ReadCsv(path, "op,shape,dtype,measured_us_mean", 8)) {
    const std::string where = fmt::format("{}:{}", path, line);
    if (f[0] != "multiply" && f[0] != "subtract") throw Error(where + ": op '" + f[0] + "' (expected multiply or subtract)");
    if (f[2] != "f16") throw Error(where + ": dtype '" + f[2] + "' (the set is f16)");
    Row row;
    row.row_class = RowClass::kElementwise;
    row.op = f[0];
    std::stringstream shape(f[1]);
    std::string dim;
    while (std::getline(shape, dim, 'x')) row.dims.push_back(ParseDim(dim, where));
    if (row.dims.empty() || row.dims.size() > 2) throw Error(where + ": shape '" + f[1] + "' is not A or AxB");
    row.measured_us = ParseTime(f[3], where);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string ModuleText(const Row& row) {
  if (row.op == "dot") {
    const int64_t m = row.dims.at(0), n = row.dims.at(1), k = row.dims.at(2);
    return fmt::format(
        "HloModule gemm_{0}x{1}x{2}\n\nENTRY main {{\n  a = f16[{0},{2}] parameter(0)\n  b = f16[{2},{1}] parameter(1)\n"
        "  ROOT d = f16[{0},{1}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n}}\n",
        m, n, k);
  }
  const std::string shape = "f16[" + JoinDims(row.dims, ",") + "]";
  return fmt::format(
      "HloModule {0}_{1}\n\nENTRY main {{\n  a = {2} parameter(0)\n  b = {2} parameter(1)\n  ROOT r = {2} {0}(a, b)\n}}\n",
      row.op, JoinDims(row.dims, "x"), shape);
}

double ErrorPercent(double simulated_us, double measured_us) { return (simulated_us - measured_us) / measured_us * 100; }

Stats Summarize(const std::vector<Row>& rows, const std::vector<double>& simulated_us, const std::vector<bool>& include) {
  Stats stats;
  double sum_abs = 0, sum = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!include.at(i)) continue;
    const double error = ErrorPercent(simulated_us.at(i), rows[i].measured_us);
    ++stats.rows;
    sum_abs += std::abs(error);
    sum += error;
    if (std::abs(error) > std::abs(stats.worst_percent) || stats.rows == 1) {
      stats.worst_percent = error;
      stats.worst_label = rows[i].Label();
    }
  }
  if (stats.rows > 0) {
    stats.mape_percent = sum_abs / stats.rows;
    stats.mean_error_percent = sum / stats.rows;
  }
  return stats;
}

}  // namespace tpusim::validation

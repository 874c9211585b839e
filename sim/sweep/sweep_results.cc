#include "sim/sweep/sweep_results.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <unordered_map>

#include "isa/error.h"
#include "sim/config/text_proto.h"

namespace tpusim::sim {
namespace {

std::string Num(double value) { return fmt::format("{}", value); }

}  // namespace

PointResult ReadPointReport(const SweepPoint& point, const std::string& report_path) {
  PointResult result;
  result.point = &point;
  const nlohmann::json report = nlohmann::json::parse(ReadTextFile(report_path), nullptr, /*allow_exceptions=*/false);
  if (report.is_discarded() || !report.is_object() || !report.contains("device_time_us")) {
    throw Error(report_path + ": not a `tpusim run --report` JSON file");
  }
  result.ok = true;
  result.device_time_us = report.value("device_time_us", 0.0);
  result.total_time_us = report.value("total_time_us", 0.0);
  result.flops = report.value("flops", 0.0);
  result.bytes_accessed = report.value("bytes_accessed", 0.0);
  result.peak_flops_per_s = report.value("peak_flops_per_s", 0.0);
  result.hbm_bytes_per_s = report.value("hbm_bytes_per_s", 0.0);
  for (const nlohmann::json& op : report.value("ops", nlohmann::json::array())) {
    result.category_time_us[op.value("category", std::string("other"))] += op.value("time_us", 0.0);
  }
  return result;
}

CsvTable ResultsTable(const SweepPlan& plan, const std::vector<PointResult>& results) {
  std::set<std::string> categories;
  for (const PointResult& r : results) {
    for (const auto& [category, time] : r.category_time_us) categories.insert(category);
  }
  CsvTable table;
  table.header = {"id", "workload", "config"};
  table.header.insert(table.header.end(), plan.axis_paths.begin(), plan.axis_paths.end());
  for (const char* column : {"status", "device_time_us", "total_time_us", "flops", "bytes_accessed", "flops_per_byte",
                             "ridge_flops_per_byte", "bound", "mxu_utilization", "hbm_utilization"}) {
    table.header.push_back(column);
  }
  for (const std::string& category : categories) table.header.push_back("time_us." + category);
  table.header.push_back("error");
  for (const PointResult& r : results) {
    std::vector<std::string> row = {r.point->id, r.point->workload, r.point->config};
    row.insert(row.end(), r.point->axis_values.begin(), r.point->axis_values.end());
    row.push_back(r.ok ? "ok" : "failed");
    if (r.ok) {
      const double seconds = r.device_time_us * 1e-6;
      const double intensity = r.bytes_accessed > 0 ? r.flops / r.bytes_accessed : 0;
      const double ridge = r.hbm_bytes_per_s > 0 ? r.peak_flops_per_s / r.hbm_bytes_per_s : 0;
      row.insert(row.end(), {Num(r.device_time_us), Num(r.total_time_us), Num(r.flops), Num(r.bytes_accessed),
                             Num(intensity), Num(ridge), intensity > ridge ? "compute" : "memory",
                             Num(seconds > 0 ? r.flops / (seconds * r.peak_flops_per_s) : 0),
                             Num(seconds > 0 ? r.bytes_accessed / (seconds * r.hbm_bytes_per_s) : 0)});
      for (const std::string& category : categories) {
        const auto it = r.category_time_us.find(category);
        row.push_back(it == r.category_time_us.end() ? "0" : Num(it->second));
      }
    } else {
      row.resize(table.header.size() - 1);
    }
    row.push_back(r.error);
    table.rows.push_back(std::move(row));
  }
  return table;
}

std::string FormatCsv(const CsvTable& table) {
  auto field = [](const std::string& value) {
    if (value.find_first_of(",\"\n\r") == std::string::npos) return value;
    std::string quoted = "\"";
    for (char c : value) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
  };
  auto line = [&](const std::vector<std::string>& fields) {
    std::string out;
    for (std::size_t i = 0; i < fields.size(); ++i) out += (i == 0 ? "" : ",") + field(fields[i]);
    return out + "\n";
  };
  std::string out = line(table.header);
  for (const auto& row : table.rows) out += line(row);
  return out;
}

CsvTable ParseCsv(std::string_view text, const std::string& source) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false;
  int line = 1;
  int record_line = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      record.push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      record.push_back(std::move(field));
      field.clear();
      records.push_back(std::move(record));
      record.clear();
      record_line = ++line;
    } else if (c != '\r') {
      field += c;
    }
  }
  if (quoted) throw Error(fmt::format("{}:{}: a quoted field is not closed", source, record_line));
  if (!field.empty() || !record.empty()) {
    record.push_back(std::move(field));
    records.push_back(std::move(record));
  }
  if (records.empty()) throw Error(source + ": empty: no header");
  CsvTable table;
  table.header = std::move(records[0]);
  for (std::size_t r = 1; r < records.size(); ++r) {
    if (records[r].size() != table.header.size()) {
      throw Error(fmt::format("{}: row {} has {} fields, the header {}", source, r + 1, records[r].size(),
                              table.header.size()));
    }
    table.rows.push_back(std::move(records[r]));
  }
  return table;
}

CsvTable MergeResults(const std::vector<CsvTable>& shards, const std::vector<std::string>& ids) {
  CsvTable merged;
  for (const CsvTable& shard : shards) {
    for (const std::string& column : shard.header) {
      if (std::find(merged.header.begin(), merged.header.end(), column) == merged.header.end()) {
        merged.header.push_back(column);
      }
    }
  }
  // The error column stays last, after every shard's categories.
  const auto error = std::find(merged.header.begin(), merged.header.end(), "error");
  if (error != merged.header.end()) {
    merged.header.erase(error);
    merged.header.push_back("error");
  }
  std::unordered_map<std::string, std::vector<std::string>> by_id;
  std::vector<std::string> twice;
  for (const CsvTable& shard : shards) {
    std::unordered_map<std::string, std::size_t> column;
    for (std::size_t c = 0; c < shard.header.size(); ++c) column[shard.header[c]] = c;
    if (!column.contains("id")) throw Error("a results table without an `id` column");
    for (const auto& row : shard.rows) {
      std::vector<std::string> aligned(merged.header.size());
      for (std::size_t c = 0; c < merged.header.size(); ++c) {
        const auto it = column.find(merged.header[c]);
        // A category this shard's points never ran: no time in it.
        if (it != column.end()) aligned[c] = row[it->second];
        else if (merged.header[c].starts_with("time_us.") && row[column.at("status")] == "ok") aligned[c] = "0";
      }
      const std::string& id = row[column.at("id")];
      if (!by_id.emplace(id, std::move(aligned)).second) twice.push_back(id);
    }
  }
  std::vector<std::string> missing;
  for (const std::string& id : ids) {
    const auto it = by_id.find(id);
    if (it == by_id.end()) {
      missing.push_back(id);
      continue;
    }
    merged.rows.push_back(std::move(it->second));
    by_id.erase(it);
  }
  auto list = [](const std::vector<std::string>& v) {
    std::string out;
    for (const std::string& id : v) out += (out.empty() ? "" : ", ") + id;
    return out;
  };
  if (!twice.empty()) throw Error("points in two shards: " + list(twice));
  if (!missing.empty()) throw Error(fmt::format("points in no shard ({} of {}): {}", missing.size(), ids.size(), list(missing)));
  if (!by_id.empty()) {
    std::vector<std::string> extra;
    for (const auto& [id, row] : by_id) extra.push_back(id);
    std::sort(extra.begin(), extra.end());
    throw Error("points that are not the sweep's: " + list(extra));
  }
  return merged;
}

}  // namespace tpusim::sim

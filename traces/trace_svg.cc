#include "traces/trace_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>
#include <vector>

#include "isa/error.h"
#include "traces/xml_text.h"

namespace tpusim::traces {
namespace {

constexpr int kLabelWidth = 260;  // px left of the plot for track names
constexpr int kRightMargin = 12;
constexpr int kAxisHeight = 28;
constexpr int kHeaderHeight = 22;  // a process row
constexpr int kLaneHeight = 16;    // one nesting level of a slice track
constexpr int kCounterHeight = 36;
constexpr int kIndent = 14;        // px per level of the track tree
constexpr double kCharWidth = 6.2; // an estimate for 11px sans-serif, to decide if a name fits

std::string Num(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f", value);
  return buffer;
}

std::string Micros(uint64_t ns) {
  char buffer[40];
  std::snprintf(buffer, sizeof(buffer), "%llu.%03llu us", static_cast<unsigned long long>(ns / 1000),
                static_cast<unsigned long long>(ns % 1000));
  return buffer;
}

// A stable colour per slice name.
std::string Colour(const std::string& name) {
  uint32_t hash = 2166136261u;
  for (char c : name) hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
  return "hsl(" + std::to_string(hash % 360) + ",55%,68%)";
}

std::string AnnotationText(const Annotation& a) {
  return std::visit(
      [](const auto& value) -> std::string {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return value;
        } else if constexpr (std::is_same_v<T, bool>) {
          return value ? "true" : "false";
        } else if constexpr (std::is_same_v<T, double>) {
          char buffer[32];
          std::snprintf(buffer, sizeof(buffer), "%g", value);
          return buffer;
        } else {
          return std::to_string(value);
        }
      },
      a.value);
}

class Renderer {
 public:
  Renderer(const ParsedTrace& trace, const SvgOptions& options)
      : trace_(trace), width_(options.width_px) {
    if (width_ < kLabelWidth + kRightMargin + 100) {
      throw Error("trace-svg: width " + std::to_string(width_) + " px is too small (at least " +
                  std::to_string(kLabelWidth + kRightMargin + 100) + ")");
    }
    uint64_t first = UINT64_MAX, last = 0;
    for (const ParsedSlice& s : trace.slices) {
      first = std::min(first, s.begin_ns);
      last = std::max(last, s.end_ns);
    }
    for (const ParsedCounterSample& c : trace.counters) {
      first = std::min(first, c.time_ns);
      last = std::max(last, c.time_ns);
    }
    if (first == UINT64_MAX) first = 0;
    from_ = options.from_ns.value_or(first);
    to_ = options.to_ns.value_or(std::max(last, from_ + 1));
    if (to_ <= from_) {
      throw Error("trace-svg: empty time window (from " + Micros(from_) + " to " + Micros(to_) + ")");
    }
    plot_width_ = width_ - kLabelWidth - kRightMargin;
    scale_ = plot_width_ / static_cast<double>(to_ - from_);
    for (const ParsedSlice& s : trace.slices) slices_[s.track].push_back(&s);
    for (const ParsedCounterSample& c : trace.counters) counters_[c.track].push_back(&c);
  }

  std::string Render() {
    // Children in (sibling order, declaration order).
    std::unordered_map<uint64_t, std::vector<const ParsedTrack*>> children;
    std::vector<const ParsedTrack*> roots;
    for (const ParsedTrack& t : trace_.tracks) {
      (t.parent_uuid == 0 ? roots : children[t.parent_uuid]).push_back(&t);
    }
    auto by_order = [](const ParsedTrack* a, const ParsedTrack* b) { return a->order < b->order; };
    std::stable_sort(roots.begin(), roots.end(), by_order);
    for (auto& [uuid, list] : children) std::stable_sort(list.begin(), list.end(), by_order);

    int y = kAxisHeight;
    std::vector<std::pair<const ParsedTrack*, int>> stack;  // track, tree depth
    for (auto it = roots.rbegin(); it != roots.rend(); ++it) stack.emplace_back(*it, 0);
    while (!stack.empty()) {
      const auto [track, depth] = stack.back();
      stack.pop_back();
      y += Row(*track, depth, y);
      auto& kids = children[track->uuid];
      for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.emplace_back(*it, depth + 1);
    }
    const int height = y + 4;
    std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                      std::to_string(width_) + "\" height=\"" + std::to_string(height) +
                      "\" font-family=\"sans-serif\" font-size=\"11\">\n"
                      "<defs><marker id=\"arrow\" viewBox=\"0 0 6 6\" refX=\"6\" refY=\"3\" "
                      "markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0 L6,3 "
                      "L0,6 z\" fill=\"#2c3e50\"/></marker></defs>\n"
                      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    out += Axis(height);
    out += body_;
    out += Flows();
    out += "</svg>\n";
    return out;
  }

 private:
  double X(uint64_t ns) const {
    const double t = static_cast<double>(std::clamp(ns, from_, to_) - from_);
    return kLabelWidth + t * scale_;
  }

  void Label(const std::string& text, int depth, int y, bool bold) {
    body_ += "<text x=\"" + std::to_string(6 + depth * kIndent) + "\" y=\"" +
             std::to_string(y) + "\"" + (bold ? " font-weight=\"bold\"" : "") + ">" +
             XmlEscape(text) + "</text>\n";
  }

  std::string Axis(int height) const {
    // A step of 1, 2 or 5 times a power of ten giving at most ~10 ticks.
    const double span_us = static_cast<double>(to_ - from_) / 1000.0;
    double step = std::pow(10.0, std::floor(std::log10(span_us / 10.0)));
    if (span_us / step > 10) step *= 2;
    if (span_us / step > 10) step *= 2.5;
    std::string out = "<g class=\"axis\" stroke=\"#ccc\">\n";
    std::string labels;
    const double first_us = std::ceil(static_cast<double>(from_) / 1000.0 / step) * step;
    for (double t = first_us; t * 1000.0 <= static_cast<double>(to_) + 1e-6; t += step) {
      const double x = kLabelWidth + (t * 1000.0 - static_cast<double>(from_)) * scale_;
      out += "<line x1=\"" + Num(x) + "\" y1=\"" + std::to_string(kAxisHeight - 6) + "\" x2=\"" +
             Num(x) + "\" y2=\"" + std::to_string(height) + "\"/>\n";
      char text[32];
      std::snprintf(text, sizeof(text), "%g", t);
      labels += "<text x=\"" + Num(x + 2) + "\" y=\"14\">" + text + " us</text>\n";
    }
    return out + "</g>\n" + labels;
  }

  // Draws one track's row at `y`; returns its height.
  int Row(const ParsedTrack& track, int depth, int y) {
    if (track.is_process) {
      Label(track.name, depth, y + 15, true);
      body_ += "<line x1=\"0\" y1=\"" + std::to_string(y) + "\" x2=\"" + std::to_string(width_) +
               "\" y2=\"" + std::to_string(y) + "\" stroke=\"#888\"/>\n";
      return kHeaderHeight;
    }
    Label(track.name, depth, y + 12, false);
    if (track.is_counter) return CounterRow(track, y);
    return SliceRow(track, y);
  }

  struct Pending {
    double x0 = 0, x1 = -1;
    std::size_t count = 0;
    const ParsedSlice* first = nullptr;
  };

  static std::string Title(const ParsedSlice& s) {
    std::string title = s.name + " (" + Micros(s.begin_ns) + " + " +
                        Micros(s.end_ns - s.begin_ns) + ")";
    for (const Annotation& a : s.annotations) title += "\n" + a.name + ": " + AnnotationText(a);
    return title;
  }

  // One box (at least a pixel wide) for a run of slices too narrow to draw one by one.
  void FlushPending(Pending& p, int lane_y) {
    if (p.count == 0) return;
    const std::string title =
        p.count == 1 ? Title(*p.first) : std::to_string(p.count) + " slices";
    body_ += "<rect x=\"" + Num(p.x0) + "\" y=\"" + std::to_string(lane_y) + "\" width=\"" +
             Num(std::max(1.0, p.x1 - p.x0)) + "\" height=\"" + std::to_string(kLaneHeight - 2) +
             "\" fill=\"" + (p.count == 1 ? Colour(p.first->name) : std::string("#999")) +
             "\"><title>" + XmlEscape(title) + "</title></rect>\n";
    p = Pending{};
  }

  int SliceRow(const ParsedTrack& track, int y) {
    const auto found = slices_.find(track.uuid);
    if (found == slices_.end()) return kLaneHeight + 4;
    uint32_t lanes = 1;
    std::vector<Pending> pending;
    for (const ParsedSlice* s : found->second) {
      if (s->end_ns < from_ || s->begin_ns > to_) continue;
      lanes = std::max(lanes, s->depth + 1);
      if (pending.size() <= s->depth) pending.resize(s->depth + 1);
      const int lane_y = y + 2 + static_cast<int>(s->depth) * kLaneHeight;
      const double x0 = X(s->begin_ns), x1 = X(s->end_ns);
      const double mid_y = lane_y + kLaneHeight / 2.0;
      for (uint64_t id : s->flow_out) flow_from_[id] = Point{x1, mid_y};
      for (uint64_t id : s->flow_in) flow_to_[id] = Point{x0, mid_y};
      Pending& p = pending[s->depth];
      if (x1 - x0 < 1.0) {  // too narrow to see: merge with its narrow neighbours
        if (p.count > 0 && x0 > p.x1 + 1.0) FlushPending(p, lane_y);
        if (p.count == 0) {
          p.x0 = x0;
          p.first = s;
        }
        p.x1 = std::max(p.x1, x1);
        ++p.count;
        continue;
      }
      FlushPending(p, lane_y);
      const std::string title = Title(*s);
      body_ += "<g><rect x=\"" + Num(x0) + "\" y=\"" + std::to_string(lane_y) + "\" width=\"" +
               Num(x1 - x0) + "\" height=\"" + std::to_string(kLaneHeight - 2) + "\" fill=\"" +
               Colour(s->name) + "\" stroke=\"#555\" stroke-width=\"0.3\"><title>" +
               XmlEscape(title) + "</title></rect>";
      if (x1 - x0 > kCharWidth * static_cast<double>(s->name.size()) + 4) {
        body_ += "<text x=\"" + Num(x0 + 2) + "\" y=\"" + std::to_string(lane_y + 11) + "\">" +
                 XmlEscape(s->name) + "</text>";
      }
      body_ += "</g>\n";
    }
    for (std::size_t lane = 0; lane < pending.size(); ++lane) {
      FlushPending(pending[lane], y + 2 + static_cast<int>(lane) * kLaneHeight);
    }
    return static_cast<int>(lanes) * kLaneHeight + 4;
  }

  int CounterRow(const ParsedTrack& track, int y) {
    const auto found = counters_.find(track.uuid);
    if (found == counters_.end()) return kCounterHeight;
    double max_value = 0;
    for (const ParsedCounterSample* c : found->second) max_value = std::max(max_value, c->value);
    if (max_value <= 0) max_value = 1;
    const double base = y + kCounterHeight - 4;
    const double span = kCounterHeight - 8;
    auto Y = [&](double v) { return base - std::max(0.0, v) / max_value * span; };
    // A step line: one point pair per pixel column that has samples (the column's range as a
    // vertical stroke), so millions of samples stay a few thousand points.
    std::string points;
    double previous = 0;
    long column = -1;
    double col_min = 0, col_max = 0, col_last = 0;
    auto flush = [&] {
      if (column < 0) return;
      if (points.empty()) points = std::to_string(kLabelWidth) + "," + Num(Y(previous)) + " ";
      const std::string x = std::to_string(column);
      points += x + "," + Num(Y(previous)) + " " + x + "," + Num(Y(col_min)) + " " + x + "," +
                Num(Y(col_max)) + " " + x + "," + Num(Y(col_last)) + " ";
      previous = col_last;
    };
    for (const ParsedCounterSample* c : found->second) {
      if (c->time_ns < from_ || c->time_ns > to_) {
        if (c->time_ns < from_) previous = c->value;
        continue;
      }
      const long px = std::lround(X(c->time_ns));
      if (px != column) {
        flush();
        column = px;
        col_min = col_max = c->value;
      }
      col_min = std::min(col_min, c->value);
      col_max = std::max(col_max, c->value);
      col_last = c->value;
    }
    flush();
    if (points.empty()) points = std::to_string(kLabelWidth) + "," + Num(Y(previous)) + " ";
    points += std::to_string(kLabelWidth + plot_width_) + "," + Num(Y(previous));
    char peak[48];
    std::snprintf(peak, sizeof(peak), "max %g", max_value);
    body_ += "<polyline fill=\"none\" stroke=\"#c0392b\" points=\"" + points + "\"><title>" +
             XmlEscape(track.name) + " (" + peak + ")</title></polyline>\n";
    body_ += "<text x=\"" + std::to_string(kLabelWidth - 4) + "\" y=\"" +
             std::to_string(y + 24) + "\" text-anchor=\"end\" fill=\"#888\">" + peak + "</text>\n";
    return kCounterHeight;
  }

  // Flow arrows from the end of the slice a flow leaves to the start of the one it enters.
  std::string Flows() const {
    std::string out = "<g class=\"flows\" stroke=\"#2c3e50\" stroke-width=\"0.8\" fill=\"none\">\n";
    std::size_t drawn = 0;
    for (const auto& [id, from] : flow_from_) {
      const auto to = flow_to_.find(id);
      if (to == flow_to_.end()) continue;
      if (++drawn > kMaxFlows) break;  // beyond this, arrows hide the slices
      out += "<path d=\"M" + Num(from.x) + "," + Num(from.y) + " L" + Num(to->second.x) + "," +
             Num(to->second.y) + "\" marker-end=\"url(#arrow)\"><title>flow " +
             std::to_string(id) + "</title></path>\n";
    }
    return out + "</g>\n";
  }

  struct Point {
    double x, y;
  };
  static constexpr std::size_t kMaxFlows = 2000;

  const ParsedTrace& trace_;
  int width_;
  std::unordered_map<uint64_t, Point> flow_from_, flow_to_;
  uint64_t from_ = 0, to_ = 1;
  int plot_width_ = 0;
  double scale_ = 1;
  std::unordered_map<uint64_t, std::vector<const ParsedSlice*>> slices_;
  std::unordered_map<uint64_t, std::vector<const ParsedCounterSample*>> counters_;
  std::string body_;
};

}  // namespace

std::string RenderTraceSvg(const ParsedTrace& trace, const SvgOptions& options) {
  return Renderer(trace, options).Render();
}

}  // namespace tpusim::traces

// End-to-end runs of control flow (while, conditional, call) through the built binary: each
// module runs with `tpusim run --check` against the reference evaluator, and its outputs are
// compared with values computed here from XLA's semantics. Inputs are chosen so that every
// expected value is exact in f32 (small multiples of 1/4), so the comparisons are bit-exact.
#include <catch2/catch.hpp>

#include <cstring>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "isa/npy.h"
#include "tests/compiler/memory_planning_modules.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::isa::ElementType;

fs::path WriteModule(const fs::path& dir, const std::string& text) {
  const fs::path path = dir / "module.hlo";
  WriteText(path, text);
  return path;
}

// x[i] = ((i * 7) % 64 - 32) / 4: exact quarter values in [-8, 8).
std::vector<float> Quarters(std::size_t n, int salt) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<float>((static_cast<int>(i) * 7 + salt) % 64 - 32) / 4.0f;
  return values;
}

std::string WriteF32(const fs::path& dir, const std::string& name, const std::vector<float>& values,
                     std::vector<int64_t> dims) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  const fs::path path = dir / (name + ".npy");
  tpusim::isa::WriteNpy(path.string(), ElementType::kF32, dims, bytes);
  return " --input " + name + "=" + path.string();
}

template <typename T>
std::string WriteScalar(const fs::path& dir, const std::string& name, ElementType type, T value) {
  std::vector<uint8_t> bytes(sizeof(T));
  std::memcpy(bytes.data(), &value, sizeof(T));
  const fs::path path = dir / (name + ".npy");
  tpusim::isa::WriteNpy(path.string(), type, std::vector<int64_t>{}, bytes);
  return " --input " + name + "=" + path.string();
}

std::vector<float> OutputF32(const fs::path& dir, int index) {
  const auto array = ReadOutput(dir / "out" / ("output_" + std::to_string(index) + ".npy"), ElementType::kF32);
  std::vector<float> values(array.data.size() / 4);
  std::memcpy(values.data(), array.data.data(), array.data.size());
  return values;
}

int64_t OutputS64(const fs::path& dir, int index) {
  const auto array = ReadOutput(dir / "out" / ("output_" + std::to_string(index) + ".npy"), ElementType::kS64);
  REQUIRE(array.data.size() == 8);
  int64_t value = 0;
  std::memcpy(&value, array.data.data(), 8);
  return value;
}

std::string RunChecked(const fs::path& module, const fs::path& dir, const std::string& args, bool check = true) {
  const std::string output = RunOk("run " + module.string() + args + (check ? " --check" : "") + " --config tiny --out " +
                                   (dir / "out").string() + " --report " + (dir / "report.json").string());
  if (check) CHECK_THAT(output, Catch::Contains("check passed"));
  return output;
}

// The summed cycles of the report's op `name`.
uint64_t OpCycles(const fs::path& report, const std::string& name) {
  const std::string json = ReadText(report);
  std::smatch match;
  const std::regex pattern("\"name\": \"" + name + "\", [^}]*\"cycles\": ([0-9]+)");
  REQUIRE(std::regex_search(json, match, pattern));
  return std::stoull(match[1]);
}

// acc += x, N times, with an s32 counter: the state is (s32[], f32[8,128], f32[8,128]).
std::string AccumulateLoop(int n) {
  return R"(HloModule accumulate
cond {
  s = (s32[], f32[8,128], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant()" + std::to_string(n) + R"()
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[8,128], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  acc = f32[8,128] get-tuple-element(s), index=1
  x = f32[8,128] get-tuple-element(s), index=2
  acc1 = f32[8,128] add(acc, x)
  ROOT t = (s32[], f32[8,128], f32[8,128]) tuple(i1, acc1, x)
}
ENTRY e {
  x = f32[8,128] parameter(0)
  zero = s32[] constant(0)
  z = f32[] constant(0)
  acc0 = f32[8,128] broadcast(z), dimensions={}
  init = (s32[], f32[8,128], f32[8,128]) tuple(zero, acc0, x)
  w = (s32[], f32[8,128], f32[8,128]) while(init), condition=cond, body=body
  ROOT r = f32[8,128] get-tuple-element(w), index=1
}
)";
}

}  // namespace

TEST_CASE("control flow: the while.hlo workload (s64 state, condition x < x) returns its input", "[control_flow]") {
  const fs::path dir = TempDir("cf_while_workload");
  const fs::path workload = fs::path(TPUSIM_SHARED_DIR) / "workloads/xla/while.hlo";
  const std::string input = WriteScalar<int64_t>(dir, "0", ElementType::kS64, 7);
  const std::string output = RunOk("run " + workload.string() + input + " --check --out " + (dir / "out").string());
  CHECK_THAT(output, Catch::Contains("check passed"));
  // x < x is false: the body never runs and the loop returns its init.
  CHECK(OutputS64(dir, 0) == 7);
}

TEST_CASE("control flow: a while loop adds an f32[8,128] state N times", "[control_flow]") {
  const std::vector<float> x = Quarters(8 * 128, 3);
  uint64_t cycles_1 = 0;
  uint64_t cycles_8 = 0;
  for (int n : {1, 5, 8}) {
    const fs::path dir = TempDir("cf_accumulate_" + std::to_string(n));
    const fs::path module = WriteModule(dir, AccumulateLoop(n));
    RunChecked(module, dir, WriteF32(dir, "x", x, {8, 128}));
    // k x is exact: |k x| <= 64 in quarters.
    const std::vector<float> got = OutputF32(dir, 0);
    REQUIRE(got.size() == x.size());
    int wrong = 0;
    for (std::size_t i = 0; i < x.size(); ++i) wrong += got[i] != static_cast<float>(n) * x[i];
    CHECK(wrong == 0);
    const fs::path report = dir / "report.json";
    // No w/next_state: the counter and acc1 write their state elements in place (element-wise ops
    // over operands nothing reads afterwards), so nothing is copied back.
    for (const char* op : {"w/init", "w/cond/lt", "w/predicate", "w/body/i1", "w/body/acc1"}) {
      INFO(op);
      CHECK(OpCycles(report, op) > 0);
    }
    CHECK_THAT(ReadText(report), !Catch::Contains("\"w/next_state\""));
    if (n == 1) cycles_1 = OpCycles(report, "w/body/acc1");
    if (n == 8) cycles_8 = OpCycles(report, "w/body/acc1");
  }
  // Timing-only moves no bulk data but still the loop's scalars: the same 8 iterations, the same
  // cycles.
  {
    const fs::path dir = TempDir("cf_accumulate_timing");
    const fs::path module = WriteModule(dir, AccumulateLoop(8));
    const std::string input = WriteF32(dir, "x", x, {8, 128});
    RunOk("run " + module.string() + input + " --report " + (dir / "f.json").string());
    RunOk("run " + module.string() + input + " --timing-only --report " + (dir / "t.json").string());
    CHECK(ReportNumber(dir / "t.json", "total_cycles") == ReportNumber(dir / "f.json", "total_cycles"));
    CHECK(OpCycles(dir / "t.json", "w/body/acc1") == OpCycles(dir / "f.json", "w/body/acc1"));
  }
  // The report sums a kernel's times over the iterations: 8 runs of the body's add take about 8
  // times one run (each iteration moves the same bytes; 10% for the first run's colder start).
  INFO("1 iteration: " << cycles_1 << " cycles, 8 iterations: " << cycles_8);
  CHECK(cycles_8 >= 7.2 * cycles_1);
  CHECK(cycles_8 <= 8.8 * cycles_1);
}

TEST_CASE("control flow: a loop body's constants stay intact, and a fused update writes the state in place",
          "[control_flow]") {
  // Each iteration reads the body's constants afresh, so no kernel may write over them: y = c + x
  // and v = dynamic-update-slice(k, x, i) need buffers of their own (writing over c or k once
  // broke every later iteration). z = (x + c) * 2 is one fused kernel that reads x only at its own
  // indices, so it writes the state element z in place, and nothing is copied back.
  const fs::path dir = TempDir("cf_constants_in_body");
  const fs::path module = WriteModule(dir, R"(HloModule constants_in_body
cond {
  s = (s32[], f32[4], f32[8], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[4], f32[8], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[4] get-tuple-element(s), index=1
  z = f32[8,128] get-tuple-element(s), index=3
  one = s32[] constant(1)
  j = s32[] add(i, one)
  c = f32[4] constant({1, 2, 3, 4})
  y = f32[4] add(c, x)
  k = f32[8] constant({-1, -2, -3, -4, -5, -6, -7, -8})
  v = f32[8] dynamic-update-slice(k, x, i)
  h = f32[] constant(0.5)
  hb = f32[8,128] broadcast(h), dimensions={}
  two = f32[] constant(2)
  tb = f32[8,128] broadcast(two), dimensions={}
  zh = f32[8,128] add(z, hb)
  z2 = f32[8,128] multiply(zh, tb)
  ROOT t = (s32[], f32[4], f32[8], f32[8,128]) tuple(j, y, v, z2)
}
ENTRY main {
  p = f32[4] parameter(0)
  q = f32[8,128] parameter(1)
  zero = s32[] constant(0)
  e = f32[8] constant({0, 0, 0, 0, 0, 0, 0, 0})
  init = (s32[], f32[4], f32[8], f32[8,128]) tuple(zero, p, e, q)
  w = (s32[], f32[4], f32[8], f32[8,128]) while(init), condition=cond, body=body
  r1 = f32[4] get-tuple-element(w), index=1
  r2 = f32[8] get-tuple-element(w), index=2
  r3 = f32[8,128] get-tuple-element(w), index=3
  ROOT r = (f32[4], f32[8], f32[8,128]) tuple(r1, r2, r3)
}
)");
  const std::vector<float> p = {0.25f, -0.5f, 1.0f, 2.0f};
  const std::vector<float> q = Quarters(8 * 128, 5);
  RunChecked(module, dir, WriteF32(dir, "p", p, {4}) + WriteF32(dir, "q", q, {8, 128}));
  // After 3 iterations x = p + 3c; v is k with the third iteration's x (p + 2c) at 2..5.
  const std::vector<float> c = {1, 2, 3, 4};
  const std::vector<float> x = OutputF32(dir, 0);
  REQUIRE(x.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) CHECK(x[i] == p[i] + 3 * c[i]);
  const std::vector<float> v = OutputF32(dir, 1);
  const std::vector<float> expected_v = {-1, -2, p[0] + 2 * c[0], p[1] + 2 * c[1], p[2] + 2 * c[2], p[3] + 2 * c[3], -7, -8};
  CHECK(v == expected_v);
  // z: three times (z + 0.5) * 2 = 8 z + 7; exact for quarters in [-8, 8).
  const std::vector<float> z = OutputF32(dir, 2);
  REQUIRE(z.size() == q.size());
  int wrong = 0;
  for (std::size_t i = 0; i < q.size(); ++i) wrong += z[i] != 8 * q[i] + 7;
  CHECK(wrong == 0);
  CHECK(OpCycles(dir / "report.json", "w/body/z2") > 0);
  // The program's buffers: y and v are not c's and k's; z2 is the state element w.3 itself.
  RunOk("compile " + module.string() + " --config tiny -o " + (dir / "p.tpuasm").string());
  const std::string program = ReadText(dir / "p.tpuasm");
  const auto address_of = [&](const std::string& buffer) {
    std::smatch match;
    REQUIRE(std::regex_search(program, match, std::regex("\\.buffer " + buffer + ", hbm\\[(0x[0-9a-f]+)\\]")));
    return match[1].str();
  };
  CHECK(address_of("hbm.w_body_y") != address_of("hbm.body.c"));
  CHECK(address_of("hbm.w_body_v") != address_of("hbm.body.k"));
  CHECK(address_of("hbm.w_body_z2") == address_of("hbm.w.3"));
}

TEST_CASE("control flow: an s64 counter and sum of squares on the scalar core", "[control_flow]") {
  const fs::path dir = TempDir("cf_s64_loop");
  const fs::path module = WriteModule(dir, R"(HloModule squares
cond {
  s = (s64[], s64[]) parameter(0)
  i = s64[] get-tuple-element(s), index=0
  n = s64[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s64[], s64[]) parameter(0)
  i = s64[] get-tuple-element(s), index=0
  total = s64[] get-tuple-element(s), index=1
  sq = s64[] multiply(i, i)
  total1 = s64[] add(total, sq)
  one = s64[] constant(1)
  i1 = s64[] add(i, one)
  ROOT t = (s64[], s64[]) tuple(i1, total1)
}
ENTRY e {
  start = s64[] parameter(0)
  zero = s64[] constant(0)
  init = (s64[], s64[]) tuple(start, zero)
  ROOT w = (s64[], s64[]) while(init), condition=cond, body=body
}
)");
  RunChecked(module, dir, WriteScalar<int64_t>(dir, "start", ElementType::kS64, -3));
  // i runs -3..9: sum of squares = (9 + 4 + 1) + (0 + 1 + ... + 81) = 14 + 285.
  CHECK(OutputS64(dir, 0) == 10);
  CHECK(OutputS64(dir, 1) == 299);
}

TEST_CASE("control flow: a loop body that swaps two state arrays", "[control_flow]") {
  const fs::path dir = TempDir("cf_swap");
  const fs::path module = WriteModule(dir, R"(HloModule swap
cond {
  s = (s32[], f32[8,128], f32[16,128]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[8,128], f32[16,128]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  a = f32[8,128] get-tuple-element(s), index=1
  b = f32[16,128] get-tuple-element(s), index=2
  b0 = f32[8,128] slice(b), slice={[0:8], [0:128]}
  b1 = f32[8,128] slice(b), slice={[8:16], [0:128]}
  a1 = f32[8,128] add(b0, b1)
  c = f32[16,128] concatenate(a, a), dimensions={0}
  ROOT t = (s32[], f32[8,128], f32[16,128]) tuple(i1, a1, c)
}
ENTRY e {
  x = f32[8,128] parameter(0)
  y = f32[16,128] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[8,128], f32[16,128]) tuple(zero, x, y)
  ROOT w = (s32[], f32[8,128], f32[16,128]) while(init), condition=cond, body=body
}
)");
  const std::vector<float> x = Quarters(8 * 128, 1);
  const std::vector<float> y = Quarters(16 * 128, 5);
  RunChecked(module, dir, WriteF32(dir, "x", x, {8, 128}) + WriteF32(dir, "y", y, {16, 128}));
  // Each iteration: a <- b[0:8] + b[8:16], b <- [a; a], both from the old state.
  std::vector<float> a = x;
  std::vector<float> b = y;
  for (int k = 0; k < 3; ++k) {
    std::vector<float> a1(1024), b1(2048);
    for (int i = 0; i < 1024; ++i) a1[i] = b[i] + b[1024 + i];
    for (int i = 0; i < 2048; ++i) b1[i] = a[i % 1024];
    a = a1;
    b = b1;
  }
  CHECK(OutputF32(dir, 1) == a);
  CHECK(OutputF32(dir, 2) == b);
}

TEST_CASE("control flow: a loop whose state starts from one array in two leaves", "[control_flow]") {
  // MaxText's scan starts two stacks from one broadcast of zeros: the first leaf takes over the
  // array's buffer, the second is copied from it as the loop starts, before the body writes the
  // first (compiler/passes/buffer_assignment.cc, compiler/lower/control_flow.cc).
  const fs::path dir = TempDir("cf_shared_init");
  const fs::path module = WriteModule(dir, R"(HloModule shared_init
cond {
  s = (s32[], f32[8,128], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[8,128], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  a = f32[8,128] get-tuple-element(s), index=1
  b = f32[8,128] get-tuple-element(s), index=2
  a1 = f32[8,128] add(a, a)
  b1 = f32[8,128] add(b, a)
  ROOT t = (s32[], f32[8,128], f32[8,128]) tuple(i1, a1, b1)
}
ENTRY e {
  x = f32[8,128] parameter(0)
  z = f32[8,128] negate(x)
  zero = s32[] constant(0)
  init = (s32[], f32[8,128], f32[8,128]) tuple(zero, z, z)
  ROOT w = (s32[], f32[8,128], f32[8,128]) while(init), condition=cond, body=body
}
)");
  const std::vector<float> x = Quarters(8 * 128, 3);
  RunChecked(module, dir, WriteF32(dir, "x", x, {8, 128}));
  // a and b start at -x; each iteration b <- b + a, a <- 2a: after 3, a = -8x and b = -8x too
  // (b: -x - x - 2x - 4x).
  std::vector<float> want(1024);
  for (int i = 0; i < 1024; ++i) want[i] = -8 * x[i];
  CHECK(OutputF32(dir, 1) == want);
  CHECK(OutputF32(dir, 2) == want);
}

TEST_CASE("control flow: a loop body whose values go between the caller's buffers", "[control_flow]") {
  // The body's 8 MiB (a broadcast and its reverse) go where a was, below b, which the caller
  // reads after the loop (tests/compiler/memory_scheduler_test.cc): b and the results must come
  // through intact.
  const fs::path dir = TempDir("cf_loop_in_hole");
  const fs::path module = WriteModule(dir, tpusim::memory_planning_test::kLoopInAHole);
  CHECK_THAT(RunOk("run " + module.string() + " --check"), Catch::Contains("check passed"));
}

TEST_CASE("control flow: a pred conditional runs the true or the false branch", "[control_flow]") {
  const std::string text = R"(HloModule cond
on_true {
  p = f32[8,128] parameter(0)
  ROOT n = f32[8,128] negate(p)
}
on_false {
  p = f32[8,128] parameter(0)
  two = f32[] constant(2)
  b = f32[8,128] broadcast(two), dimensions={}
  ROOT m = f32[8,128] multiply(p, b)
}
ENTRY e {
  pr = pred[] parameter(0)
  x = f32[8,128] parameter(1)
  ROOT r = f32[8,128] conditional(pr, x, x), true_computation=on_true, false_computation=on_false
}
)";
  const std::vector<float> x = Quarters(8 * 128, 9);
  for (bool taken : {true, false}) {
    const fs::path dir = TempDir(taken ? "cf_cond_true" : "cf_cond_false");
    const fs::path module = WriteModule(dir, text);
    RunChecked(module, dir, WriteScalar<uint8_t>(dir, "pr", ElementType::kPred, taken) + WriteF32(dir, "x", x, {8, 128}));
    std::vector<float> want(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) want[i] = taken ? -x[i] : 2 * x[i];
    CHECK(OutputF32(dir, 0) == want);
    const std::string report = ReadText(dir / "report.json");
    // Only the branch that ran appears among the ops.
    CHECK((report.find("\"r/on_true/n\"") != std::string::npos) == taken);
    CHECK((report.find("\"r/on_false/m\"") != std::string::npos) == !taken);
  }
}

TEST_CASE("control flow: an s32-indexed conditional, an index out of range runs the last branch", "[control_flow]") {
  const std::string text = R"(HloModule indexed
b0 {
  p = f32[8,128] parameter(0)
  c = f32[] constant(1)
  b = f32[8,128] broadcast(c), dimensions={}
  ROOT r = f32[8,128] add(p, b)
}
b1 {
  p = f32[8,128] parameter(0)
  c = f32[] constant(3)
  b = f32[8,128] broadcast(c), dimensions={}
  ROOT r = f32[8,128] multiply(p, b)
}
b2 {
  p = f32[8,128] parameter(0)
  c = f32[] constant(1)
  b = f32[8,128] broadcast(c), dimensions={}
  ROOT r = f32[8,128] subtract(p, b)
}
ENTRY e {
  k = s32[] parameter(0)
  x = f32[8,128] parameter(1)
  y = f32[8,128] parameter(2)
  ROOT r = f32[8,128] conditional(k, x, y, y), branch_computations={b0, b1, b2}
}
)";
  const std::vector<float> x = Quarters(8 * 128, 2);
  const std::vector<float> y = Quarters(8 * 128, 11);
  for (int32_t k : {0, 1, 2, 7, -1}) {
    const fs::path dir = TempDir("cf_indexed_" + std::to_string(k + 1));
    const fs::path module = WriteModule(dir, text);
    // --check only where branch k's operand is the first: compiler/eval's conditional passes
    // every operand to the branch, so its parameter(0) is always the first (x here), which is
    // wrong for branches 1 and 2 (they take y). The values below are XLA's.
    RunChecked(module, dir,
               WriteScalar<int32_t>(dir, "k", ElementType::kS32, k) + WriteF32(dir, "x", x, {8, 128}) +
                   WriteF32(dir, "y", y, {8, 128}),
               k == 0);
    std::vector<float> want(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      want[i] = k == 0 ? x[i] + 1 : k == 1 ? y[i] * 3 : y[i] - 1;
    }
    INFO("index " << k);
    CHECK(OutputF32(dir, 0) == want);
  }
}

TEST_CASE("control flow: nested calls, and one computation called at two places", "[control_flow]") {
  const fs::path dir = TempDir("cf_calls");
  const fs::path module = WriteModule(dir, R"(HloModule calls
inner {
  a = f32[8,128] parameter(0)
  ROOT s = f32[8,128] add(a, a)
}
outer {
  a = f32[8,128] parameter(0)
  c = f32[8,128] call(a), to_apply=inner
  ROOT m = f32[8,128] multiply(c, a)
}
ENTRY e {
  x = f32[8,128] parameter(0)
  r = f32[8,128] call(x), to_apply=outer
  d = f32[8,128] call(r), to_apply=inner
  ROOT t = (f32[8,128], f32[8,128]) tuple(r, d)
}
)");
  const std::vector<float> x = Quarters(8 * 128, 4);
  RunChecked(module, dir, WriteF32(dir, "x", x, {8, 128}));
  std::vector<float> r(x.size()), d(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    r[i] = (x[i] + x[i]) * x[i];
    d[i] = r[i] + r[i];
  }
  CHECK(OutputF32(dir, 0) == r);
  CHECK(OutputF32(dir, 1) == d);
  const std::string report = ReadText(dir / "report.json");
  // Inlined (compiler/passes/call_inliner.h): outer's copy "r.m" fuses with the copy of inner's
  // add it reads, "r.c.s"; d's copy of inner, "d.s", reads r.m, an output, so it is a kernel too.
  CHECK_THAT(report, !Catch::Contains("\"r.c.s\""));
  for (const char* op : {"r.m", "d.s"}) {
    INFO(op);
    CHECK_THAT(report, Catch::Contains(std::string("\"") + op + "\""));
  }
}

TEST_CASE("control flow: a loop on an f32 scalar condition, with -0 and NaN starts", "[control_flow]") {
  const std::string text = R"(HloModule fcond
cond {
  s = (f32[], f32[8,128], f32[8,128]) parameter(0)
  t = f32[] get-tuple-element(s), index=0
  two = f32[] constant(2)
  ROOT lt = pred[] compare(t, two), direction=LT
}
body {
  s = (f32[], f32[8,128], f32[8,128]) parameter(0)
  t = f32[] get-tuple-element(s), index=0
  half = f32[] constant(0.5)
  t1 = f32[] add(t, half)
  acc = f32[8,128] get-tuple-element(s), index=1
  x = f32[8,128] get-tuple-element(s), index=2
  acc1 = f32[8,128] add(acc, x)
  ROOT r = (f32[], f32[8,128], f32[8,128]) tuple(t1, acc1, x)
}
ENTRY e {
  t0 = f32[] parameter(0)
  x = f32[8,128] parameter(1)
  z = f32[] constant(0)
  acc0 = f32[8,128] broadcast(z), dimensions={}
  init = (f32[], f32[8,128], f32[8,128]) tuple(t0, acc0, x)
  w = (f32[], f32[8,128], f32[8,128]) while(init), condition=cond, body=body
  ROOT a = f32[8,128] get-tuple-element(w), index=1
}
)";
  const std::vector<float> x = Quarters(8 * 128, 6);
  // -0 < 2 (IEEE: -0 is 0): t = -0, 0.5, 1, 1.5 run the body, 4 times; -3 runs it 10 times;
  // NaN < 2 is false: never.
  struct Start { float t0; int runs; const char* name; };
  for (const Start start : {Start{-0.0f, 4, "neg_zero"}, Start{-3.0f, 10, "minus_three"},
                            Start{std::numeric_limits<float>::quiet_NaN(), 0, "nan"}}) {
    INFO(start.name);
    const fs::path dir = TempDir(std::string("cf_fcond_") + start.name);
    const fs::path module = WriteModule(dir, text);
    RunChecked(module, dir, WriteScalar<float>(dir, "t0", ElementType::kF32, start.t0) + WriteF32(dir, "x", x, {8, 128}));
    std::vector<float> want(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) want[i] = static_cast<float>(start.runs) * x[i];
    CHECK(OutputF32(dir, 0) == want);
  }
}

TEST_CASE("control flow: a conditional branch reading a tuple operand in place", "[control_flow]") {
  // Values checked here only: compiler/eval's conditional passes every operand to the branch
  // (parameter(0) is then x, not the tuple), so no --check.
  const fs::path dir = TempDir("cf_tuple_branch");
  const fs::path module = WriteModule(dir, R"(HloModule tuple_branch
b0 {
  p = f32[8,128] parameter(0)
  ROOT r = f32[8,128] negate(p)
}
b1 {
  p = (f32[8,128], f32[8,128]) parameter(0)
  u = f32[8,128] get-tuple-element(p), index=0
  v = f32[8,128] get-tuple-element(p), index=1
  ROOT r = f32[8,128] subtract(u, v)
}
ENTRY e {
  k = s32[] parameter(0)
  x = f32[8,128] parameter(1)
  y = f32[8,128] parameter(2)
  t = (f32[8,128], f32[8,128]) tuple(x, y)
  ROOT r = f32[8,128] conditional(k, x, t), branch_computations={b0, b1}
}
)");
  const std::vector<float> x = Quarters(8 * 128, 2);
  const std::vector<float> y = Quarters(8 * 128, 13);
  RunOk("run " + module.string() + WriteScalar<int32_t>(dir, "k", ElementType::kS32, 1) +
        WriteF32(dir, "x", x, {8, 128}) + WriteF32(dir, "y", y, {8, 128}) +
        " --config tiny --out " + (dir / "out").string());
  std::vector<float> want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] - y[i];
  CHECK(OutputF32(dir, 0) == want);
}

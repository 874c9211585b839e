// End-to-end runs of reduces over size-1 dims (compiler/passes/unit_reduces.h): reducer(init,
// x) per element, for reducers and types the general reduce kernel does not take (pred, any
// element-wise computation), with values computed here by hand and the evaluator's --check.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "isa/npy.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::isa::ElementType;

std::string RunModule(const fs::path& dir, const std::string& text, const std::string& args) {
  const fs::path path = dir / "module.hlo";
  WriteText(path, text);
  return RunOk("run " + path.string() + " " + args);
}

}  // namespace

TEST_CASE("reduce over a size-1 dim applies the reducer to the init value first", "[sim][reduce]") {
  // The reducer a - b is not commutative: XLA's reduce computes reducer(init, x) = 100 - x for
  // each element (the window of one element), not x - 100. x[i][0][j] = 7 i + j on [3, 1, 130]
  // (partial tiles along the lanes, whose padding must come out zero).
  const fs::path dir = TempDir("unit_subtract");
  std::vector<int32_t> x(3 * 130);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 130; ++j) x[i * 130 + j] = 7 * i + j;
  }
  std::vector<uint8_t> bytes(x.size() * 4);
  std::memcpy(bytes.data(), x.data(), bytes.size());
  const std::vector<int64_t> dims = {3, 1, 130};
  tpusim::isa::WriteNpy((dir / "x.npy").string(), ElementType::kS32, dims, bytes);
  const std::string module =
      "HloModule u\nreducer {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  ROOT c = s32[] subtract(a, b)\n}\n"
      "ENTRY e {\n  x = s32[3,1,130] parameter(0)\n  i = s32[] constant(100)\n"
      "  ROOT y = s32[3,130] reduce(x, i), dimensions={1}, to_apply=reducer\n}\n";
  const std::string output = RunModule(dir, module, "--check --input 0=" + (dir / "x.npy").string() + " --out " +
                                                        (dir / "out").string());
  CHECK_THAT(output, Catch::Contains("check passed"));
  const tpusim::isa::NpyArray out = ReadOutput(dir / "out" / "output_0.npy", ElementType::kS32);
  REQUIRE(out.dims == std::vector<int64_t>{3, 130});
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 130; ++j) {
      int32_t got = 0;
      std::memcpy(&got, out.data.data() + (i * 130 + j) * 4, 4);
      CHECK(got == 100 - (7 * i + j));
    }
  }
}

TEST_CASE("reduce-and of a pred array over a size-1 dim (argsort's bounds check)", "[sim][reduce]") {
  // The take-along-axis check: and over a trailing size-1 dim from init true is the element
  // itself; from init false every result is false. Random preds, checked against the evaluator.
  const fs::path dir = TempDir("unit_pred");
  for (const char* init : {"true", "false"}) {
    INFO(init);
    const std::string module =
        std::string("HloModule u\nreducer {\n  a = pred[] parameter(0)\n  b = pred[] parameter(1)\n") +
        "  ROOT c = pred[] and(a, b)\n}\nENTRY e {\n  x = s32[40,300,1] parameter(0)\n  z = s32[] constant(0)\n" +
        "  zb = s32[40,300,1] broadcast(z), dimensions={}\n  p = pred[40,300,1] compare(x, zb), direction=GE\n" +
        "  t = pred[] constant(" + init + ")\n  ROOT y = pred[40,300] reduce(p, t), dimensions={2}, to_apply=reducer\n}\n";
    const std::string output = RunModule(dir, module, "--check --seed 2");
    CHECK_THAT(output, Catch::Contains("check passed"));
  }
}

// Issue 21: every ArchConfig geometry either works or is refused naming its field. The README's
// attention block (bf16 dots on the MXUs, softmax reduces, element-wise kernels, both cores) runs
// --check on machines unlike tpu_v4; a vreg geometry the compiler's layouts do not tile is refused
// before anything runs.
#include <catch2/catch.hpp>

#include <string>

#include "tests/sim/exec_support.h"

using namespace tpusim::exec_test;

TEST_CASE("the attention block passes --check on other vreg counts and MXU sizes", "[run][config]") {
  const std::string module = (fs::path(TPUSIM_SOURCE_DIR) / "tests/workloads/mha_block_1x12x128x64_bf16.hlo").string();
  // 96 and 1024 vregs (tpu_v4: 32), MXUs of 64 x 64, 16 x 16 and 256 x 256 (tpu_v4: 128 x 128):
  // the kernels take their registers and MXU tiles from the target.
  for (const char* set : {"tensor_core.vpu.vector_register_count=96", "tensor_core.vpu.vector_register_count=1024",
                          "tensor_core.mxu.row_count=64 --set tensor_core.mxu.column_count=64",
                          "tensor_core.mxu.row_count=16 --set tensor_core.mxu.column_count=16",
                          "tensor_core.mxu.row_count=256 --set tensor_core.mxu.column_count=256"}) {
    INFO(set);
    CHECK_THAT(RunOk("run " + module + " --check --config tpu_v4 --set " + std::string(set)),
               Catch::Contains("check passed"));
  }
}

TEST_CASE("a vreg geometry other than the layouts' 8 x 128 tile is refused, naming the fields", "[run][config]") {
  const std::string module = (fs::path(TPUSIM_SOURCE_DIR) / "tests/workloads/mha_block_1x12x128x64_bf16.hlo").string();
  for (const auto& [set, geometry] : {std::pair{"tensor_core.vpu.sublane_count=16", "16 x 128"},
                                      std::pair{"tensor_core.vpu.lane_count=256", "8 x 256"}}) {
    INFO(set);
    CHECK_THAT(RunExpectingError("run " + module + " --timing-only --config tpu_v4 --set " + std::string(set)),
               Catch::Contains(std::string("tensor_core.vpu.sublane_count x lane_count = ") + geometry +
                               ": HLO modules compile for 8 x 128 vregs only, the tile of XLA's TPU layouts for "
                               "32-bit arrays (T(8,128), docs/layouts.md) that the kernels move a vreg at a time; "
                               "tpusim exec runs programs for other geometries"));
  }
}

// HLO modules of activation functions, shared by the compiler and end-to-end tests.
#pragma once

namespace tpusim::test_modules {

// selu(x) = scale x (x > 0), scale alpha (exp(x) - 1) otherwise, on f16[512,1024], as JAX writes
// it: five element-wise operations and four broadcasts of scalar constants.
inline constexpr char kSeluF16[] = R"(HloModule selu

ENTRY main {
  x = f16[512,1024] parameter(0)
  zero = f16[] constant(0)
  zb = f16[512,1024] broadcast(zero), dimensions={}
  gt = pred[512,1024] compare(x, zb), direction=GT
  e = f16[512,1024] exponential(x)
  one = f16[] constant(1)
  ob = f16[512,1024] broadcast(one), dimensions={}
  em1 = f16[512,1024] subtract(e, ob)
  alpha = f16[] constant(1.67326)
  ab = f16[512,1024] broadcast(alpha), dimensions={}
  neg = f16[512,1024] multiply(ab, em1)
  sel = f16[512,1024] select(gt, x, neg)
  scale = f16[] constant(1.0507)
  sb = f16[512,1024] broadcast(scale), dimensions={}
  ROOT r = f16[512,1024] multiply(sb, sel)
}
)";

}  // namespace tpusim::test_modules

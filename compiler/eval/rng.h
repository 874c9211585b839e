// Deterministic random arrays for HLO rng (seed 003's RngUniform, RngNormal, RngBernoulli).
// The generator is std::mt19937_64, whose output sequence the C++ standard fixes, and every
// mapping from its 64-bit words to values is written out here (the standard distributions are
// implementation-defined, so they are not used): the same seed gives the same bits on every
// machine. Elements are drawn in row-major order; the caller keeps one engine per evaluation so
// that successive rng instructions continue the sequence.
#pragma once

#include <cstdint>
#include <random>
#include <span>

#include "compiler/hlo/literal.h"
#include "isa/element_type.h"

namespace tpusim::eval {

// Uniform in [a, b) with the type of the scalars `a` and `b`: for integers, every value equally
// likely (rejection sampling, no modulo bias); for floats, a + (b - a) * u with u a multiple of
// 2^-53 in [0, 1) computed in f64 and rounded to the type, redrawn if rounding reached b. If
// b <= a every element is a (XLA leaves that case to the implementation).
hlo::Literal RngUniform(const hlo::Literal& a, const hlo::Literal& b, std::span<const int64_t> dims,
                        std::mt19937_64& engine);

// Normal with mean `mu` and standard deviation `sigma` (float scalars of the result type): the
// Box-Muller cosine branch, mu + sigma * sqrt(-2 ln u1) * cos(2 pi u2), in f64, one pair of words
// per element, rounded to the type.
hlo::Literal RngNormal(const hlo::Literal& mu, const hlo::Literal& sigma,
                       std::span<const int64_t> dims, std::mt19937_64& engine);

// Bernoulli with P(1) = `mean` (a float scalar): 1 where u < mean, else 0, as `type` (seed 003
// gives u32).
hlo::Literal RngBernoulli(const hlo::Literal& mean, std::span<const int64_t> dims,
                          isa::ElementType type, std::mt19937_64& engine);

}  // namespace tpusim::eval

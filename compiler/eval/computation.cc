#include "compiler/eval/computation.h"

#include <string>

#include "isa/error.h"
#include "isa/shape.h"

namespace tpusim::eval {

hlo::Literal Reducer::Apply(std::span<const hlo::Literal> args) const {
  if (function) return function(args);
  if (!known) throw Error("internal error: a reducer with neither a function nor a known op");
  if (args.size() != 2) {
    throw Error("reducer " + std::string(BinaryOpName(*known)) + " takes 2 arguments, got " +
                std::to_string(args.size()));
  }
  return Binary(*known, args[0], args[1]);
}

std::vector<hlo::Literal> Reducer::ApplyToAccumulators(std::span<const hlo::Literal> args,
                                                       std::size_t accumulators,
                                                       const char* op) const {
  hlo::Literal result = Apply(args);
  std::vector<hlo::Literal> parts;
  if (!result.is_tuple()) {
    parts.push_back(std::move(result));
  } else {
    parts = std::move(result.mutable_elements());
  }
  bool valid = parts.size() == accumulators;
  for (std::size_t i = 0; valid && i < parts.size(); ++i) {
    valid = !parts[i].is_tuple() && parts[i].dims().empty() &&
            parts[i].element_type() == args[i].element_type();
  }
  if (valid) return parts;
  std::string expected;
  for (std::size_t i = 0; i < accumulators; ++i) {
    expected += (i > 0 ? ", " : "") + isa::ToString(args[i].shape());
  }
  throw Error(std::string(op) + ": the computation returned " +
              isa::ToString(hlo::Literal::Tuple(std::move(parts)).shape()) + ", expected " +
              (accumulators == 1 ? expected : "(" + expected + ")"));
}

bool Comparator::Apply(std::span<const hlo::Literal> args) const {
  if (function) {
    const hlo::Literal result = function(args);
    if (result.is_tuple() || result.element_count() != 1 ||
        result.element_type() != isa::ElementType::kPred) {
      throw Error("a comparator must return a pred scalar, got " + isa::ToString(result.shape()));
    }
    return result.bytes()[0] != 0;
  }
  if (!known) {
    throw Error("internal error: a comparator with neither a function nor a known compare");
  }
  if (args.size() < 2) {
    throw Error("a comparator needs at least 2 arguments, got " + std::to_string(args.size()));
  }
  return Compare(args[0], args[1], known->direction, known->type).bytes()[0] != 0;
}

}  // namespace tpusim::eval

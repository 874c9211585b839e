#include "models/core_barrier.h"

namespace tpusim::models {

void CoreBarrier::ArriveAndWait() {
  const uint64_t round = round_;
  if (++arrived_ < cores_) {
    while (round_ == round) sc_core::wait(released_);
    return;
  }
  // The last to arrive: the others go on with it, latency from now.
  arrived_ = 0;
  ++round_;
  if (latency_ > sc_core::SC_ZERO_TIME) {
    released_.notify(latency_);
    sc_core::wait(latency_);
  } else {
    released_.notify(sc_core::SC_ZERO_TIME);
  }
}

}  // namespace tpusim::models

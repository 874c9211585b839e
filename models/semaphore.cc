#include "models/semaphore.h"

#include "isa/error.h"
#include "models/sc_context.h"

namespace tpusim::models {

void Semaphore::Signal(int64_t amount) {
  if (amount < 0) {
    throw Error("semaphore " + name_ + ": signal of a negative amount " + std::to_string(amount));
  }
  value_ += amount;
  ++signal_count_;
  // A delta notification is legal in every phase (elaboration, a process, between sc_start calls),
  // unlike an immediate one.
  signalled_.notify(sc_core::SC_ZERO_TIME);
}

void Semaphore::Wait(int64_t amount) {
  if (amount < 0) {
    throw Error("semaphore " + name_ + ": wait for a negative amount " + std::to_string(amount));
  }
  if (!InSystemCThread()) {
    throw Error("semaphore " + name_ + ": Wait() must be called from a SystemC thread");
  }
  while (value_ < amount) sc_core::wait(signalled_);
  value_ -= amount;
}

}  // namespace tpusim::models

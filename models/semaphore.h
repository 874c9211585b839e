// A counting semaphore (a TPU sync flag): DMA engines and units add to it when work completes, and
// the scalar core waits until it holds enough, then takes that much. A plain object with an
// sc_event, not an sc_module, so it can be made at any time (SystemC elaborates once per process).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <systemc>

namespace tpusim::models {

class Semaphore {
 public:
  explicit Semaphore(std::string name) : name_(std::move(name)) {}
  Semaphore(const Semaphore&) = delete;
  Semaphore& operator=(const Semaphore&) = delete;

  const std::string& name() const { return name_; }
  int64_t value() const { return value_; }
  // Adds `amount` (>= 0) now and wakes waiters in the next delta cycle. Any context: a process,
  // or sc_main between runs.
  void Signal(int64_t amount = 1);
  // In a SystemC thread: waits until value() >= amount, then subtracts it. Throws tpusim::Error
  // outside a thread, or if amount < 0.
  void Wait(int64_t amount = 1);
  // Notified (delta) at every Signal.
  const sc_core::sc_event& signalled() const { return signalled_; }
  uint64_t signal_count() const { return signal_count_; }

 private:
  std::string name_;
  int64_t value_ = 0;
  uint64_t signal_count_ = 0;
  sc_core::sc_event signalled_;
};

}  // namespace tpusim::models

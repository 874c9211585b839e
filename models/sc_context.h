// Where the caller runs, for functions that may only wait() inside a SystemC thread.
#pragma once

#include <systemc>

namespace tpusim::models {

// True inside a running SC_THREAD / SC_CTHREAD (where wait() is allowed). The status test
// matters: during elaboration SystemC reports the most recently created process as "current".
inline bool InSystemCThread() {
  if (sc_core::sc_get_status() != sc_core::SC_RUNNING) return false;
  const sc_core::sc_curr_proc_kind kind = sc_core::sc_get_current_process_handle().proc_kind();
  return kind == sc_core::SC_THREAD_PROC_ || kind == sc_core::SC_CTHREAD_PROC_;
}

}  // namespace tpusim::models

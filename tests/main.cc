// The single Catch2 main of tpusim_tests.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>
#include <systemc>

// SystemC's entry point, run by sc_elab_and_sim: the tests run inside it, as the simulator does.
int sc_main(int argc, char** argv) { return Catch::Session().run(argc, argv); }

int main(int argc, char** argv) {
  // Tests that touch SystemC must not print its banner into the test log.
  setenv("SC_COPYRIGHT_MESSAGE", "DISABLE", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}

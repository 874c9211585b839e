// The Catch2 main of tpusim_unit_tests (the sanitized build's tests that run no SystemC).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

// CTest registers each Catch2 case by name (catch_discover_tests), and CMake splits lists on ';'
// except inside [...]: a name with a ';' or an unbalanced '[' silently merges cases into one
// CTest entry. CTest passes the name to the test binary as an argument, so a name starting with
// '-' is read as an option and the case fails to run. Keep names safe.
#include <catch2/catch.hpp>

TEST_CASE("test case names are safe for CTest registration", "[meta]") {
  const auto& tests = Catch::getRegistryHub().getTestCaseRegistry().getAllTests();
  CHECK(tests.size() > 100);
  for (const Catch::TestCase& test : tests) {
    INFO(test.name);
    CHECK(test.name.find(';') == std::string::npos);
    CHECK((test.name.empty() || test.name.front() != '-'));
    int depth = 0;
    for (char c : test.name) {
      depth += c == '[' ? 1 : c == ']' ? -1 : 0;
      CHECK(depth >= 0);
    }
    CHECK(depth == 0);
  }
}

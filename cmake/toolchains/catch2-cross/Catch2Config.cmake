# Header-only stand-in for Debian's Catch2 2.x package in cross builds (see ../aarch64-linux-gnu.cmake).
# Catch2::Catch2 is the single header; Catch2::Catch2WithMain adds a generated main() source, so the
# test executables compile Catch2's runner for the target instead of linking the host's library.
if(NOT TARGET Catch2::Catch2)
  set(CATCH2_SINGLE_HEADER /usr/include/catch2/catch.hpp CACHE FILEPATH "Catch2 2.x single header")
  if(NOT EXISTS "${CATCH2_SINGLE_HEADER}")
    message(FATAL_ERROR "catch2-cross: ${CATCH2_SINGLE_HEADER} not found (apt-get install catch2)")
  endif()
  # Only this header goes on the include path (never the host's /usr/include).
  set(_catch2_cross_dir "${CMAKE_BINARY_DIR}/catch2-cross")
  file(COPY "${CATCH2_SINGLE_HEADER}" DESTINATION "${_catch2_cross_dir}/include/catch2")
  file(CONFIGURE OUTPUT "${_catch2_cross_dir}/catch_main.cpp" CONTENT "#define CATCH_CONFIG_MAIN\n#include <catch2/catch.hpp>\n")
  # The runner defines CATCH_CONFIG_MAIN before its include: in a unity batch (POSENC_UNITY_TESTS)
  # a test file's earlier include of the header would hide it and leave Catch2 without its body.
  set_source_files_properties("${_catch2_cross_dir}/catch_main.cpp" PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  add_library(Catch2::Catch2 INTERFACE IMPORTED)
  set_target_properties(Catch2::Catch2 PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_catch2_cross_dir}/include")
  add_library(Catch2::Catch2WithMain INTERFACE IMPORTED)
  set_target_properties(Catch2::Catch2WithMain PROPERTIES INTERFACE_SOURCES "${_catch2_cross_dir}/catch_main.cpp"
                                                          INTERFACE_LINK_LIBRARIES Catch2::Catch2)
  # catch_discover_tests (Catch.cmake) from the host package; it honours CROSSCOMPILING_EMULATOR.
  list(APPEND CMAKE_MODULE_PATH /usr/lib/cmake/Catch2)
endif()
set(Catch2_FOUND TRUE)

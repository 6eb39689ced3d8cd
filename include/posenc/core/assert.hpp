// posenc/core/assert.hpp — debug-only precondition checks for hot paths.
//
// Hot paths are noexcept and never throw; their preconditions are checked with POSENC_ASSERT, which
// is compiled out unless POSENC_ENABLE_ASSERTS is defined or NDEBUG is not. Bad configuration is
// reported at construction time with config_error instead (core/errors.hpp). A precondition whose
// violation would become a memory error in a release build (a wrong size reaching a kernel) is
// checked with POSENC_EXPECTS instead: O(1), in every build mode, and it aborts with a message
// (a noexcept entry cannot throw; a caller wanting an exception validates first).
#pragma once

#include <cstdio>
#include <cstdlib>

#if !defined(POSENC_ENABLE_ASSERTS) && !defined(NDEBUG)
#define POSENC_ENABLE_ASSERTS 1
#endif

namespace posenc::inline v0::detail {

[[noreturn]] inline void assert_fail(const char* expr, const char* file, int line) noexcept {
  std::fprintf(stderr, "posenc: assertion failed: %s (%s:%d)\n", expr, file, line);
  std::abort();
}

[[noreturn]] inline void precondition_fail(const char* expr, const char* file, int line) noexcept {
  std::fprintf(stderr, "posenc: precondition violated: %s (%s:%d)\n", expr, file, line);
  std::abort();
}

}  // namespace posenc::inline v0::detail

/// Always-on precondition of a noexcept entry (see the banner); never compiled out.
#define POSENC_EXPECTS(cond) \
  ((cond) ? static_cast<void>(0) : ::posenc::detail::precondition_fail(#cond, __FILE__, __LINE__))

#if defined(POSENC_ENABLE_ASSERTS) && POSENC_ENABLE_ASSERTS
#define POSENC_ASSERT(cond) ((cond) ? static_cast<void>(0) : ::posenc::detail::assert_fail(#cond, __FILE__, __LINE__))
#else
#define POSENC_ASSERT(cond) static_cast<void>(0)
#endif

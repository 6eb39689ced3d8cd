// posenc/version.hpp — the library version, written once.
//
// CMake parses the three macros below to set project(VERSION); nothing else states the version.
// The public API lives in the inline namespace posenc::v0 so that two incompatible majors linked
// into one program cannot silently share symbols.
#pragma once

#define POSENC_VERSION_MAJOR 0
#define POSENC_VERSION_MINOR 1
#define POSENC_VERSION_PATCH 0

/// Single comparable integer: major * 10000 + minor * 100 + patch.
#define POSENC_VERSION (POSENC_VERSION_MAJOR * 10000 + POSENC_VERSION_MINOR * 100 + POSENC_VERSION_PATCH)

namespace posenc::inline v0 {

struct version_info {
  int major, minor, patch;
};

/// The version of the headers this translation unit was compiled against.
inline constexpr version_info version{POSENC_VERSION_MAJOR, POSENC_VERSION_MINOR, POSENC_VERSION_PATCH};

}  // namespace posenc::inline v0

# Cross toolchain: AArch64 Linux with Debian's g++-aarch64-linux-gnu, tests run under qemu-user.
#
# Used by the "neon" preset (scripts/neon-test) to build and run the NEON kernels on an x86 host.
# CMAKE_CROSSCOMPILING_EMULATOR makes ctest and Catch2's build-time test discovery run the test
# binaries through qemu-aarch64. Header-only host packages (Eigen, nlohmann-json) are found in the
# host tree; Catch2 comes from the header-only shim next to this file, because Debian's catch2
# package ships an x86-64 static library for its main() and no AArch64 build exists.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

set(POSENC_AARCH64_SYSROOT /usr/aarch64-linux-gnu CACHE PATH "AArch64 libraries for qemu (-L)")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L ${POSENC_AARCH64_SYSROOT})

set(CMAKE_FIND_ROOT_PATH ${POSENC_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)  # header-only config packages from the host are fine

set(Catch2_DIR ${CMAKE_CURRENT_LIST_DIR}/catch2-cross CACHE PATH "header-only Catch2 shim for cross builds")

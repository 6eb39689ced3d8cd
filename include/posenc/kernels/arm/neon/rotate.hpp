// posenc/kernels/arm/neon/rotate.hpp — NEON kernel (placeholder, filled below).
#pragma once
#include <posenc/kernels/scalar/rotate.hpp>

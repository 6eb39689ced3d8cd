// posenc/kernels/arm/neon/angles.hpp — NEON kernel (placeholder, filled below).
#pragma once
#include <posenc/kernels/scalar/angles.hpp>

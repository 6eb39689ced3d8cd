// posenc/posenc.hpp — the whole public API, in dependency order; also its table of contents.
//
// Include this, or a single family header. The optional JSON config reader (posenc/config/json.hpp,
// needs nlohmann-json) is not included here.
#pragma once

// Core vocabulary
#include <posenc/version.hpp>
#include <posenc/core/platform.hpp>
#include <posenc/core/assert.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/half.hpp>
#include <posenc/core/element.hpp>
#include <posenc/core/tensor_view.hpp>
#include <posenc/core/positions.hpp>

// The concept and the trivial encoders
#include <posenc/concepts.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/encoders/combined.hpp>

// Absolute (hook 1), score-bias (hook 3) and relative key/value (hook 4) encoders
#include <posenc/encoders/learned.hpp>
#include <posenc/encoders/sinusoidal.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/t5.hpp>
#include <posenc/encoders/shaw.hpp>

// Rotation kernels
#include <posenc/kernels/types.hpp>
#include <posenc/kernels/rotate.hpp>
#include <posenc/rope/angles.hpp>
#include <posenc/kernels/angles.hpp>
#include <posenc/rope/config.hpp>

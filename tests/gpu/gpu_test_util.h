#pragma once
// GPU tests skip themselves (reported as *skipped* by ctest) when no CUDA device is usable.
#include <gtest/gtest.h>

#include "kernels/cuda/device.h"

// The skip says why in CUDA's words (a driver older than the runtime is not "no GPU"); scripts/gpu-check.sh fails
// on any skip it does not list as deliberate.
#define HALOGEN_REQUIRE_GPU()                                                                        \
  do {                                                                                               \
    if (::halogen::cuda::usable_device_count() == 0)                                                 \
      GTEST_SKIP() << "no usable CUDA device: " << ::halogen::cuda::device_count_error();            \
    ::halogen::cuda::initialise_device(0);                                                           \
  } while (0)

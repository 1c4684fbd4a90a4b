#pragma once
// GPU tests skip themselves (reported as *skipped* by ctest) when no CUDA device is usable.
#include <gtest/gtest.h>

#include "kernels/cuda/device.h"

#define HALOGEN_REQUIRE_GPU()                                                               \
  do {                                                                                      \
    if (::halogen::cuda::usable_device_count() == 0) GTEST_SKIP() << "no usable CUDA device"; \
    ::halogen::cuda::initialise_device(0);                                                  \
  } while (0)

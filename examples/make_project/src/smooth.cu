#include "smooth.h"

__global__ void smooth_kernel(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float left = x[i > 0 ? i - 1 : 0];
  float right = x[i < n - 1 ? i + 1 : n - 1];
  // 1.0 / 3.0 is a double: the sum is converted to double and back (an `f` suffix avoids it)
  y[i] = (left + x[i] + right) * (1.0 / 3.0);
}

void smooth(const float* x, float* y, int n) {
  smooth_kernel<<<(n + 255) / 256, 256>>>(x, y, n);
}

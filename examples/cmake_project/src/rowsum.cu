#include "rowsum.h"

__device__ float scale_sum(float s);   // src/scale.cu

// one thread per row: neighbouring threads read addresses `cols` floats apart (uncoalesced);
// a block per row (or a transposed layout) would read consecutive addresses
__global__ void row_sums_kernel(const float* matrix, float* sums, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) s += matrix[(size_t)r * cols + c];
  sums[r] = scale_sum(s);
}

void row_sums(const float* matrix, float* sums, int rows, int cols) {
  row_sums_kernel<<<(rows + 127) / 128, 128>>>(matrix, sums, rows, cols);
}

// An element-wise kernel over a row-major matrix whose index is written the
// wrong way round: consecutive threads (consecutive columns) address
// `a[col * rows + row]`, elements `rows` floats apart. Every warp load touches
// 32 sectors for 128 useful bytes: uncoalesced global memory accesses.
#include "../../common/harness.cuh"

__global__ void magnitude(const float* __restrict__ re, const float* __restrict__ im, float* __restrict__ mag,
                          int rows, int cols) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * 4;  // four consecutive rows per thread: contiguous in this layout
  if (col >= cols) return;
  const int i = col * rows + row;
  const float4 r = *reinterpret_cast<const float4*>(re + i), m = *reinterpret_cast<const float4*>(im + i);
  *reinterpret_cast<float4*>(mag + i) = make_float4(sqrtf(r.x * r.x + m.x * m.x), sqrtf(r.y * r.y + m.y * m.y),
                                                    sqrtf(r.z * r.z + m.z * m.z), sqrtf(r.w * r.w + m.w * m.w));
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int rows = 4096, cols = 4096;
  const size_t n = size_t(rows) * cols;
  std::vector<float> re(n), im(n);
  gpa::Lcg rng(41);
  for (size_t i = 0; i < n; ++i) re[i] = rng.uniform(-1, 1), im[i] = rng.uniform(-1, 1);
  float* dre = gpa::to_device(re);
  float* dim_ = gpa::to_device(im);
  float* dmag = gpa::device_alloc<float>(n);
  const dim3 block(256), grid((cols + 255) / 256, rows / 4);
  auto launch = [&] { magnitude<<<grid, block>>>(dre, dim_, dmag, rows, cols); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float> got = gpa::to_host(dmag, n);
  auto ref = [&](size_t i) { return std::sqrt(double(re[i]) * re[i] + double(im[i]) * im[i]); };
  gpa::check_close(got, ref, n, 1e-5, 1e-6, "magnitudes");

  gpa::time_kernel("magnitude", opt, launch);
  return 0;
}

// NCHW -> NHWC layout conversion of an 8 x 64 x 256 x 256 float tensor (128 MiB
// in, 128 MiB out), one thread per element, written as a first port does: w (the
// fastest index of the input) from threadIdx.x, c from threadIdx.y, 32 x 8
// blocks, grid (W/32, C/8, N*H). The shape is fixed at compile time (as a
// generated or specialised kernel has it), so n and h come from blockIdx.z by a
// shift: the kernel holds the access pattern and nothing else (no division).
// Performance problem: the 32 lanes of a warp share c and hold 32 consecutive w,
// so the read in[((n*C + c)*H + h)*W + w] is one 128-byte line per warp, but the
// write out[((n*H + h)*W + w)*C + c] puts 4 bytes in each of 32 lines 256 B apart
// (stride C floats: 32 sectors per request for 128 useful bytes). The block's 8
// warps (c .. c+7) fill one 32-byte sector of each of those lines, so the bytes
// reaching DRAM are close to the ideal; the cost is the store requests' 32
// sectors each in the L1 and L2.
#include "../common/harness.cuh"

constexpr int N = 8, C = 64, H = 256, W = 256;

__global__ void nchw_to_nhwc(float* out, const float* in) {
  const int w = blockIdx.x * blockDim.x + threadIdx.x;
  const int c = blockIdx.y * blockDim.y + threadIdx.y;
  const int n = blockIdx.z / H, h = blockIdx.z % H;
  if (w < W && c < C) out[((n * H + h) * W + w) * C + c] = in[((n * C + c) * H + h) * W + w];
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const size_t total = size_t(N) * C * H * W;
  std::vector<float> in(total);
  gpa::Lcg rng(53);
  for (auto& v : in) v = rng.uniform(-1.f, 1.f);
  float* din = gpa::to_device(in);
  float* dout = gpa::device_alloc<float>(total);
  const dim3 block(32, 8), grid((W + block.x - 1) / block.x, (C + block.y - 1) / block.y, N * H);
  auto launch = [&] { nchw_to_nhwc<<<grid, block>>>(dout, din); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every element, exactly: out element e = ((n*H + h)*W + w)*C + c holds in[((n*C + c)*H + h)*W + w]
  std::vector<float> got = gpa::to_host(dout, total);
  auto ref = [&](size_t e) {
    const size_t c = e % C, w = e / C % W, h = e / (size_t(C) * W) % H, n = e / (size_t(C) * W * H);
    return double(in[((n * C + c) * H + h) * W + w]);
  };
  gpa::check_close(got, ref, total, 0.0, 0.0, "out (every element)");

  gpa::time_kernel("nchw_to_nhwc", opt, launch);
  return 0;
}

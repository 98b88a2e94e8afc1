// Direct 2D convolution in NCHW: batch 8, 64 input and 64 output channels,
// 56 x 56 images, 3 x 3 filter, stride 1, padding 1, written the way generic
// code is: the filter size (R, S), the padding and the channel count are
// run-time arguments. One thread per output element (n, k, y, x) with x
// fastest: blockIdx.x walks the 56 * 56 = 3136 points of one output plane in
// blocks of 256, blockIdx.y is the output channel k and blockIdx.z the image
// n, so the threads of a block share k and n. Each thread loops over the 64
// input channels and the R x S taps: per multiply-add, one load of the input
// (consecutive x across the warp, with the zero-padding test) and one load of
// the weight (one address for the whole warp), and the index arithmetic and
// loop counters of two loops whose trip counts are unknown to the compiler.
//
// Variant const_filter: the filter size R x S as template arguments (lines 14-15), 3 x 3 at the launch (line 44): the tap loops have compile-time trip counts and unroll, the weight offsets become constants.
#include "../../common/harness.cuh"

template <int R, int S>
__global__ void conv2d_nchw(float* out, const float* in, const float* w, int C, int H, int W, int K, int pad) {
  const int hw = blockIdx.x * blockDim.x + threadIdx.x;
  const int k = blockIdx.y, n = blockIdx.z;
  if (hw >= H * W) return;
  const int y = hw / W, x = hw % W;
  float acc = 0.f;
  for (int c = 0; c < C; ++c) {
    for (int r = 0; r < R; ++r) {
      for (int s = 0; s < S; ++s) {
        const int iy = y + r - pad, ix = x + s - pad;
        if (iy >= 0 && iy < H && ix >= 0 && ix < W)
          acc += in[((n * C + c) * H + iy) * W + ix] * w[((k * C + c) * R + r) * S + s];
      }
    }
  }
  out[((n * K + k) * H + y) * W + x] = acc;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int N = 8, C = 64, K = 64, H = 56, W = 56, R = 3, S = 3, pad = 1;
  std::vector<float> in(size_t(N) * C * H * W), w(size_t(K) * C * R * S);
  gpa::Lcg rng(59);
  for (auto& v : in) v = rng.uniform(-1.f, 1.f);
  for (auto& v : w) v = rng.uniform(-0.1f, 0.1f);
  float* din = gpa::to_device(in);
  float* dw = gpa::to_device(w);
  float* dout = gpa::device_alloc<float>(size_t(N) * K * H * W);
  const dim3 block(256), grid((H * W + block.x - 1) / block.x, K, N);
  auto launch = [&] { conv2d_nchw<R, S><<<grid, block>>>(dout, din, dw, C, H, W, K, pad); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every 101st output against a double reference
  std::vector<float> got = gpa::to_host(dout, size_t(N) * K * H * W);
  auto ref = [&](size_t e) {
    const int x = int(e % W), y = int(e / W % H), k = int(e / (size_t(W) * H) % K), n = int(e / (size_t(W) * H * K));
    double s = 0.0;
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < R; ++r)
        for (int q = 0; q < S; ++q) {
          const int iy = y + r - pad, ix = x + q - pad;
          if (iy >= 0 && iy < H && ix >= 0 && ix < W)
            s += double(in[((size_t(n) * C + c) * H + iy) * W + ix]) * w[((size_t(k) * C + c) * R + r) * S + q];
        }
    return s;
  };
  gpa::check_close(got, ref, size_t(N) * K * H * W, 1e-4, 1e-5, "out (every 101st output)", 101);

  gpa::time_kernel("conv2d_nchw", opt, launch);
  return 0;
}

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
// Variant smem_rows: Global Memory Coalescing's "or stage through shared memory" (its
// other form, threadIdx.x on the fastest index, is what the original already does: a warp
// reads 32 consecutive floats, and the extra sectors come from the taps' -1/+1 column
// shift, which makes two of every three taps' loads straddle 5 sectors instead of 4).
// Per input channel the block copies the whole input rows its outputs' taps reach (its
// rows of the plane with R - 1 rows of halo, clipped to the image: at most 8 rows of 56)
// into dynamic shared memory with row-aligned, consecutive loads, one barrier, and the
// taps read them there (line 26); a second barrier before the next channel overwrites
// them. The threads past the plane no longer return early: they help load and wait at
// the barriers, and skip the taps and the store. Weights, index arithmetic and the
// order of the sums are unchanged.
#include "../../common/harness.cuh"

__global__ void conv2d_nchw(float* out, const float* in, const float* w, int C, int H, int W, int K, int R,
                            int S, int pad) {
  extern __shared__ float rows[];  // input rows ty0..ty1 of channel c, W floats each
  const int hw = blockIdx.x * blockDim.x + threadIdx.x;
  const int k = blockIdx.y, n = blockIdx.z;
  const bool active = hw < H * W;
  const int y = hw / W, x = hw % W;
  // the block's output rows y0..y1 and the input rows ty0..ty1 their taps reach
  const int first = blockIdx.x * blockDim.x, last = min(first + int(blockDim.x), H * W) - 1;
  const int ty0 = max(0, first / W - pad), ty1 = min(H - 1, last / W + R - 1 - pad);
  const int count = (ty1 - ty0 + 1) * W;
  float acc = 0.f;
  for (int c = 0; c < C; ++c) {
    const float* plane = in + ((n * C + c) * H + ty0) * W;
    for (int j = threadIdx.x; j < count; j += blockDim.x) rows[j] = plane[j];
    __syncthreads();
    if (active) {
      for (int r = 0; r < R; ++r) {
        for (int s = 0; s < S; ++s) {
          const int iy = y + r - pad, ix = x + s - pad;
          if (iy >= 0 && iy < H && ix >= 0 && ix < W)
            acc += rows[(iy - ty0) * W + ix] * w[((k * C + c) * R + r) * S + s];
        }
      }
    }
    __syncthreads();
  }
  if (active) out[((n * K + k) * H + y) * W + x] = acc;
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
  // a block's 256 consecutive points span at most (256 - 1) / W + 2 rows, and R - 1 rows of halo
  const size_t smem = size_t((block.x - 1) / W + 1 + R) * W * sizeof(float);
  auto launch = [&] { conv2d_nchw<<<grid, block, smem>>>(dout, din, dw, C, H, W, K, R, S, pad); };
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

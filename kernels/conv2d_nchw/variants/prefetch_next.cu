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
// Variant prefetch_next: Code Reordering's "issue loads earlier (prefetch the next
// iteration's data), and interleave independent work between a load and its first use":
// the tap loops are software-pipelined: each iteration does the current tap's
// multiply-add with the input and weight loaded one iteration earlier, then loads the next
// tap's (s + 1, else the next row r + 1, else the next channel c + 1), behind that tap's
// own bounds test; its first use is in the next iteration, after the loop control and that
// iteration's index arithmetic. The taps, their bounds tests and the order of the sums are
// unchanged. `#pragma unroll 1` on the tap loop keeps the pipeline: nvcc's default
// unroll-by-4 lays the 3 taps of a row out as straight-line remainder code with each
// tap's FFMA right behind its loads again.
#include "../../common/harness.cuh"

__global__ void conv2d_nchw(float* out, const float* in, const float* w, int C, int H, int W, int K, int R,
                            int S, int pad) {
  const int hw = blockIdx.x * blockDim.x + threadIdx.x;
  const int k = blockIdx.y, n = blockIdx.z;
  if (hw >= H * W) return;
  const int y = hw / W, x = hw % W;
  float acc = 0.f;
  // tap (c, r, s) = (0, 0, 0)'s input and weight before the loops, behind its bounds test
  bool ok = C > 0 && R > 0 && S > 0 && y - pad >= 0 && y - pad < H && x - pad >= 0 && x - pad < W;
  float a = ok ? in[((n * C) * H + y - pad) * W + x - pad] : 0.f;
  float b = ok ? w[(k * C * R) * S] : 0.f;
  for (int c = 0; c < C; ++c) {
    for (int r = 0; r < R; ++r) {
#pragma unroll 1
      for (int s = 0; s < S; ++s) {
        // the current tap's multiply-add, on the values loaded one iteration earlier
        if (ok)
          acc += a * b;
        // prefetch: the next tap's input and weight (s + 1, else r + 1, else c + 1), behind its bounds test
        int sn = s + 1, rn = r, cn = c;
        if (sn == S) {
          sn = 0;
          if (++rn == R) rn = 0, ++cn;
        }
        const int iy = y + rn - pad, ix = x + sn - pad;
        ok = cn < C && iy >= 0 && iy < H && ix >= 0 && ix < W;
        a = ok ? in[((n * C + cn) * H + iy) * W + ix] : 0.f;
        b = ok ? w[((k * C + cn) * R + rn) * S + sn] : 0.f;
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
  auto launch = [&] { conv2d_nchw<<<grid, block>>>(dout, din, dw, C, H, W, K, R, S, pad); };
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

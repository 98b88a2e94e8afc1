// Inference-time per-channel affine on an NCHW float tensor: batch norm folded
// into one scale and one shift per channel (scale = gamma / sqrt(var + eps),
// shift = beta - mean * scale, computed once on the host), applied as
// out[i] = in[i] * scale[c] + shift[c] to an N = 128, C = 256, H = W = 56 tensor
// (102.8 M floats: 411 MB in, 411 MB out). One thread per element, the channel
// from a signed division and a modulo of the 64-bit element index by the
// run-time plane size H*W and channel count C, as a first port writes it (64-bit
// signed index math as ATen's elementwise kernels write it).
// Performance problem (prior): a streaming kernel. The load of in[i] does not
// depend on the channel and is issued first (the 64-bit division's run-time
// check for 32-bit operands is a branch, which keeps the LDG above it); the two
// divisions' ~50 instructions run while it is in flight and feed only the two
// small gathers (2 KB of tables, L1 hits). Each thread has one 4-byte load in
// flight.
//
// Variant fast_math: the same source built with --use_fast_math (see case.toml):
// there is no float division, square root or transcendental; the FFMA becomes
// FFMA.FTZ.
#include "../../common/harness.cuh"

__global__ void channel_affine(float* out, const float* in, const float* scale, const float* shift,
                               int hw, int channels, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = in[i];
  const int c = (int)((i / hw) % channels);
  out[i] = x * scale[c] + shift[c];
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int batch = 128, channels = 256, height = 56, width = 56;
  const int hw = height * width;
  const long long n = (long long)batch * channels * hw;
  gpa::Lcg rng(311);
  // activations: uniform in [-4, 4); per channel a trained batch norm's
  // gamma, beta, running mean and running variance, folded on the host
  std::vector<float> in(static_cast<size_t>(n));
  for (auto& v : in) v = rng.uniform(-4.f, 4.f);
  std::vector<float> scale(channels), shift(channels);
  for (int c = 0; c < channels; ++c) {
    const float gamma = rng.uniform(0.5f, 1.5f), beta = rng.uniform(-0.5f, 0.5f);
    const float mean = rng.uniform(-1.f, 1.f), var = rng.uniform(0.1f, 2.f);
    scale[c] = gamma / std::sqrt(var + 1e-5f);
    shift[c] = beta - mean * scale[c];
  }
  float* din = gpa::to_device(in);
  float* dscale = gpa::to_device(scale);
  float* dshift = gpa::to_device(shift);
  float* dout = gpa::device_alloc<float>(size_t(n));
  CUDA_CHECK(cudaMemset(dout, 0xFF, size_t(n) * sizeof(float)));  // NaN: a missed element fails
  const int block = 256, grid = int((n + block - 1) / block);
  auto launch = [&] { channel_affine<<<grid, block>>>(dout, din, dscale, dshift, hw, channels, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every element against a double reference (same float scale and shift)
  std::vector<float> got = gpa::to_host(dout, size_t(n));
  auto ref = [&](size_t e) {
    const size_t c = (e / size_t(hw)) % size_t(channels);
    return double(in[e]) * double(scale[c]) + double(shift[c]);
  };
  gpa::check_close(got, ref, size_t(n), 1e-6, 1e-6, "out");

  gpa::time_kernel("channel_affine", opt, launch);
  return 0;
}

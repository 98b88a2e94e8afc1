// Interleaved 16-bit PCM audio to planar float, as an audio pipeline's first
// step before per-channel DSP or a neural front end (a DAW's or a decoder's
// "deinterleave + convert" stage): in holds clips = 20 clips of frames = 2^19
// frames (10.9 s at 48 kHz) of channels = 6 (5.1) signed 16-bit samples each,
// interleaved (frame-major: L R C LFE Ls Rs L R ...; 126 MB), gain[c] a per-channel
// gain, and out the planar float tensor [clip][channel][frame] (252 MB) with
// out = sample / 32768 * gain[c], in [-1, 1) before the gain.
// One thread per OUTPUT element of the flat planar tensor, its (clip, channel,
// frame) from signed division and modulo of the flat index by the run-time
// frames and channels, as a first port of the CPU loop writes it.
// Performance problem (prior): two run-time signed divisions per sample, and the
// lanes of a warp read 2-byte samples 12 bytes apart (384 bytes, 12 sectors per
// warp load for 64 bytes used), each input sector read by 6 different warps of 6
// different planes far apart in time (the L2 serves it 6 times).
#include "../common/harness.cuh"

__global__ void pcm_deinterleave(float* out, const short* in, const float* gain, int channels,
                                 int frames, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int f = i % frames;  // frame (position in the clip)
  const int t = i / frames;  // clip * channels + channel
  const int c = t % channels;
  const int b = t / channels;
  out[i] = in[(b * frames + f) * channels + c] / 32768.0f * gain[c];
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int clips = 20, channels = 6, frames = 1 << 19, n = clips * channels * frames;
  gpa::Lcg rng(1951);
  // per-channel gains (a 5.1 trim: fronts, centre, LFE, surrounds), then full-scale
  // 16-bit samples: every value from -32768 to 32767 occurs
  std::vector<float> gain(static_cast<size_t>(channels));
  for (int c = 0; c < channels; ++c) gain[c] = rng.uniform(0.25f, 1.0f);
  std::vector<short> in(static_cast<size_t>(n));
  for (size_t e = 0; e < in.size(); ++e) in[e] = (short)(unsigned short)(rng.next() & 0xFFFFu);
  short* din = gpa::to_device(in);
  float* dgain = gpa::to_device(gain);
  // 0xFF bytes everywhere: a NaN in every output, a missed element fails the check
  float* dout = gpa::device_alloc<float>(size_t(n));
  CUDA_CHECK(cudaMemset(dout, 0xFF, size_t(n) * sizeof(float)));
  const int block = 256, grid = (n + block - 1) / block;
  auto launch = [&] { pcm_deinterleave<<<grid, block>>>(dout, din, dgain, channels, frames, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every 7th element (7 is prime to the channel count and to every vector width,
  // so every plane and every lane position of a vector store is checked); the same
  // float operations in the same order (division by 2^15 is exact): bit-exact
  std::vector<float> got = gpa::to_host(dout, size_t(n));
  auto ref = [&](size_t e) {
    const size_t f = e % frames, t = e / frames, c = t % channels, b = t / channels;
    return double(in[(b * frames + f) * channels + c] / 32768.0f * gain[c]);
  };
  gpa::check_close(got, ref, size_t(n), 0.0, 0.0, "out", 7);

  gpa::time_kernel("pcm_deinterleave", opt, launch);
  return 0;
}

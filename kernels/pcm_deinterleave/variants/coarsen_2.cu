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
//
// Variant coarsen_2: each thread converts 2 consecutive frames of one clip, all its
// channels (frames is a multiple of 2): reads its 4*C bytes (24 for 5.1) as 8-byte loads
// where 8-aligned (LDG.E.64: 3 per thread for 6 channels), else 4-byte ones, and each
// plane's 2 samples as one float2 (STG.E.64); one division per thread (by frames / 2) for
// the clip, none per sample; the channel count picks a specialization (a switch over 2..8
// channels); 1/12 of the threads for 5.1.
#include "../../common/harness.cuh"

// K consecutive samples of one channel as one float vector store (float2 for K = 2,
// float4s for K = 4 and 8; the offset is a multiple of K floats)
template <int K>
__device__ __forceinline__ void store_k(float* dst, const float (&o)[K]) {
  if (K == 2) {
    *reinterpret_cast<float2*>(dst) = make_float2(o[0], o[1 % K]);
  } else {
#pragma unroll
    for (int q = 0; q < K / 4; ++q)
      reinterpret_cast<float4*>(dst)[q] = make_float4(o[4 * q], o[(4 * q + 1) % K], o[(4 * q + 2) % K], o[(4 * q + 3) % K]);
  }
}

template <int VB> struct VecOf;
template <> struct VecOf<16> { typedef uint4 T; };
template <> struct VecOf<8> { typedef uint2 T; };
template <> struct VecOf<4> { typedef unsigned T; };

// thread j: global frames K*j .. K*j + K - 1 (one clip), all C channels. Their K*C interleaved
// samples are contiguous (in + j*K*C, 2*K*C bytes) and read with the widest aligned vector
// loads; one division (by frames / K) per thread for the clip, none per sample
template <int C, int K>
__device__ __forceinline__ void deinterleave_chunk(float* out, const short* in, const float* gain,
                                                   int frames, int n, int j) {
  if (j * (K * C) >= n) return;
  constexpr int BYTES = 2 * K * C;
  constexpr int VB = BYTES % 16 == 0 ? 16 : (BYTES % 8 == 0 ? 8 : 4);
  typedef typename VecOf<VB>::T V;
  union {
    V v[BYTES / VB];
    short s[K * C];
  } a;
  const V* src = reinterpret_cast<const V*>(in + j * (K * C));
#pragma unroll
  for (int q = 0; q < BYTES / VB; ++q) a.v[q] = src[q];
  const int per = frames / K;  // threads per clip
  const int b = j / per;
  const int f0 = (j - b * per) * K;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const float g = gain[c];
    float o[K];
#pragma unroll
    for (int k = 0; k < K; ++k) o[k] = a.s[k * C + c] / 32768.0f * g;
    store_k<K>(out + (b * C + c) * frames + f0, o);
  }
}

__global__ void pcm_deinterleave(float* out, const short* in, const float* gain, int channels,
                                 int frames, int n) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  switch (channels) {  // the channel count picks a specialization (2..8 channels)
    case 2: deinterleave_chunk<2, 2>(out, in, gain, frames, n, j); break;
    case 3: deinterleave_chunk<3, 2>(out, in, gain, frames, n, j); break;
    case 4: deinterleave_chunk<4, 2>(out, in, gain, frames, n, j); break;
    case 5: deinterleave_chunk<5, 2>(out, in, gain, frames, n, j); break;
    case 6: deinterleave_chunk<6, 2>(out, in, gain, frames, n, j); break;
    case 7: deinterleave_chunk<7, 2>(out, in, gain, frames, n, j); break;
    case 8: deinterleave_chunk<8, 2>(out, in, gain, frames, n, j); break;
  }
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
  const int block = 256, grid = (n / (channels * 2) + block - 1) / block;
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

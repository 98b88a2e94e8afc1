// One explicit time step of a particle system stored as an array of structs, as
// simulation codes first write it: struct Particle {x, y, z, vx, vy, vz} (24 bytes,
// no padding), 2^23 particles (201 MB), one thread per particle: gravity and a
// quadratic air drag (semi-implicit: v = (v + g dt) / (1 + c dt |v + g dt|)), then
// x += v dt. Double-buffered: the step reads `in` and writes `out`, so every launch
// computes the same output from the same input (the check and every timed run see
// the same data). Performance problem (to judge): each warp load of one field reads
// 4 bytes every 24 bytes, so the request spans 768 B (6 lines, 24 sectors) and uses
// a sixth of the bytes it touches; the six loads together use every byte, and each
// store of one field writes 4-8 bytes of each of the same 24 sectors.
//
// Variant smem_stage: each block copies its 256 particles (6144 B) into shared
// memory with coalesced 16-byte loads, updates them there (one thread per
// particle, the same arithmetic), and writes them back with coalesced 16-byte
// stores. The launch keeps block = 256 (= kBlock).
#include "../../common/harness.cuh"

struct Particle { float x, y, z, vx, vy, vz; };

constexpr int kBlock = 256;  // the launch's block size: the tile holds kBlock particles

__global__ void particles_step(Particle* out, const Particle* in, int n, float dt, float g, float drag) {
  __shared__ float4 tile[kBlock * 6 / 4];  // this block's particles, 6144 B
  float* t = reinterpret_cast<float*>(tile);
  const int base = blockIdx.x * kBlock;
  const int i = base + threadIdx.x;
  const bool full = base + kBlock <= n;
  const int words = min(kBlock, n - base) * 6;  // floats of this block's particles
  if (full) {  // 384 = 256 + 128 float4, 16-byte aligned (6144 B per block)
    const float4* src = reinterpret_cast<const float4*>(in + base);
    tile[threadIdx.x] = src[threadIdx.x];
    if (threadIdx.x < kBlock / 2) tile[kBlock + threadIdx.x] = src[kBlock + threadIdx.x];
  } else {  // the last, partial block (none at n = 2^23): a float at a time
    const float* src = reinterpret_cast<const float*>(in + base);
#pragma unroll 1
    for (int k = threadIdx.x; k < words; k += kBlock) t[k] = src[k];
  }
  __syncthreads();
  if (i < n) {
    Particle* sp = reinterpret_cast<Particle*>(t) + threadIdx.x;
    Particle p = *sp;
    p.vz -= g * dt;
    const float s = sqrtf(p.vx * p.vx + p.vy * p.vy + p.vz * p.vz);
    const float k = 1.0f / (1.0f + drag * dt * s);
    p.vx *= k;
    p.vy *= k;
    p.vz *= k;
    p.x += p.vx * dt;
    p.y += p.vy * dt;
    p.z += p.vz * dt;
    *sp = p;
  }
  __syncthreads();
  if (full) {
    float4* dst = reinterpret_cast<float4*>(out + base);
    dst[threadIdx.x] = tile[threadIdx.x];
    if (threadIdx.x < kBlock / 2) dst[kBlock + threadIdx.x] = tile[kBlock + threadIdx.x];
  } else {
    float* dst = reinterpret_cast<float*>(out + base);
#pragma unroll 1
    for (int k = threadIdx.x; k < words; k += kBlock) dst[k] = t[k];
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 23;
  const float dt = 1e-3f, g = 9.81f, drag = 0.05f;
  gpa::Lcg rng(61);
  // positions in a 100 m box, velocities up to 20 m/s per component
  std::vector<Particle> h(n);
  for (auto& q : h) {
    q.x = rng.uniform(-50.f, 50.f);
    q.y = rng.uniform(-50.f, 50.f);
    q.z = rng.uniform(0.f, 100.f);
    q.vx = rng.uniform(-20.f, 20.f);
    q.vy = rng.uniform(-20.f, 20.f);
    q.vz = rng.uniform(-20.f, 20.f);
  }
  Particle* din = gpa::to_device(h);
  Particle* dout = gpa::device_alloc<Particle>(n);
  const int block = 256, grid = (n + block - 1) / block;
  auto launch = [&] { particles_step<<<grid, block>>>(dout, din, n, dt, g, drag); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // reference in double on every field of every particle (6 n floats)
  std::vector<float> got = gpa::to_host(reinterpret_cast<const float*>(dout), size_t(n) * 6);
  size_t last = size_t(-1);
  double r[6];
  auto ref = [&](size_t j) {
    const size_t i = j / 6;
    if (i != last) {
      const Particle& q = h[i];
      const double vz = double(q.vz) - double(g) * dt;
      const double s = std::sqrt(double(q.vx) * q.vx + double(q.vy) * q.vy + vz * vz);
      const double k = 1.0 / (1.0 + double(drag) * dt * s);
      r[3] = q.vx * k;
      r[4] = q.vy * k;
      r[5] = vz * k;
      r[0] = q.x + r[3] * dt;
      r[1] = q.y + r[4] * dt;
      r[2] = q.z + r[5] * dt;
      last = i;
    }
    return r[j % 6];
  };
  gpa::check_close(got, ref, size_t(n) * 6, 1e-5, 1e-5, "out");

  gpa::time_kernel("particles_step", opt, launch);
  return 0;
}

// Particle push: each of 4M particles (in random order) gathers the electric
// field of its cell from a 192^3 grid through its stored cell index, then
// updates its velocity (with a relativistic-style speed limiter) and position.
// The field is three separate arrays ex/ey/ez (85 MB, more than L2 holds), so
// every particle makes three random 4-byte gathers, each a separate DRAM
// sector: a warp's three gather instructions touch 96 sectors for 384 useful
// bytes, more traffic than all the coalesced particle data.
//
// Variant block_1024: 1024-thread blocks instead of 256.
#include "../../common/harness.cuh"

__global__ void push_particles(const float4* pos, const float4* vel, const int* cell, const float* ex,
                               const float* ey, const float* ez, float4* pos_out, float4* vel_out, int np,
                               float dt, float inv_c2) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= np) return;
  const float4 p = pos[i];  // w: charge-to-mass ratio
  float4 v = vel[i];
  const int c = cell[i];
  const float qdt = p.w * dt;
  v.x += qdt * ex[c];
  v.y += qdt * ey[c];
  v.z += qdt * ez[c];
  const float g = 1.0f / sqrtf(1.0f + (v.x * v.x + v.y * v.y + v.z * v.z) * inv_c2);
  v.x *= g;
  v.y *= g;
  v.z *= g;
  v.w = g;
  pos_out[i] = make_float4(p.x + dt * v.x, p.y + dt * v.y, p.z + dt * v.z, p.w);
  vel_out[i] = v;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int g = 192, ncell = g * g * g, np = 1 << 22;
  const float dt = 0.05f, inv_c2 = 0.25f;
  gpa::Lcg rng(97);
  std::vector<float> ex(ncell), ey(ncell), ez(ncell);
  for (int c = 0; c < ncell; ++c) {
    ex[c] = rng.uniform(-1.f, 1.f);
    ey[c] = rng.uniform(-1.f, 1.f);
    ez[c] = rng.uniform(-1.f, 1.f);
  }
  std::vector<float4> pos(np), vel(np);
  std::vector<int> cell(np);
  for (int i = 0; i < np; ++i) {
    pos[i] = make_float4(rng.uniform(0.f, float(g)), rng.uniform(0.f, float(g)), rng.uniform(0.f, float(g)),
                         rng.uniform(0.5f, 1.5f));
    vel[i] = make_float4(rng.uniform(-1.f, 1.f), rng.uniform(-1.f, 1.f), rng.uniform(-1.f, 1.f), 0.f);
    const int ix = std::min(int(pos[i].x), g - 1), iy = std::min(int(pos[i].y), g - 1),
              iz = std::min(int(pos[i].z), g - 1);
    cell[i] = ix + g * (iy + g * iz);
  }
  float4* dpos = gpa::to_device(pos);
  float4* dvel = gpa::to_device(vel);
  int* dcell = gpa::to_device(cell);
  float* dex = gpa::to_device(ex);
  float* dey = gpa::to_device(ey);
  float* dez = gpa::to_device(ez);
  float4* dpos_out = gpa::device_alloc<float4>(np);
  float4* dvel_out = gpa::device_alloc<float4>(np);
  const int block = 1024, grid = (np + block - 1) / block;
  auto launch = [&] {
    push_particles<<<grid, block>>>(dpos, dvel, dcell, dex, dey, dez, dpos_out, dvel_out, np, dt, inv_c2);
  };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // reference in double on every 13th float of the results (4 per particle: all components)
  auto push = [&](size_t i, double* p4, double* v4) {
    const int c = cell[i];
    const double qdt = double(pos[i].w) * dt;
    double vx = vel[i].x + qdt * ex[c], vy = vel[i].y + qdt * ey[c], vz = vel[i].z + qdt * ez[c];
    const double gm = 1.0 / std::sqrt(1.0 + (vx * vx + vy * vy + vz * vz) * inv_c2);
    vx *= gm, vy *= gm, vz *= gm;
    const double pp[4] = {pos[i].x + dt * vx, pos[i].y + dt * vy, pos[i].z + dt * vz, pos[i].w};
    const double vv[4] = {vx, vy, vz, gm};
    std::copy(pp, pp + 4, p4);
    std::copy(vv, vv + 4, v4);
  };
  std::vector<float> got_pos = gpa::to_host(reinterpret_cast<float*>(dpos_out), size_t(4) * np);
  std::vector<float> got_vel = gpa::to_host(reinterpret_cast<float*>(dvel_out), size_t(4) * np);
  double p4[4], v4[4];
  gpa::check_close(got_pos, [&](size_t k) { push(k / 4, p4, v4); return p4[k % 4]; }, got_pos.size(), 1e-5, 1e-5,
                   "positions (every 13th value)", 13);
  gpa::check_close(got_vel, [&](size_t k) { push(k / 4, p4, v4); return v4[k % 4]; }, got_vel.size(), 1e-5, 1e-5,
                   "velocities (every 13th value)", 13);

  gpa::time_kernel("push_particles", opt, launch);
  return 0;
}

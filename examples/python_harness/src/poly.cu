// Built by gpa's [build] into build/poly.cubin (nvcc -cubin) and loaded by harness.py with
// cuModuleLoadData. The recurrence is float code written with double literals: every step
// converts v to double and back (F2F) around an FP64 fused multiply-add, on the H100's slow
// conversion and FP64 pipes. With 0.5f and 0.25f it stays in float (one FFMA a step).
extern "C" __global__ void poly_double(const float* __restrict__ x, float* __restrict__ y, int n, int steps) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int k = 0; k < steps; ++k)
    v = v * 0.5 + 0.25;
  y[i] = v;
}

"""CUDA sources of the static-side tests; ``// @name`` markers name the lines the tests look for."""

NESTED = r"""
__device__ __forceinline__ float sq(float x) {
    return x * x + 1.0f;                                   // @sq_body
}
__device__ __noinline__ float callee(float x, int n) {
    float s = 0;
    for (int i = 0; i < n; ++i) s += __sinf(x * i);      // @callee_loop
    return s;
}
__global__ void nested(const float* __restrict__ a, float* b, int n, int m) {
    __shared__ float tile[256];
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    float acc = 0;
    for (int i = 0; i < n; ++i) {                          // @outer
        #pragma unroll 2
        for (int j = 0; j < m; ++j) {                      // @inner
            acc += a[(size_t)i * m + j + t];               // @inner_body
        }
    }
    tile[threadIdx.x] = acc;
    __syncthreads();
    float v = sq(tile[(threadIdx.x + 1) % 256]);           // @call1
    v += sq(acc);                                          // @call2
    if (t < n) v += callee(v, m);                          // @call_noinline
    b[t] = v;
}
__global__ void __launch_bounds__(128) twice(double* d, const float* f, float* o, int n) {
    int t = threadIdx.x;
    if (t < n) d[t] = d[t] * 2.0;
    float x = f[t];
    if (x > 0.5f) x = x * x + f[t + n];
    o[t] = x;
}
"""


def line_of(source: str, marker: str) -> int:
    for k, text in enumerate(source.splitlines(), start=1):
        if f"// @{marker}" in text:
            return k
    raise KeyError(marker)

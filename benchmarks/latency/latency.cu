// Dependent-issue latency of SASS instructions on the GPU it runs on (built for sm_90).
//
// Method: one warp runs a long chain in which every instruction reads the
// result of the one before it (inline PTX so that the front end keeps each
// step; the SASS of every chain is checked by run.sh).  clock64() is read
// before and after the chain; cycles / chain length = the latency the
// scheduler waits between a def and its first dependent issue.  Each chain is
// run REPS times in the same launch and the fastest pass is kept (the first
// one warms the instruction cache and, for memory chains, the data caches).
// Chains built of two kinds of instruction (a round trip, or a MUFU.SIN with
// its FMUL.RZ pre-scale) are reported with the partner's latency subtracted;
// the raw figures are kept under "raw" in the JSON.
//
// Prints one JSON object: {"sm": 90, "device": ..., "latencies": {...}, "raw": {...}, ...}.

#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <random>
#include <string>
#include <algorithm>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #x, __FILE__, __LINE__, cudaGetErrorString(e_)); \
    exit(1); } } while (0)

constexpr int UNROLL = 128;   // dependent steps per loop body
constexpr int REPS = 3;       // passes per launch, fastest kept

// One kernel per chain.  `x` is the chain's value, `k` a run-time operand the
// compiler cannot fold, `iters` loop trips of UNROLL steps each.
#define CHAIN_KERNEL(NAME, T, STEP)                                               \
__global__ void NAME(T* out, long long* cycles, T seed, T k, int iters) {         \
    /* a lane-dependent select the compiler cannot resolve keeps x and k2 out  */ \
    /* of the uniform datapath (never taken: threadIdx.x < 32)                 */ \
    T x = seed, k2 = k;                                                           \
    if (threadIdx.x == (unsigned)iters + 1000u) { x = k; k2 = seed; }             \
    long long best = 0x7fffffffffffffffLL;                                        \
    _Pragma("unroll 1")                                                           \
    for (int rep = 0; rep < REPS; ++rep) {                                        \
        __syncwarp();                                                             \
        long long t0 = clock64();                                                 \
        _Pragma("unroll 1")                                                       \
        for (int i = 0; i < iters; ++i) {                                         \
            _Pragma("unroll")                                                     \
            for (int j = 0; j < UNROLL; ++j) { STEP; }                            \
        }                                                                         \
        long long t1 = clock64();                                                 \
        best = (t1 - t0) < best ? (t1 - t0) : best;                               \
    }                                                                             \
    if (threadIdx.x == 0) { out[0] = x + k2; cycles[0] = best; }                  \
}

// ---- integer -------------------------------------------------------------------------
// two PTX adds with two run-time operands fuse into one 3-input IADD3 per step (a single
// add of a loop-invariant would be folded into x + n*k or split over IADD3/IMAD.IADD)
CHAIN_KERNEL(k_iadd3, uint32_t, asm volatile("add.u32 %0, %0, %1; add.u32 %0, %0, %2;" : "+r"(x) : "r"(k), "r"(k2)))
CHAIN_KERNEL(k_lop3, uint32_t, asm volatile("lop3.b32 %0, %0, %1, %0, 0x96;" : "+r"(x) : "r"(k)))
CHAIN_KERNEL(k_imad, uint32_t, asm volatile("mad.lo.u32 %0, %0, %1, %1;" : "+r"(x) : "r"(k)))
// hi(x) * lo(k) + k2 as a 64-bit result: IMAD.WIDE.U32 R, R, R, R; the chain runs through
// the high half, which needs the whole wide product (the low half alone would be an IMAD)
CHAIN_KERNEL(k_imad_wide, uint64_t,
    asm volatile("{ .reg .u32 lo, hi, m, mh; mov.b64 {lo, hi}, %0; mov.b64 {m, mh}, %1; "
                 "mad.wide.u32 %0, hi, m, %2; }" : "+l"(x) : "l"(k), "l"(k2)))
CHAIN_KERNEL(k_popc, uint32_t, asm volatile("popc.b32 %0, %0;" : "+r"(x)))
CHAIN_KERNEL(k_flo, uint32_t, asm volatile("bfind.u32 %0, %0;" : "+r"(x)))
// predicate chain: each ISETP reads the previous predicate (its .XOR combining input)
CHAIN_KERNEL(k_isetp, uint32_t,
    asm volatile("{ .reg .pred p; setp.ne.u32 p, %0, 0; "
                 "setp.lt.xor.u32 p, %1, %0, p; setp.lt.xor.u32 p, %0, %1, p; "
                 "setp.gt.xor.u32 p, %1, %0, p; setp.gt.xor.u32 p, %0, %1, p; "
                 "selp.u32 %0, 1, 0, p; }" : "+r"(x) : "r"(k)))

// ---- floating point ------------------------------------------------------------------
CHAIN_KERNEL(k_fadd, float, asm volatile("add.f32 %0, %0, %1;" : "+f"(x) : "f"(k)))
CHAIN_KERNEL(k_fmul, float, asm volatile("mul.f32 %0, %0, %1;" : "+f"(x) : "f"(k)))
CHAIN_KERNEL(k_ffma, float, asm volatile("fma.rn.f32 %0, %0, %1, %1;" : "+f"(x) : "f"(k)))
CHAIN_KERNEL(k_hfma2, uint32_t, asm volatile("fma.rn.f16x2 %0, %0, %1, %1;" : "+r"(x) : "r"(k)))
CHAIN_KERNEL(k_dfma, double, asm volatile("fma.rn.f64 %0, %0, %1, %1;" : "+d"(x) : "d"(k)))
CHAIN_KERNEL(k_dadd, double, asm volatile("add.f64 %0, %0, %1;" : "+d"(x) : "d"(k)))

// ---- MUFU ----------------------------------------------------------------------------
// rcp(rcp(x)) folds to x: an |.| between steps (FADD.FTZ |R|, -RZ) prevents it; FADD subtracted
CHAIN_KERNEL(k_rcp, float, asm volatile("{ .reg .f32 t; abs.ftz.f32 t, %0; rcp.approx.ftz.f32 %0, t; }" : "+f"(x)))
CHAIN_KERNEL(k_ex2, float, asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x)))
CHAIN_KERNEL(k_lg2, float, asm volatile("lg2.approx.ftz.f32 %0, %0;" : "+f"(x)))
CHAIN_KERNEL(k_sin, float, asm volatile("sin.approx.ftz.f32 %0, %0;" : "+f"(x)))   // FMUL.RZ + MUFU.SIN

// ---- conversions ---------------------------------------------------------------------
// F2F f32->f64 then f64->f32: a round trip; F2F is reported as half of it.
CHAIN_KERNEL(k_f2f, float,
    asm volatile("{ .reg .f64 d; cvt.f64.f32 d, %0; cvt.rn.f32.f64 %0, d; }" : "+f"(x)))
// I2F.F64 (s32 -> f64): the double's halves are XORed (LOP3, subtracted) into the next input
CHAIN_KERNEL(k_i2f64, uint32_t,
    asm volatile("{ .reg .f64 d; .reg .u32 lo, hi; cvt.rn.f64.s32 d, %0; mov.b64 {lo, hi}, d; "
                 "xor.b32 %0, lo, hi; }" : "+r"(x)))
// I2FP.F32.S32 (sm_90's s32 -> f32) alone: the float's bits feed the next I2F as an integer (a register move is free)
CHAIN_KERNEL(k_i2f, uint32_t,
    asm volatile("{ .reg .f32 f; cvt.rn.f32.s32 f, %0; mov.b32 %0, f; }" : "+r"(x)))
// F2I alone: the integer's bits feed the next F2I as a float
CHAIN_KERNEL(k_f2i, float,
    asm volatile("{ .reg .s32 i; cvt.rzi.s32.f32 i, %0; mov.b32 %0, i; }" : "+f"(x)))

// ---- warp shuffle --------------------------------------------------------------------
CHAIN_KERNEL(k_shfl, uint32_t,
    // the source lane is x itself (lane = x & 31): ptxas folds repeated shuffles from a
    // fixed lane into one, but not these
    asm volatile("shfl.sync.idx.b32 %0, %0, %0, 0x1f, 0xffffffff;" : "+r"(x)))

// ---- special registers ---------------------------------------------------------------
// S2R/S2UR have no register input, so an unrolled chain of them is hoisted and
// pipelined.  Instead each trip of a plain loop reads the register once and adds it
// (+1) into x, and the loop runs while x < limit: the read -> IADD3 -> ISETP -> BRA
// path is serial, so a trip costs the read's latency more than the same loop adding
// a register (mode 0).  Modes 1 and 2 read %smid (SR_VIRTUALSMID: volatile, so read
// every trip); ptxas reads it with S2UR in mode 1 (x lane-dependent) and with S2R in
// mode 2 (x warp-uniform).  %tid.x would be read once and reused by ptxas, and %clock
// is CS2R.32 (fixed latency, no scoreboard) on sm_90.  The loop's fixed stall cycles
// come from its SASS (sreg_loop.py, run by run.sh, passes them as arguments).
template <int MODE>
__global__ void k_sreg(uint32_t* out, long long* cycles, uint32_t seed, uint32_t k, int iters) {
    uint32_t k2 = k;
    if (threadIdx.x == (unsigned)iters + 1000u) k2 = seed;
    uint32_t step;                        // what each trip adds, read once before the loop
    if (MODE >= 1) asm volatile("mov.u32 %0, %%smid;" : "=r"(step));
    else step = k2;
    long long best = 0x7fffffffffffffffLL;
    uint32_t x = seed;
    if (MODE != 2 && threadIdx.x == (unsigned)iters + 1000u) x = k;
#pragma unroll 1
    for (int rep = 0; rep < REPS; ++rep) {
        uint32_t limit = x + (uint32_t)(iters * UNROLL) * (step + 1u);
        __syncwarp();
        long long t0 = clock64();
        do {
            uint32_t v;
            if (MODE >= 1) asm volatile("mov.u32 %0, %%smid;" : "=r"(v));
            else v = k2;
            x = x + v + 1u;
        } while (x < limit);
        long long t1 = clock64();
        best = (t1 - t0) < best ? (t1 - t0) : best;
    }
    if (threadIdx.x == 0) { out[0] = x; cycles[0] = best; }
}

// ---- memory pointer chases -----------------------------------------------------------
// global: each element holds the address of the next (64-bit generic == global here)
// plain ld.global (LDG.E.64, what compiled code uses) for L1 hits and DRAM misses; .cg
// (LDG.E.64.STRONG.GPU: served by L2, never by L1) for L2 hits
CHAIN_KERNEL(k_ldg, uint64_t, asm volatile("ld.global.u64 %0, [%0];" : "+l"(x) :: "memory"))
CHAIN_KERNEL(k_ldg_cg, uint64_t, asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(x) :: "memory"))
// shared: a 32-bit shared-window address chain; seed = lane's slot, set up in the kernel
__global__ void k_lds(uint32_t* out, long long* cycles, uint32_t seed, uint32_t stride_words, int iters) {
    __shared__ uint32_t s[32 * 33];
    uint32_t lane = threadIdx.x;
    uint32_t slot = lane * stride_words;               // stride 1: no conflict; 32: 32-way conflict
    uint32_t addr = (uint32_t)__cvta_generic_to_shared(&s[slot]);
    s[slot] = addr;                                    // each lane's word points to itself
    __syncwarp();
    uint32_t x = addr + seed;                          // seed is 0 (opaque to the compiler)
    long long best = 0x7fffffffffffffffLL;
#pragma unroll 1
    for (int rep = 0; rep < REPS; ++rep) {
        __syncwarp();
        long long t0 = clock64();
#pragma unroll 1
        for (int i = 0; i < iters; ++i) {
#pragma unroll
            for (int j = 0; j < UNROLL; ++j) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(x));
        }
        long long t1 = clock64();
        best = (t1 - t0) < best ? (t1 - t0) : best;
    }
    if (threadIdx.x == 0) { out[0] = x; cycles[0] = best; }
}

// constant: the word at the constant-space address x holds x itself
__constant__ uint64_t cbuf[16];
__global__ void k_const_addr(uint64_t* out) {
    uint64_t a;
    asm volatile("mov.u64 %0, cbuf;" : "=l"(a));
    out[0] = a;
}
CHAIN_KERNEL(k_ldc, uint64_t, asm volatile("ld.const.u64 %0, [%0];" : "+l"(x)))

// barrier: one warp, back-to-back bar.sync 0
__global__ void k_bar(uint32_t* out, long long* cycles, uint32_t seed, uint32_t k, int iters) {
    long long best = 0x7fffffffffffffffLL;
#pragma unroll 1
    for (int rep = 0; rep < REPS; ++rep) {
        long long t0 = clock64();
#pragma unroll 1
        for (int i = 0; i < iters; ++i) {
#pragma unroll
            for (int j = 0; j < UNROLL; ++j) asm volatile("bar.sync 0;" ::: "memory");
        }
        long long t1 = clock64();
        best = (t1 - t0) < best ? (t1 - t0) : best;
    }
    if (threadIdx.x == 0) { out[0] = seed; cycles[0] = best; }
}

// ---- host --------------------------------------------------------------------------------

static long long* d_cycles;
static void* d_out;

template <typename T>
static double run_chain(void (*kern)(T*, long long*, T, T, int), T seed, T k, int iters) {
    kern<<<1, 32>>>((T*)d_out, d_cycles, seed, k, iters);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    long long c = 0;
    CHECK(cudaMemcpy(&c, d_cycles, sizeof c, cudaMemcpyDeviceToHost));
    return (double)c / ((double)iters * UNROLL);
}

// A random cyclic chain of 64-bit pointers, one per `line` bytes, over `bytes`.
static uint64_t* make_chase(size_t bytes, size_t line, uint64_t* first) {
    size_t n = bytes / line;
    char* dev = nullptr;
    CHECK(cudaMalloc(&dev, bytes));
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    std::mt19937_64 rng(12345);
    std::shuffle(order.begin() + 1, order.end(), rng);
    std::vector<char> host(bytes, 0);
    for (size_t i = 0; i < n; ++i) {
        uint64_t next = (uint64_t)(dev + order[(i + 1) % n] * line);
        memcpy(&host[order[i] * line], &next, sizeof next);
    }
    CHECK(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice));
    *first = (uint64_t)dev;
    return (uint64_t*)dev;
}

// argv: S2UR_TAIL S2R_TAIL UNUSED BASE_STALLS from sreg_loop.py (optional)
int main(int argc, char** argv) {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    CHECK(cudaMalloc(&d_cycles, sizeof(long long)));
    CHECK(cudaMalloc(&d_out, 64));

    const int IT = 32;   // 32 * 128 = 4096 dependent steps per pass
    std::vector<std::pair<std::string, double>> raw, lat;
    auto put = [&](std::vector<std::pair<std::string, double>>& v, const char* name, double c) {
        v.emplace_back(name, c);
    };

    double iadd3 = run_chain<uint32_t>(k_iadd3, 1u, 3u, IT);
    double lop3 = run_chain<uint32_t>(k_lop3, 1u, 0x5a5a5a5au, IT);
    double imad = run_chain<uint32_t>(k_imad, 1u, 3u, IT);
    double imadw = run_chain<uint64_t>(k_imad_wide, 0x300000001ull, 0ull, IT);
    double popc = run_chain<uint32_t>(k_popc, 0xffu, 0u, IT);
    double flo = run_chain<uint32_t>(k_flo, 0xffu, 0u, IT);
    double isetp_raw = run_chain<uint32_t>(k_isetp, 1u, 7u, IT);
    double fadd = run_chain<float>(k_fadd, 1.0f, 1e-7f, IT);
    double fmul = run_chain<float>(k_fmul, 1.0f, 1.0000001f, IT);
    double ffma = run_chain<float>(k_ffma, 1.0f, 0.5f, IT);
    double hfma2 = run_chain<uint32_t>(k_hfma2, 0x3c003c00u, 0x38003800u, IT);
    double dfma = run_chain<double>(k_dfma, 1.0, 0.5, IT);
    double dadd = run_chain<double>(k_dadd, 1.0, 1e-9, IT);
    double rcp = run_chain<float>(k_rcp, 1.5f, 0.0f, IT);
    double ex2 = run_chain<float>(k_ex2, 0.5f, 0.0f, IT);
    double lg2 = run_chain<float>(k_lg2, 1.5f, 0.0f, IT);
    double sin_raw = run_chain<float>(k_sin, 0.5f, 0.0f, IT);
    double f2f_rt = run_chain<float>(k_f2f, 1.5f, 0.0f, IT);
    double i2f = run_chain<uint32_t>(k_i2f, 12345u, 0u, IT);
    double i2f64_raw = run_chain<uint32_t>(k_i2f64, 12345u, 0u, IT);
    double f2i = run_chain<float>(k_f2i, 12345.0f, 0.0f, IT);
    double shfl = run_chain<uint32_t>(k_shfl, 5u, 0u, IT);
    double loop_base = run_chain<uint32_t>(k_sreg<0>, 0u, 0u, IT);   // k = 0: +1 per trip
    double loop_s2ur = run_chain<uint32_t>(k_sreg<1>, 0u, 0u, IT);
    double loop_s2r = run_chain<uint32_t>(k_sreg<2>, 0u, 0u, IT);

    double bar = run_chain<uint32_t>(k_bar, 0u, 0u, IT);

    // shared memory
    double lds = 0, lds_conflict = 0;
    {
        int iters = IT;
        for (int stride : {1, 32}) {
            k_lds<<<1, 32>>>((uint32_t*)d_out, d_cycles, 0u, (uint32_t)stride, iters);
            CHECK(cudaGetLastError());
            CHECK(cudaDeviceSynchronize());
            long long c;
            CHECK(cudaMemcpy(&c, d_cycles, sizeof c, cudaMemcpyDeviceToHost));
            (stride == 1 ? lds : lds_conflict) = (double)c / ((double)iters * UNROLL);
        }
    }

    // constant memory: find cbuf's constant-space address, store it in cbuf[0]
    double ldc = 0;
    {
        k_const_addr<<<1, 1>>>((uint64_t*)d_out);
        CHECK(cudaDeviceSynchronize());
        uint64_t a = 0;
        CHECK(cudaMemcpy(&a, d_out, sizeof a, cudaMemcpyDeviceToHost));
        uint64_t init[16] = {a};
        CHECK(cudaMemcpyToSymbol(cbuf, init, sizeof init));
        ldc = run_chain<uint64_t>(k_ldc, a, 0ull, IT);
    }

    // global memory
    double l1 = 0, l2 = 0, dram = 0;
    size_t dram_bytes = (size_t)prop.l2CacheSize * 8;
    {
        uint64_t first;
        uint64_t* small = make_chase(16 * 128, 128, &first);          // 2 KiB: L1-resident
        l1 = run_chain<uint64_t>(k_ldg, first, 0ull, IT);
        // 512 KiB, 4096 lines: one pass walks the whole cycle once, so the first pass
        // fills L2 and the later ones hit it (.cg skips L1, which is also smaller)
        uint64_t* mid = make_chase(4096 * 128, 128, &first);
        l2 = run_chain<uint64_t>(k_ldg_cg, first, 0ull, IT);
        uint64_t* big = make_chase(dram_bytes, 256, &first);          // 8x L2: misses to DRAM
        // one pass only (REPS passes continue along the cycle; no line is revisited)
        dram = run_chain<uint64_t>(k_ldg, first, 0ull, 4);
        CHECK(cudaFree(small)); CHECK(cudaFree(mid)); CHECK(cudaFree(big));
    }

    put(raw, "ISETP_chain", isetp_raw);
    put(raw, "MUFU.SIN_with_FMUL.RZ", sin_raw);
    put(raw, "F2F_roundtrip_f32_f64_f32", f2f_rt);
    put(raw, "MUFU.RCP_with_FADD_abs", rcp);
    put(raw, "I2F.F64_with_LOP3", i2f64_raw);
    put(raw, "loop_trip_base", loop_base);
    put(raw, "loop_trip_S2UR_SR_VIRTUALSMID", loop_s2ur);
    put(raw, "loop_trip_S2R_SR_VIRTUALSMID", loop_s2r);
    put(raw, "LDS_32way_conflict", lds_conflict);

    put(lat, "IADD3", iadd3);
    put(lat, "LOP3", lop3);
    put(lat, "IMAD", imad);
    // per step: IMAD.WIDE -> IADD3 (carry out) -> IMAD.X or IADD3.X -> next IMAD.WIDE (ptxas
    // splits the 64-bit addend off); the two partners are taken out with the IADD3/IMAD figures
    put(raw, "IMAD.WIDE_IADD3_X_chain", imadw);
    put(lat, "IMAD.WIDE", imadw - iadd3 - 0.5 * (iadd3 + imad));
    // ISETP chain: ptxas folds the setp.ne into the first XOR, so a step is four ISETPs,
    // each reading the previous one's predicate (the first reads SEL's register), and a
    // SEL reading the last predicate: 4 predicate latencies + 1 SEL (~ IADD3).
    put(lat, "ISETP", (isetp_raw - iadd3) / 4.0);
    put(lat, "FADD", fadd);
    put(lat, "FMUL", fmul);
    put(lat, "FFMA", ffma);
    put(lat, "HFMA2", hfma2);
    put(lat, "DFMA", dfma);
    put(lat, "DADD", dadd);
    put(lat, "MUFU.RCP", rcp - fadd);
    put(lat, "MUFU.EX2", ex2);
    put(lat, "MUFU.LG2", lg2);
    put(lat, "MUFU.SIN", sin_raw - fmul);
    put(lat, "F2F", f2f_rt / 2.0);
    put(lat, "I2FP", i2f);
    put(lat, "I2F.F64", i2f64_raw - lop3);
    put(lat, "F2I", f2i);
    put(lat, "POPC", popc);
    put(lat, "FLO", flo);
    put(lat, "SHFL", shfl);
    put(lat, "LDS", lds);
    put(lat, "LDS_conflict32", lds_conflict);
    put(lat, "LDG_L1_hit", l1);
    put(lat, "LDG_L2_hit", l2);
    put(lat, "LDG_DRAM", dram);
    put(lat, "LDC", ldc);
    // a trip minus the fixed stalls after the read's consumer, minus what a taken branch
    // costs beyond its stall count (from the base loop); see sreg_loop.py
    if (argc == 5) {
        double branch_extra = loop_base - atof(argv[4]);
        put(lat, "S2UR", loop_s2ur - atof(argv[1]) - branch_extra);
        put(lat, "S2R", loop_s2r - atof(argv[2]) - branch_extra);
    }
    put(lat, "BAR.SYNC", bar);

    printf("{\"sm\": %d, \"device\": \"%s\", \"sm_count\": %d, \"l2_bytes\": %d,\n",
           prop.major * 10 + prop.minor, prop.name, prop.multiProcessorCount, prop.l2CacheSize);
    printf(" \"method\": \"one warp, dependent chain of %d steps per pass (DRAM: %d over %zu bytes), "
           "clock64 around it, fastest of %d passes; cycles per step\",\n",
           IT * UNROLL, 4 * UNROLL, dram_bytes, REPS);
    printf(" \"latencies\": {");
    for (size_t i = 0; i < lat.size(); ++i)
        printf("%s\n  \"%s\": %.2f", i ? "," : "", lat[i].first.c_str(), lat[i].second);
    printf("\n },\n \"raw\": {");
    for (size_t i = 0; i < raw.size(); ++i)
        printf("%s\n  \"%s\": %.2f", i ? "," : "", raw[i].first.c_str(), raw[i].second);
    printf("\n }\n}\n");
    return 0;
}

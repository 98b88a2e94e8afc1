/*
 * gpa_inject: CUPTI PC sampling (continuous mode) as a CUDA injection library.
 *
 * Loaded by the driver through CUDA_INJECTION64_PATH, which calls
 * InitializeInjection() at cuInit. It
 *   - on context creation: enables and configures PC sampling (all stall
 *     reasons, period GPA_CUPTI_SAMPLING_PERIOD, continuous mode);
 *   - on module load: saves the cubin (named by CUPTI's CRC) so PCs can be
 *     read back against it, and takes the records CUPTI flushed for the
 *     range that ended;
 *   - on each kernel launch (driver API, which the runtime goes through):
 *     writes grid, block, dynamic shared memory and the correlation id, and
 *     drains CUPTI's buffer when it fills up;
 *   - traces CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL records (the kernel
 *     activity is separate from the legacy PC-sampling activity that CUDA 13
 *     removed, and does not serialize kernels): start/end, registers per
 *     thread, static and dynamic shared memory, joined to the launch by
 *     correlation id; CUPTI hands full buffers to buffer_completed from its
 *     own thread, and everything is flushed at context destroy and exit;
 *   - drains every context's samples every GPA_CUPTI_DRAIN_MS (default 100)
 *     from a thread of its own: cuptiPCSamplingGetData never synchronizes the
 *     device (cupti_pcsampling.h), so a single kernel that runs for seconds
 *     is drained while it runs, not only at its launch's exit;
 *   - on module unload, context destruction and process exit: drains
 *     everything and disables sampling.
 * One context per device is sampled at a time: measured on an H200 with
 * CUPTI 13.0.1 (scripts/gpu/two_contexts.cu), enabling PC sampling on a
 * second context of the same device makes cuptiPCSamplingGetData fail with
 * CUPTI_ERROR_UNKNOWN on both, loses every sample and every kernel activity
 * record. So the first context of a device samples it until it is destroyed;
 * a context created meanwhile gets its launch records only (a W record).
 * Modes (GPA_CUPTI_MODE):
 *   sampling (default): the above. GPA_CUPTI_KERNELS (names separated by
 *     newlines, at most GPA_MAX_FILTERS) samples only launches of kernels whose
 *     mangled or demangled name contains one of them, through CUPTI's
 *     start/stop control: sampling is started at the launch of a matching
 *     kernel and stopped at the launch of one that does not match.
 *   durations (or GPA_CUPTI_NO_PCSAMPLING): launch and kernel activity
 *     records only (the verification's timings).
 *   counters: no PC sampling and no activity records; the launches of the
 *     kernels named in GPA_CUPTI_KERNELS (GPA_CUPTI_COUNTER_LAUNCHES of each,
 *     default 1) are measured with the Range Profiler (auto range, kernel
 *     replay) for the metrics in GPA_CUPTI_METRICS (comma separated); one U
 *     record per launch. With GPA_CUPTI_EXIT_WHEN_DONE the process exits (0)
 *     as soon as every named kernel has its launches measured: the rest of
 *     the harness is not needed for unit throughput. Unit throughput cannot be
 *     measured in the sampling run: on the H100 with CUPTI 13.0.1 enabling the
 *     Range Profiler silently stops PC sampling (benchmarks/profiling/README.md).
 * GPA_CUPTI_TIMING=1 adds Z records: where the start-up goes.
 * GPA_CUPTI_DONE names a FIFO the caller reads: once END is written and
 *   flushed, the library writes "<pid> <bytes of cupti.txt through END>\n" to
 *   it (opened non-blocking: no reader, no wait), so the caller can read the
 *   output while the process is still ending (its exit takes 0.15 s after the
 *   last record on the H100: the other libraries' destructors, the GPU
 *   context's teardown); gpa_lsp/profile/cupti/done_signal.py. When END is
 *   written by the process's exit (an on_exit handler), a third field gives the
 *   status the process passed to exit(): the caller may then stop waiting.
 * Everything goes to GPA_CUPTI_OUT/cupti.txt, one record a line, which
 * gpa_lsp/profile/cupti/reader.py turns into a Profile. Failures (no
 * permission for the counters, a full hardware buffer) are written there as
 * records too, so the caller can say what happened.
 *
 * Record lines (fields separated by one space; a name is always last):
 *   V <format> <cupti api version> <sampling period>
 *   D <ctx> <ordinal> <cc major> <cc minor> <sm count> <clock kHz> <max threads/sm>
 *     <max blocks/sm> <regs/sm> <smem/sm> <max threads/block> <driver version> <name>
 *   R <ctx> <reason index> <reason name>
 *   M <ctx> <crc hex> <module id> <size> <file name>
 *   L <ctx> <crc hex or 0> <gx> <gy> <gz> <bx> <by> <bz> <dyn smem> <correlation id> <kernel name>
 *   K <ctx> <correlation id> <start ns> <end ns> <regs/thread> <static smem> <dyn smem>
 *     <gx> <gy> <gz> <bx> <by> <bz> <kernel name>          (kernel activity record)
 *   Y <activity records CUPTI dropped>
 *   B <valid bytes> <records> <kernel records>               (one activity buffer handed back)
 *   C <ctx> <0/1 sampling was on>                            (context destroy callback)
 *   W <ctx> <device> <ctx that samples that device>          (this context is not sampled)
 *   Q <ctx> <drains at launch exit> <periodic drains>
 *   P <ctx> <crc hex> <pc offset hex> <function name> <idx>:<samples> ...
 *   T <ctx> <total samples> <dropped samples> <non-user samples> <hardware buffer full 0/1>
 *   E <ctx> <cupti code> <where> <message>
 *   X <launches not written> [<kernel records not written>]
 *   N <ctx> <metric index> <metric name>                     (counters mode)
 *   G <ctx> <passes> <metrics> <chip>                        (counters mode: replay passes per launch)
 *   U <ctx> <correlation id> <range index> <value>... <kernel name>  (counters mode, one per measured
 *     launch; values in N order, "nan" when CUPTI could not evaluate one)
 *   O counters <filters> <metrics> <launches per kernel> | O filter <filters>   (the run's options)
 *   S <ctx> <sampling starts>                                (kernel filter: start/stop ranges)
 *   F <launches measured>                                    (counters mode: exiting, all measured)
 *   Z <label> <ns since InitializeInjection>                 (GPA_CUPTI_TIMING; "Z clock0 <ns>": the
 *     CLOCK_MONOTONIC time of InitializeInjection, so a caller can place the marks in its own clock)
 *   END
 */
#define _GNU_SOURCE
/* Only the CUPTI headers this file needs: cupti.h pulls in the runtime's
 * generated meta headers, which break when the CUPTI wheel is newer than the
 * toolkit's cuda_runtime_api.h. */
#include <cuda.h>
#include <cupti_result.h>
#include <cupti_version.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_pcsampling.h>
#include <cupti_activity.h>
#ifndef GPA_NO_RANGE_PROFILER
/* CUPTI 12.6+; builder.py retries with -DGPA_NO_RANGE_PROFILER where they are missing */
#include <cupti_target.h>
#include <cupti_profiler_target.h>
#include <cupti_profiler_host.h>
#include <cupti_range_profiler.h>
#endif

#include <dlfcn.h>
#include <fcntl.h>
#include <math.h>
#include <unistd.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <stddef.h>

/* The head of the kernel activity record: the same from CUpti_ActivityKernel4
 * (CUDA 9) to CUpti_ActivityKernel13 (CUPTI 13.x), and the record CUPTI hands
 * back is the newest version of its release, whose struct name changes from
 * release to release. Reading this fixed head keeps the library building
 * against any CUPTI 12/13; tests compile it with -DGPA_CHECK_LAYOUT to check
 * the offsets against the installed header. */
typedef struct __attribute__((packed, aligned(8))) {
    uint32_t kind;
    uint8_t cacheConfig;
    uint8_t sharedMemoryConfig;
    uint16_t registersPerThread;
    uint32_t partitionedGlobalCacheRequested;
    uint32_t partitionedGlobalCacheExecuted;
    uint64_t start;
    uint64_t end;
    uint64_t completed;
    uint32_t deviceId;
    uint32_t contextId;
    uint32_t streamId;
    int32_t gridX, gridY, gridZ;
    int32_t blockX, blockY, blockZ;
    int32_t staticSharedMemory;
    int32_t dynamicSharedMemory;
    uint32_t localMemoryPerThread;
    uint32_t localMemoryTotal;
    uint32_t correlationId;
    int64_t gridId;
    const char *name;
} gpa_kernel_record;

#define GPA_SAME_OFFSET(f) _Static_assert(offsetof(gpa_kernel_record, f) == offsetof(GPA_CHECK_LAYOUT, f), #f)
#ifdef GPA_CHECK_LAYOUT
GPA_SAME_OFFSET(registersPerThread);
GPA_SAME_OFFSET(start);
GPA_SAME_OFFSET(end);
GPA_SAME_OFFSET(contextId);
GPA_SAME_OFFSET(gridX);
GPA_SAME_OFFSET(blockZ);
GPA_SAME_OFFSET(staticSharedMemory);
GPA_SAME_OFFSET(dynamicSharedMemory);
GPA_SAME_OFFSET(correlationId);
GPA_SAME_OFFSET(name);
#endif

/* The parameter blocks of the launch entry points (their C signatures are
 * frozen, so these match generated_cuda_meta.h of every CUDA 12/13). The
 * cooperative and _ptsz variants share the first layout. */
typedef struct {
    CUfunction f;
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    CUstream hStream;
    void **kernelParams;
    void **extra;
} gpa_launch_params;

typedef struct {
    const CUlaunchConfig *config;
    CUfunction f;
    void **kernelParams;
    void **extra;
} gpa_launch_ex_params;

#define GPA_FORMAT 2
#define GPA_ACTIVITY_BUFFER_BYTES (4u << 20)
#define GPA_MAX_KERNEL_LINES 200000
#define GPA_GETDATA_PCS 5000
#define GPA_DRAIN_REMAINING 1000
#define GPA_DRAIN_EVERY_LAUNCHES 256
#define GPA_DRAIN_EVERY_NS 50000000ull
#define GPA_MAX_LAUNCH_LINES 200000
#define GPA_MAX_FILTERS 32
#define GPA_MAX_METRICS 32
#define GPA_MAX_COUNTER_RANGES 256
#define GPA_NAME_CACHE 256

enum { GPA_MODE_SAMPLING = 0, GPA_MODE_DURATIONS = 1, GPA_MODE_COUNTERS = 2 };

typedef struct GpaCtx {
    CUcontext ctx;
    uint32_t uid;
    uint32_t dev_id;
    int enabled;
    size_t num_reasons;
    uint32_t *reason_index;
    char **reason_names;
    CUpti_PCSamplingData config_buf;  /* CUPTI flushes here on range end / disable */
    CUpti_PCSamplingData get_buf;     /* cuptiPCSamplingGetData fills this one */
    uint64_t launches_since_drain;
    uint64_t last_drain_ns;
    uint64_t exit_drains;
    uint64_t periodic_drains;
    int started;                      /* start/stop control: sampling between a matching launch and the next other one */
    uint64_t starts;
#ifndef GPA_NO_RANGE_PROFILER
    /* counters mode: the Range Profiler of this context */
    int rp_state;                     /* 0 not set up, 2 host side ready, 1 ready, -1 failed */
    int rp_active;                    /* started at this launch's entry */
    CUpti_RangeProfiler_Object *rp;
    CUpti_Profiler_Host_Object *host;
    uint8_t *config_image;
    size_t config_size;
    uint8_t *counter_data;
    size_t counter_size;
    size_t ranges_read;
    uint32_t rp_corr;
    int rp_filter;
    char rp_name[1024];
    const char *metrics[GPA_MAX_METRICS];   /* the metrics CUPTI accepted, in N order */
    size_t nmetrics;
#endif
    struct GpaCtx *next;
} GpaCtx;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *g_out = NULL;
static char g_dir[4096];
static int g_initialized = 0;
static int g_finished = 0;
static int g_exit_status = -1;      /* the status passed to exit(), once on_exit saw it; -1: not known */
static uint32_t g_period = 12;
static size_t g_scratch_bytes = 0;
static size_t g_hw_bytes = 0;
static GpaCtx *g_ctxs = NULL;
static uint64_t g_launch_lines = 0;
static uint64_t g_launches_unwritten = 0;
static uint64_t g_kernel_lines = 0;        /* under the stream's lock */
static uint64_t g_kernels_unwritten = 0;
static uint32_t g_drain_ms = 100;
static uint32_t g_sleep_ms = 0;
static int g_activity = 0;
static CUpti_SubscriberHandle g_subscriber;
static int g_mode = GPA_MODE_SAMPLING;
static char *g_filters[GPA_MAX_FILTERS];
static size_t g_nfilters = 0;
static uint64_t g_filter_measured[GPA_MAX_FILTERS] __attribute__((unused));   /* counters mode: launches measured per filter */
static uint64_t g_counter_launches = 1;
static uint64_t g_measured __attribute__((unused)) = 0;
static int g_exit_when_done = 0;
static const char *g_metrics[GPA_MAX_METRICS];
static size_t g_nmetrics = 0;
static int g_timing = 0;
static uint64_t g_t0 = 0;
/* launch name -> filter index (or -1): the names seen so far */
static const char *g_cache_name[GPA_NAME_CACHE];
static int g_cache_match[GPA_NAME_CACHE];
static size_t g_cache_n = 0;
typedef char *(*PFN_cxa_demangle)(const char *, char *, size_t *, int *);
static PFN_cxa_demangle p_cxa_demangle;

/* driver entry points, looked up in the libcuda the process already has */
typedef CUresult (*PFN_DeviceGet)(CUdevice *, int);
typedef CUresult (*PFN_DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
typedef CUresult (*PFN_DeviceGetName)(char *, int, CUdevice);
typedef CUresult (*PFN_DriverGetVersion)(int *);
static PFN_DeviceGet p_cuDeviceGet;
static PFN_DeviceGetAttribute p_cuDeviceGetAttribute;
static PFN_DeviceGetName p_cuDeviceGetName;
static PFN_DriverGetVersion p_cuDriverGetVersion;

static void load_driver_symbols(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h) h = dlopen("libcuda.so.1", RTLD_LAZY);
    if (!h) return;
    p_cuDeviceGet = (PFN_DeviceGet)dlsym(h, "cuDeviceGet");
    p_cuDeviceGetAttribute = (PFN_DeviceGetAttribute)dlsym(h, "cuDeviceGetAttribute");
    p_cuDeviceGetName = (PFN_DeviceGetName)dlsym(h, "cuDeviceGetName");
    p_cuDriverGetVersion = (PFN_DriverGetVersion)dlsym(h, "cuDriverGetVersion");
}

static const char *result_name(CUptiResult r)
{
    const char *s = NULL;
    if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) return "unknown";
    return s;
}

static void write_error(uint32_t uid, CUptiResult r, const char *where)
{
    if (!g_out) return;
    fprintf(g_out, "E %u %d %s %s\n", uid, (int)r, where, result_name(r));
    fflush(g_out);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A Z record (GPA_CUPTI_TIMING): where the start-up goes. */
static void mark(const char *label)
{
    if (!g_timing || !g_out) return;
    fprintf(g_out, "Z %s %" PRIu64 "\n", label, now_ns() - g_t0);
    fflush(g_out);
}

static int first_match(const char *name, const char *demangled)
{
    for (size_t i = 0; i < g_nfilters; i++)
        if (strstr(name, g_filters[i]) || (demangled && strstr(demangled, g_filters[i]))) return (int)i;
    return -1;
}

/* The filter a launched kernel matches (its index), -1 for none; 0 when there is no filter.
 * Like the reader, a filter matches the mangled or the demangled name (demangled through the
 * C++ runtime's __cxa_demangle when the process has one). */
static int filter_index(const char *name)
{
    if (!g_nfilters) return 0;
    if (!name) return -1;
    for (size_t i = 0; i < g_cache_n; i++)
        if (strcmp(g_cache_name[i], name) == 0) return g_cache_match[i];
    int m = first_match(name, NULL);
    if (m < 0 && p_cxa_demangle) {
        int status = 0;
        char *d = p_cxa_demangle(name, NULL, NULL, &status);
        if (d && status == 0) m = first_match(name, d);
        free(d);
    }
    if (g_cache_n < GPA_NAME_CACHE && (g_cache_name[g_cache_n] = strdup(name)) != NULL) {
        g_cache_match[g_cache_n] = m;
        g_cache_n++;
    }
    return m;
}

/* Split a copy of ``v`` at ``sep`` into at most ``max`` non-empty items. */
static size_t split_env(const char *v, char sep, const char **out, size_t max)
{
    if (!v || !*v) return 0;
    char *copy = strdup(v);
    if (!copy) return 0;
    size_t n = 0;
    char *p = copy;
    while (p && n < max) {
        char *e = strchr(p, sep);
        if (e) *e = 0;
        if (*p) out[n++] = p;
        p = e ? e + 1 : NULL;
    }
    return n;
}

static GpaCtx *find_ctx(CUcontext ctx)
{
    for (GpaCtx *c = g_ctxs; c; c = c->next)
        if (c->ctx == ctx) return c;
    return NULL;
}

static int alloc_data(CUpti_PCSamplingData *d, size_t num_pcs, size_t num_reasons)
{
    memset(d, 0, sizeof(*d));
    d->size = sizeof(CUpti_PCSamplingData);
    d->collectNumPcs = num_pcs;
    d->pPcData = (CUpti_PCSamplingPCData *)calloc(num_pcs, sizeof(CUpti_PCSamplingPCData));
    if (!d->pPcData) return 0;
    for (size_t i = 0; i < num_pcs; i++) {
        d->pPcData[i].size = sizeof(CUpti_PCSamplingPCData);
        d->pPcData[i].stallReason =
            (CUpti_PCSamplingStallReason *)calloc(num_reasons ? num_reasons : 1, sizeof(CUpti_PCSamplingStallReason));
        if (!d->pPcData[i].stallReason) return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ counters mode */

/* The output is complete through END (flushed): say so on GPA_CUPTI_DONE's FIFO, if the caller
 * gave one and still reads it; never blocks and never fails the process. */
static void signal_done(void)
{
    const char *path = getenv("GPA_CUPTI_DONE");
    if (!path || !*path) return;
    long end = ftell(g_out);
    if (end < 0) return;
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return;
    char word[80];
    int n = g_exit_status >= 0 ? snprintf(word, sizeof(word), "%ld %ld %d\n", (long)getpid(), end, g_exit_status)
                               : snprintf(word, sizeof(word), "%ld %ld\n", (long)getpid(), end);
    if (n > 0 && write(fd, word, (size_t)n) < 0) { /* the caller reads the output after the exit */ }
    close(fd);
}

static void write_end(void)
{
    flockfile(g_out);
    if (g_launches_unwritten || g_kernels_unwritten)
        fprintf(g_out, "X %" PRIu64 " %" PRIu64 "\n", g_launches_unwritten, g_kernels_unwritten);
    funlockfile(g_out);
    mark("end");
    fprintf(g_out, "END\n");
    fflush(g_out);
    signal_done();
}

#ifndef GPA_NO_RANGE_PROFILER
static int g_profiler_initialized = 0;

#define RP_CALL(c, call, where)                                  \
    do {                                                         \
        CUptiResult r_ = (call);                                 \
        if (r_ != CUPTI_SUCCESS) {                               \
            write_error((c)->uid, r_, where);                    \
            return 0;                                            \
        }                                                        \
    } while (0)

/* Host object and config image of a context (host side; no launch is measured yet): once, at the
 * first launch to measure. */
static int rp_host_setup(GpaCtx *c)
{
    mark("counters_setup_start");
    if (!g_profiler_initialized) {
        CUpti_Profiler_Initialize_Params ip;
        memset(&ip, 0, sizeof(ip));
        ip.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE;
        RP_CALL(c, cuptiProfilerInitialize(&ip), "ProfilerInitialize");
        g_profiler_initialized = 1;
    }
    uint32_t dev = 0;
    RP_CALL(c, cuptiGetDeviceId(c->ctx, &dev), "GetDeviceId");
    CUpti_Device_GetChipName_Params cn;
    memset(&cn, 0, sizeof(cn));
    cn.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
    cn.deviceIndex = dev;
    RP_CALL(c, cuptiDeviceGetChipName(&cn), "DeviceGetChipName");

    CUpti_Profiler_GetCounterAvailability_Params ca;
    memset(&ca, 0, sizeof(ca));
    ca.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE;
    ca.ctx = c->ctx;
    RP_CALL(c, cuptiProfilerGetCounterAvailability(&ca), "GetCounterAvailability");
    uint8_t *avail = (uint8_t *)calloc(ca.counterAvailabilityImageSize ? ca.counterAvailabilityImageSize : 1, 1);
    if (!avail) return 0;
    ca.pCounterAvailabilityImage = avail;
    RP_CALL(c, cuptiProfilerGetCounterAvailability(&ca), "GetCounterAvailability");

    CUpti_Profiler_Host_Initialize_Params hi;
    memset(&hi, 0, sizeof(hi));
    hi.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
    hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    hi.pChipName = cn.pChipName;
    hi.pCounterAvailabilityImage = avail;
    RP_CALL(c, cuptiProfilerHostInitialize(&hi), "ProfilerHostInitialize");
    c->host = hi.pHostObject;
    mark("counters_host_ready");

    /* one metric at a time: a name this chip or CUPTI does not know is reported and left out */
    for (size_t i = 0; i < g_nmetrics; i++) {
        CUpti_Profiler_Host_ConfigAddMetrics_Params am;
        memset(&am, 0, sizeof(am));
        am.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
        am.pHostObject = c->host;
        am.ppMetricNames = &g_metrics[i];
        am.numMetrics = 1;
        CUptiResult r = cuptiProfilerHostConfigAddMetrics(&am);
        if (r != CUPTI_SUCCESS) {
            char where[300];
            snprintf(where, sizeof(where), "ConfigAddMetrics:%s", g_metrics[i]);
            write_error(c->uid, r, where);
            continue;
        }
        fprintf(g_out, "N %u %zu %s\n", c->uid, c->nmetrics, g_metrics[i]);
        c->metrics[c->nmetrics++] = g_metrics[i];
    }
    if (!c->nmetrics) {
        fprintf(g_out, "E %u 0 ConfigAddMetrics no_metric_accepted\n", c->uid);
        return 0;
    }
    CUpti_Profiler_Host_GetConfigImageSize_Params cs;
    memset(&cs, 0, sizeof(cs));
    cs.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
    cs.pHostObject = c->host;
    RP_CALL(c, cuptiProfilerHostGetConfigImageSize(&cs), "GetConfigImageSize");
    c->config_size = cs.configImageSize;
    c->config_image = (uint8_t *)calloc(c->config_size ? c->config_size : 1, 1);
    if (!c->config_image) return 0;
    CUpti_Profiler_Host_GetConfigImage_Params ci;
    memset(&ci, 0, sizeof(ci));
    ci.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
    ci.pHostObject = c->host;
    ci.configImageSize = c->config_size;
    ci.pConfigImage = c->config_image;
    RP_CALL(c, cuptiProfilerHostGetConfigImage(&ci), "GetConfigImage");
    CUpti_Profiler_Host_GetNumOfPasses_Params np;
    memset(&np, 0, sizeof(np));
    np.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
    np.configImageSize = c->config_size;
    np.pConfigImage = c->config_image;
    if (cuptiProfilerHostGetNumOfPasses(&np) == CUPTI_SUCCESS)
        fprintf(g_out, "G %u %zu %zu %s\n", c->uid, np.numOfPasses, c->nmetrics, cn.pChipName ? cn.pChipName : "?");
    mark("counters_config_ready");
    fflush(g_out);
    return 1;
}

/* Range Profiler and counter data image of a context, after rp_host_setup (the context is current). */
static int rp_enable(GpaCtx *c)
{
    CUpti_RangeProfiler_Enable_Params en;
    memset(&en, 0, sizeof(en));
    en.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE;
    en.ctx = c->ctx;
    RP_CALL(c, cuptiRangeProfilerEnable(&en), "RangeProfilerEnable");
    c->rp = en.pRangeProfilerObject;

    CUpti_RangeProfiler_GetCounterDataSize_Params ds;
    memset(&ds, 0, sizeof(ds));
    ds.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
    ds.pRangeProfilerObject = c->rp;
    ds.pMetricNames = c->metrics;
    ds.numMetrics = c->nmetrics;
    ds.maxNumOfRanges = GPA_MAX_COUNTER_RANGES;
    ds.maxNumRangeTreeNodes = GPA_MAX_COUNTER_RANGES;
    RP_CALL(c, cuptiRangeProfilerGetCounterDataSize(&ds), "GetCounterDataSize");
    c->counter_size = ds.counterDataSize;
    c->counter_data = (uint8_t *)calloc(c->counter_size ? c->counter_size : 1, 1);
    if (!c->counter_data) return 0;
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params di;
    memset(&di, 0, sizeof(di));
    di.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE;
    di.pRangeProfilerObject = c->rp;
    di.counterDataSize = c->counter_size;
    di.pCounterData = c->counter_data;
    RP_CALL(c, cuptiRangeProfilerCounterDataImageInitialize(&di), "CounterDataImageInitialize");

    CUpti_RangeProfiler_SetConfig_Params sc;
    memset(&sc, 0, sizeof(sc));
    sc.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
    sc.pRangeProfilerObject = c->rp;
    sc.configSize = c->config_size;
    sc.pConfig = c->config_image;
    sc.counterDataImageSize = c->counter_size;
    sc.pCounterDataImage = c->counter_data;
    sc.range = CUPTI_AutoRange;
    sc.replayMode = CUPTI_KernelReplay;
    sc.maxRangesPerPass = GPA_MAX_COUNTER_RANGES;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    RP_CALL(c, cuptiRangeProfilerSetConfig(&sc), "RangeProfilerSetConfig");
    mark("counters_setup_done");
    fflush(g_out);
    return 1;
}

/* Measure this launch: start the Range Profiler at its entry (auto range: the launch is the range). */
static void rp_launch_enter(GpaCtx *c, const CUpti_CallbackData *cb, int filter)
{
    if (filter < 0 || c->rp_state < 0 || c->rp_active) return;
    if (g_nfilters ? g_filter_measured[filter] >= g_counter_launches : g_measured >= GPA_MAX_COUNTER_RANGES) return;
    if (c->ranges_read >= GPA_MAX_COUNTER_RANGES) return;
    if (c->rp_state == 0) c->rp_state = rp_host_setup(c) ? 2 : -1;
    if (c->rp_state == 2) c->rp_state = rp_enable(c) ? 1 : -1;
    if (c->rp_state < 0) { fflush(g_out); return; }
    CUpti_RangeProfiler_Start_Params st;
    memset(&st, 0, sizeof(st));
    st.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE;
    st.pRangeProfilerObject = c->rp;
    CUptiResult r = cuptiRangeProfilerStart(&st);
    if (r != CUPTI_SUCCESS) { write_error(c->uid, r, "RangeProfilerStart"); c->rp_state = -1; return; }
    c->rp_active = 1;
    c->rp_corr = cb->correlationId;
    c->rp_filter = filter;
    snprintf(c->rp_name, sizeof(c->rp_name), "%s", cb->symbolName ? cb->symbolName : "?");
}

static int all_measured(void)
{
    if (!g_nfilters) return 0;
    for (size_t i = 0; i < g_nfilters; i++)
        if (g_filter_measured[i] < g_counter_launches) return 0;
    return 1;
}

/* The launch has returned (kernel replay runs every pass inside it): stop, decode, write U. */
static void rp_launch_exit(GpaCtx *c, const CUpti_CallbackData *cb)
{
    /* only the launch that started it (not one CUPTI makes while replaying) */
    if (!c->rp_active || cb->correlationId != c->rp_corr) return;
    c->rp_active = 0;
    CUpti_RangeProfiler_Stop_Params sp;
    memset(&sp, 0, sizeof(sp));
    sp.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
    sp.pRangeProfilerObject = c->rp;
    CUptiResult r = cuptiRangeProfilerStop(&sp);
    if (r != CUPTI_SUCCESS) { write_error(c->uid, r, "RangeProfilerStop"); c->rp_state = -1; return; }
    CUpti_RangeProfiler_DecodeData_Params dd;
    memset(&dd, 0, sizeof(dd));
    dd.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE;
    dd.pRangeProfilerObject = c->rp;
    r = cuptiRangeProfilerDecodeData(&dd);
    if (r != CUPTI_SUCCESS) { write_error(c->uid, r, "RangeProfilerDecodeData"); c->rp_state = -1; return; }
    CUpti_RangeProfiler_GetCounterDataInfo_Params gi;
    memset(&gi, 0, sizeof(gi));
    gi.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE;
    gi.pCounterDataImage = c->counter_data;
    gi.counterDataImageSize = c->counter_size;
    r = cuptiRangeProfilerGetCounterDataInfo(&gi);
    if (r != CUPTI_SUCCESS) { write_error(c->uid, r, "GetCounterDataInfo"); c->rp_state = -1; return; }
    if (gi.numTotalRanges <= c->ranges_read)
        fprintf(g_out, "E %u 0 RangeProfiler no_range_for_launch_%u (passes submitted %u, ranges dropped %zu)\n",
                c->uid, c->rp_corr, (unsigned)sp.isAllPassSubmitted, dd.numOfRangeDropped);
    for (size_t k = c->ranges_read; k < gi.numTotalRanges; k++) {
        double v[GPA_MAX_METRICS];
        CUpti_Profiler_Host_EvaluateToGpuValues_Params ev;
        memset(&ev, 0, sizeof(ev));
        ev.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
        ev.pHostObject = c->host;
        ev.pCounterDataImage = c->counter_data;
        ev.counterDataImageSize = c->counter_size;
        ev.rangeIndex = k;
        ev.ppMetricNames = c->metrics;
        ev.numMetrics = c->nmetrics;
        ev.pMetricValues = v;
        r = cuptiProfilerHostEvaluateToGpuValues(&ev);
        if (r != CUPTI_SUCCESS) { write_error(c->uid, r, "EvaluateToGpuValues"); continue; }
        fprintf(g_out, "U %u %u %zu %u", c->uid, c->rp_corr, k, (unsigned)sp.isAllPassSubmitted);
        for (size_t m = 0; m < c->nmetrics; m++) {
            if (isfinite(v[m])) fprintf(g_out, " %.9g", v[m]);
            else fputs(" nan", g_out);
        }
        fprintf(g_out, " %s\n", c->rp_name);
    }
    c->ranges_read = gi.numTotalRanges;
    g_measured++;
    if (g_nfilters) g_filter_measured[c->rp_filter]++;
    fflush(g_out);
    if (g_measured == 1) mark("counters_first_launch_measured");
    if (g_exit_when_done && all_measured()) {
        /* everything asked for is measured: the rest of the harness is not needed */
        mark("counters_exit_early");
        fprintf(g_out, "F %" PRIu64 "\n", g_measured);
        write_end();
        g_finished = 1;
        _exit(0);
    }
}

static void rp_teardown(GpaCtx *c)
{
    if (c->rp) {
        CUpti_RangeProfiler_Disable_Params dp;
        memset(&dp, 0, sizeof(dp));
        dp.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE;
        dp.pRangeProfilerObject = c->rp;
        CUptiResult r = cuptiRangeProfilerDisable(&dp);
        if (r != CUPTI_SUCCESS) write_error(c->uid, r, "RangeProfilerDisable");
        c->rp = NULL;
    }
    if (c->host) {
        CUpti_Profiler_Host_Deinitialize_Params hd;
        memset(&hd, 0, sizeof(hd));
        hd.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
        hd.pHostObject = c->host;
        cuptiProfilerHostDeinitialize(&hd);
        c->host = NULL;
    }
    c->rp_state = -1;
}
#else
static void rp_launch_enter(GpaCtx *c, const CUpti_CallbackData *cb, int filter)
{
    (void)cb;
    static int said = 0;
    if (filter < 0) return;
    if (!said) fprintf(g_out, "E %u 0 RangeProfiler not_built (CUPTI older than 12.6 headers)\n", c->uid);
    said = 1;
}
static void rp_launch_exit(GpaCtx *c, const CUpti_CallbackData *cb) { (void)c; (void)cb; }
static void rp_teardown(GpaCtx *c) { (void)c; }
#endif

/* Write the records of one buffer and mark it empty. Names are CUPTI's to keep. */
static void consume(GpaCtx *c, CUpti_PCSamplingData *d)
{
    if (!g_out) return;
    flockfile(g_out);   /* whole lines: CUPTI's activity thread writes K lines meanwhile */
    for (size_t i = 0; i < d->totalNumPcs; i++) {
        CUpti_PCSamplingPCData *pc = &d->pPcData[i];
        fprintf(g_out, "P %u %" PRIx64 " %" PRIx64 " %s", c->uid, (uint64_t)pc->cubinCrc, (uint64_t)pc->pcOffset,
                pc->functionName ? pc->functionName : "?");
        for (size_t k = 0; k < pc->stallReasonCount; k++)
            if (pc->stallReason[k].samples)
                fprintf(g_out, " %u:%u", pc->stallReason[k].pcSamplingStallReasonIndex, pc->stallReason[k].samples);
        fputc('\n', g_out);
    }
    if (d->totalNumPcs || d->totalSamples || d->droppedSamples || d->hardwareBufferFull)
        fprintf(g_out, "T %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %u\n", c->uid, (uint64_t)d->totalSamples,
                (uint64_t)d->droppedSamples, (uint64_t)d->nonUsrKernelsTotalSamples, (unsigned)d->hardwareBufferFull);
    funlockfile(g_out);
    d->totalNumPcs = 0;
    d->totalSamples = 0;
    d->droppedSamples = 0;
    d->nonUsrKernelsTotalSamples = 0;
    d->hardwareBufferFull = 0;
}

/* Take everything CUPTI holds for this context. Call with g_lock held. */
static void drain(GpaCtx *c)
{
    if (!c->enabled) return;
    if (c->config_buf.totalNumPcs) consume(c, &c->config_buf);
    for (int guard = 0; guard < 1000000; guard++) {
        CUpti_PCSamplingGetDataParams p;
        memset(&p, 0, sizeof(p));
        p.size = CUpti_PCSamplingGetDataParamsSize;
        p.ctx = c->ctx;
        p.pcSamplingData = (void *)&c->get_buf;
        CUptiResult r = cuptiPCSamplingGetData(&p);
        if (r != CUPTI_SUCCESS) {
            if (c->get_buf.hardwareBufferFull) {
                fprintf(g_out, "E %u %d GetData hardware_buffer_full\n", c->uid, (int)r);
                consume(c, &c->get_buf);
                /* what was decoded before the overflow is still there to take */
                if (guard < 4) continue;
            } else {
                write_error(c->uid, r, "GetData");
            }
            break;
        }
        size_t got = c->get_buf.totalNumPcs, remaining = c->get_buf.remainingNumPcs;
        consume(c, &c->get_buf);
        if (remaining == 0 || got == 0) break;
    }
    if (c->config_buf.totalNumPcs) consume(c, &c->config_buf);
    c->launches_since_drain = 0;
    c->last_drain_ns = now_ns();
    fflush(g_out);
}

/* Hand every kernel record CUPTI holds to buffer_completed (which takes no g_lock). */
static void flush_activity(void)
{
    if (!g_activity) return;
    CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (r != CUPTI_SUCCESS) write_error(0, r, "ActivityFlushAll");
}

static void stop_sampling(GpaCtx *c)
{
    CUpti_PCSamplingStopParams p;
    memset(&p, 0, sizeof(p));
    p.size = CUpti_PCSamplingStopParamsSize;
    p.ctx = c->ctx;
    CUptiResult r = cuptiPCSamplingStop(&p);
    if (r != CUPTI_SUCCESS) write_error(c->uid, r, "Stop");
    c->started = 0;
    drain(c);   /* CUPTI wants the data taken after every range end */
}

/* At exit the drain finds nothing to take on a harness whose one synchronization is its last:
 * cuptiPCSamplingDisable delivers the samples (into config_buf), decoding them all, 0.08-0.09 s
 * for probe's 553 K on the H100; left out, no sample arrives (benchmarks/profiling/README.md). */
static void finish_ctx(GpaCtx *c)
{
    if (!c->enabled) return;
    flush_activity();   /* the context's kernels are done: their records are complete */
    mark("finish_flushed");
    if (c->started) stop_sampling(c);
    drain(c);
    mark("finish_drained");
    CUpti_PCSamplingDisableParams p;
    memset(&p, 0, sizeof(p));
    p.size = CUpti_PCSamplingDisableParamsSize;
    p.ctx = c->ctx;
    CUptiResult r = cuptiPCSamplingDisable(&p);
    if (r != CUPTI_SUCCESS) write_error(c->uid, r, "Disable");
    mark("finish_disabled");
    /* Disable flushes the last records into the configured buffer */
    if (c->config_buf.totalNumPcs) consume(c, &c->config_buf);
    c->enabled = 0;
    fprintf(g_out, "Q %u %" PRIu64 " %" PRIu64 "\n", c->uid, c->exit_drains, c->periodic_drains);
    if (g_nfilters) fprintf(g_out, "S %u %" PRIu64 "\n", c->uid, c->starts);
    fflush(g_out);
}

static void write_device(GpaCtx *c)
{
    uint32_t dev_id = 0;
    if (cuptiGetDeviceId(c->ctx, &dev_id) != CUPTI_SUCCESS || !p_cuDeviceGet || !p_cuDeviceGetAttribute) return;
    CUdevice dev;
    if (p_cuDeviceGet(&dev, (int)dev_id) != CUDA_SUCCESS) return;
    int v[9] = {0};
    const CUdevice_attribute attrs[9] = {
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_CLOCK_RATE,
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
        CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK};
    for (int i = 0; i < 9; i++) p_cuDeviceGetAttribute(&v[i], attrs[i], dev);
    int driver = 0;
    if (p_cuDriverGetVersion) p_cuDriverGetVersion(&driver);
    char name[256] = "unknown";
    if (p_cuDeviceGetName) p_cuDeviceGetName(name, (int)sizeof(name), dev);
    fprintf(g_out, "D %u %u %d %d %d %d %d %d %d %d %d %d %s\n", c->uid, dev_id, v[0], v[1], v[2], v[3], v[4], v[5],
            v[6], v[7], v[8], driver, name);
}

static void context_created(CUcontext ctx)
{
    GpaCtx *c = (GpaCtx *)calloc(1, sizeof(GpaCtx));
    if (!c) return;
    c->ctx = ctx;
    cuptiGetContextId(ctx, &c->uid);
    c->next = g_ctxs;
    g_ctxs = c;
    write_device(c);

    if (g_mode != GPA_MODE_SAMPLING) { fflush(g_out); return; }   /* durations, counters: no PC sampling */
    mark("context_created");
    c->dev_id = UINT32_MAX;
    cuptiGetDeviceId(ctx, &c->dev_id);
    for (GpaCtx *o = g_ctxs; o; o = o->next)
        if (o != c && o->enabled && o->dev_id == c->dev_id) {
            fprintf(g_out, "W %u %u %u\n", c->uid, c->dev_id, o->uid);
            fflush(g_out);
            return;
        }
    CUpti_PCSamplingEnableParams en;
    memset(&en, 0, sizeof(en));
    en.size = CUpti_PCSamplingEnableParamsSize;
    en.ctx = ctx;
    CUptiResult r = cuptiPCSamplingEnable(&en);
    if (r != CUPTI_SUCCESS) {
        write_error(c->uid, r, "Enable");
        return;
    }

    CUpti_PCSamplingGetNumStallReasonsParams np;
    memset(&np, 0, sizeof(np));
    np.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
    np.ctx = ctx;
    np.numStallReasons = &c->num_reasons;
    r = cuptiPCSamplingGetNumStallReasons(&np);
    if (r != CUPTI_SUCCESS) { write_error(c->uid, r, "GetNumStallReasons"); return; }

    c->reason_index = (uint32_t *)calloc(c->num_reasons, sizeof(uint32_t));
    c->reason_names = (char **)calloc(c->num_reasons, sizeof(char *));
    for (size_t i = 0; i < c->num_reasons; i++) c->reason_names[i] = (char *)calloc(CUPTI_STALL_REASON_STRING_SIZE, 1);
    CUpti_PCSamplingGetStallReasonsParams sp;
    memset(&sp, 0, sizeof(sp));
    sp.size = CUpti_PCSamplingGetStallReasonsParamsSize;
    sp.ctx = ctx;
    sp.numStallReasons = c->num_reasons;
    sp.stallReasonIndex = c->reason_index;
    sp.stallReasons = c->reason_names;
    r = cuptiPCSamplingGetStallReasons(&sp);
    if (r != CUPTI_SUCCESS) { write_error(c->uid, r, "GetStallReasons"); return; }
    for (size_t i = 0; i < c->num_reasons; i++)
        fprintf(g_out, "R %u %u %s\n", c->uid, c->reason_index[i], c->reason_names[i]);

    if (!alloc_data(&c->config_buf, GPA_GETDATA_PCS, c->num_reasons) ||
        !alloc_data(&c->get_buf, GPA_GETDATA_PCS, c->num_reasons)) {
        fprintf(g_out, "E %u 0 alloc out_of_host_memory\n", c->uid);
        return;
    }

    CUpti_PCSamplingConfigurationInfo info[8];
    int n = 0;
    memset(info, 0, sizeof(info));
    info[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
    info[n].attributeData.stallReasonData.stallReasonCount = c->num_reasons;
    info[n].attributeData.stallReasonData.pStallReasonIndex = c->reason_index;
    n++;
    info[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
    info[n].attributeData.samplingDataBufferData.samplingDataBuffer = (void *)&c->config_buf;
    n++;
    info[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
    info[n].attributeData.samplingPeriodData.samplingPeriod = g_period;
    n++;
    info[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
    info[n].attributeData.collectionModeData.collectionMode = CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
    n++;
    if (g_scratch_bytes) {
        info[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE;
        info[n].attributeData.scratchBufferSizeData.scratchBufferSize = g_scratch_bytes;
        n++;
    }
    if (g_hw_bytes) {
        info[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE;
        info[n].attributeData.hardwareBufferSizeData.hardwareBufferSize = g_hw_bytes;
        n++;
    }
    if (g_nfilters) {   /* sampled only between cuptiPCSamplingStart and Stop (launch callbacks) */
        info[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
        info[n].attributeData.enableStartStopControlData.enableStartStopControl = 1;
        n++;
    }
    if (g_sleep_ms) {
        info[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN;
        info[n].attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan = g_sleep_ms;
        n++;
    }
    CUpti_PCSamplingConfigurationInfoParams cp;
    memset(&cp, 0, sizeof(cp));
    cp.size = CUpti_PCSamplingConfigurationInfoParamsSize;
    cp.ctx = ctx;
    cp.numAttributes = (size_t)n;
    cp.pPCSamplingConfigurationInfo = info;
    r = cuptiPCSamplingSetConfigurationAttribute(&cp);
    if (r != CUPTI_SUCCESS) {
        for (int i = 0; i < n; i++)
            if (info[i].attributeStatus != CUPTI_SUCCESS) {
                char where[64];
                snprintf(where, sizeof(where), "SetConfigurationAttribute:%d", (int)info[i].attributeType);
                write_error(c->uid, info[i].attributeStatus, where);
            }
        write_error(c->uid, r, "SetConfigurationAttribute");
        return;
    }
    c->enabled = 1;
    c->last_drain_ns = now_ns();
    mark("sampling_enabled");
    fflush(g_out);
}

static void module_loaded(CUcontext ctx, const CUpti_ModuleResourceData *m)
{
    GpaCtx *c = find_ctx(ctx);
    uint32_t uid = c ? c->uid : 0;
    /* records CUPTI flushed for the range that ended with this load */
    if (c && c->enabled && c->config_buf.totalNumPcs) consume(c, &c->config_buf);
    if (!m || !m->pCubin || !m->cubinSize) return;
    if (g_mode == GPA_MODE_COUNTERS) return;   /* unit throughput needs no cubin */
    CUpti_GetCubinCrcParams cp;
    memset(&cp, 0, sizeof(cp));
    cp.size = CUpti_GetCubinCrcParamsSize;
    cp.cubinSize = m->cubinSize;
    cp.cubin = m->pCubin;
    CUptiResult r = cuptiGetCubinCrc(&cp);
    if (r != CUPTI_SUCCESS) { write_error(uid, r, "GetCubinCrc"); return; }
    char name[64], path[4200];
    snprintf(name, sizeof(name), "cubin_%016" PRIx64 ".cubin", (uint64_t)cp.cubinCrc);
    snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    struct stat st;
    if (stat(path, &st) != 0) {
        FILE *f = fopen(path, "wb");
        if (f) { fwrite(m->pCubin, 1, m->cubinSize, f); fclose(f); }
    }
    fprintf(g_out, "M %u %" PRIx64 " %u %zu %s\n", uid, (uint64_t)cp.cubinCrc, m->moduleId, m->cubinSize, name);
    mark("module_saved");
    fflush(g_out);
}

static void launch(const CUpti_CallbackData *cb, CUpti_CallbackId cbid)
{
    CUfunction f = NULL;
    unsigned g[3] = {0, 0, 0}, b[3] = {0, 0, 0}, smem = 0;
    const void *pp = cb->functionParams;
    switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
        const gpa_launch_params *p = (const gpa_launch_params *)pp;
        f = p->f; g[0] = p->gridDimX; g[1] = p->gridDimY; g[2] = p->gridDimZ;
        b[0] = p->blockDimX; b[1] = p->blockDimY; b[2] = p->blockDimZ; smem = p->sharedMemBytes;
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
        const gpa_launch_ex_params *p = (const gpa_launch_ex_params *)pp;
        f = p->f;
        if (p->config) {
            g[0] = p->config->gridDimX; g[1] = p->config->gridDimY; g[2] = p->config->gridDimZ;
            b[0] = p->config->blockDimX; b[1] = p->config->blockDimY; b[2] = p->config->blockDimZ;
            smem = p->config->sharedMemBytes;
        }
        break;
    }
    default:
        return;
    }
    (void)f;
    uint64_t crc = 0; /* the resource callbacks give no CUmodule: the reader joins launches by name */
    GpaCtx *c = find_ctx(cb->context);
    if (g_launch_lines < GPA_MAX_LAUNCH_LINES) {
        fprintf(g_out, "L %u %" PRIx64 " %u %u %u %u %u %u %u %u %s\n", c ? c->uid : cb->contextUid, crc, g[0], g[1],
                g[2], b[0], b[1], b[2], smem, cb->correlationId, cb->symbolName ? cb->symbolName : "?");
        g_launch_lines++;
    } else {
        g_launches_unwritten++;
    }
    if (g_launch_lines == 1) mark("first_launch");
    if (!c) return;
    if (g_mode == GPA_MODE_COUNTERS) {
        rp_launch_enter(c, cb, filter_index(cb->symbolName));
        return;
    }
    if (c->enabled) c->launches_since_drain++;
    if (c->enabled && g_nfilters) {
        int want = filter_index(cb->symbolName) >= 0;
        if (want && !c->started) {
            CUpti_PCSamplingStartParams p;
            memset(&p, 0, sizeof(p));
            p.size = CUpti_PCSamplingStartParamsSize;
            p.ctx = c->ctx;
            CUptiResult r = cuptiPCSamplingStart(&p);
            if (r != CUPTI_SUCCESS) write_error(c->uid, r, "Start");
            else { c->started = 1; c->starts++; }
        } else if (!want && c->started) {
            stop_sampling(c);
        }
    }
}

static void launch_exit(const CUpti_CallbackData *cb)
{
    GpaCtx *c = find_ctx(cb->context);
    if (c && g_mode == GPA_MODE_COUNTERS) { rp_launch_exit(c, cb); return; }
    if (!c || !c->enabled) return;
    /* Continuous mode keeps samples in the hardware buffer until GetData:
     * drain every few launches or milliseconds so it neither overflows nor
     * leaves all the decoding for the end of the run. */
    if (c->config_buf.totalNumPcs || c->config_buf.remainingNumPcs >= GPA_DRAIN_REMAINING ||
        c->launches_since_drain >= GPA_DRAIN_EVERY_LAUNCHES || now_ns() - c->last_drain_ns >= GPA_DRAIN_EVERY_NS) {
        drain(c);
        c->exit_drains++;
    }
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = (uint8_t *)aligned_alloc(8, GPA_ACTIVITY_BUFFER_BYTES);
    *size = *buffer ? GPA_ACTIVITY_BUFFER_BYTES : 0;
    *max_records = 0;
}

/* Called by CUPTI (its own thread, or the caller of cuptiActivityFlushAll): never takes g_lock. */
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
    (void)size;
    if (!buffer) return;
    if (g_out) {
        flockfile(g_out);
        CUpti_Activity *rec = NULL;
        unsigned records = 0, kernels = 0;
        while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
            records++;
            if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
            kernels++;
            const gpa_kernel_record *k = (const gpa_kernel_record *)rec;
            if (g_kernel_lines >= GPA_MAX_KERNEL_LINES) { g_kernels_unwritten++; continue; }
            g_kernel_lines++;
            fprintf(g_out, "K %u %u %" PRIu64 " %" PRIu64 " %u %d %d %d %d %d %d %d %d %s\n", k->contextId,
                    k->correlationId, k->start, k->end, (unsigned)k->registersPerThread, k->staticSharedMemory,
                    k->dynamicSharedMemory, k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ,
                    k->name ? k->name : "?");
        }
        fprintf(g_out, "B %zu %u %u\n", valid, records, kernels);
        size_t dropped = 0;
        if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
            fprintf(g_out, "Y %zu\n", dropped);
        fflush(g_out);
        funlockfile(g_out);
    }
    free(buffer);
}

/* The periodic drain: a long kernel's samples are taken while it runs. */
static void *drain_thread(void *arg)
{
    (void)arg;
    for (;;) {
        struct timespec ts = {g_drain_ms / 1000, (long)(g_drain_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&g_lock);
        if (g_finished) { pthread_mutex_unlock(&g_lock); break; }
        uint64_t t = now_ns();
        for (GpaCtx *c = g_ctxs; c; c = c->next)
            if (c->enabled && t - c->last_drain_ns >= (uint64_t)g_drain_ms * 1000000ull) {
                drain(c);
                c->periodic_drains++;
            }
        pthread_mutex_unlock(&g_lock);
    }
    return NULL;
}

static void finish_all(void)
{
    pthread_mutex_lock(&g_lock);
    if (!g_finished && g_out) {
        mark("finish_start");
        /* at exit the Range Profiler is left to the process's end: the context may be gone */
        for (GpaCtx *c = g_ctxs; c; c = c->next) finish_ctx(c);
        flush_activity();
        write_end();
        g_finished = 1;
    }
    pthread_mutex_unlock(&g_lock);
}

/* At the process's exit (on_exit: the status it passed to exit() comes with it, for the done word). */
static void finish_at_exit(int status, void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_lock);
    if (!g_finished) g_exit_status = status & 0xff;     /* what the parent's wait will see */
    pthread_mutex_unlock(&g_lock);
    finish_all();
}

/* The library's destructor, after every atexit handler (GPA_CUPTI_TIMING): with the Z clock0
 * record, where the exit's time goes (benchmarks/profiling/exit_cost.py). */
__attribute__((destructor)) static void library_fini(void)
{
    mark("fini");
}

static void CUPTIAPI callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
    (void)userdata;
    /* a callback from inside one of ours (CUPTI's kernel replay works inside the launch call): not
     * ours to record, and g_lock is held by this thread */
    static __thread int in_callback = 0;
    if (in_callback) return;
    pthread_mutex_lock(&g_lock);
    if (g_finished || !g_out) { pthread_mutex_unlock(&g_lock); return; }
    in_callback = 1;
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        const CUpti_CallbackData *cb = (const CUpti_CallbackData *)data;
        if (cb->callbackSite == CUPTI_API_ENTER) launch(cb, cbid);
        else launch_exit(cb);
    } else if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
        const CUpti_ResourceData *rd = (const CUpti_ResourceData *)data;
        switch (cbid) {
        case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
            context_created(rd->context);
            break;
        case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING: {
            GpaCtx *c = find_ctx(rd->context);
            if (c) {
                fprintf(g_out, "C %u %d\n", c->uid, c->enabled);
                rp_teardown(c);
                finish_ctx(c);
            }
            break;
        }
        case CUPTI_CBID_RESOURCE_MODULE_LOADED:
            module_loaded(rd->context, (const CUpti_ModuleResourceData *)rd->resourceDescriptor);
            break;
        case CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING: {
            GpaCtx *c = find_ctx(rd->context);
            if (c) drain(c);
            break;
        }
        default:
            break;
        }
    }
    in_callback = 0;
    pthread_mutex_unlock(&g_lock);
}

static size_t env_size(const char *name, size_t fallback)
{
    const char *v = getenv(name);
    if (!v || !*v) return fallback;
    return (size_t)strtoull(v, NULL, 10);
}

int InitializeInjection(void)
{
    pthread_mutex_lock(&g_lock);
    if (g_initialized) { pthread_mutex_unlock(&g_lock); return 1; }
    g_initialized = 1;
    g_t0 = now_ns();
    const char *dir = getenv("GPA_CUPTI_OUT");
    snprintf(g_dir, sizeof(g_dir), "%s", dir && *dir ? dir : ".");
    char path[4200];
    snprintf(path, sizeof(path), "%s/cupti.txt", g_dir);
    g_out = fopen(path, "w");
    if (!g_out) { pthread_mutex_unlock(&g_lock); return 0; }
    g_period = (uint32_t)env_size("GPA_CUPTI_SAMPLING_PERIOD", 12);
    if (g_period < 5) g_period = 5;
    if (g_period > 31) g_period = 31;
    g_scratch_bytes = env_size("GPA_CUPTI_SCRATCH_BYTES", 0);
    g_hw_bytes = env_size("GPA_CUPTI_HW_BYTES", 0);
    g_drain_ms = (uint32_t)env_size("GPA_CUPTI_DRAIN_MS", 100);
    g_sleep_ms = (uint32_t)env_size("GPA_CUPTI_WORKER_SLEEP_MS", 0);
    const char *t = getenv("GPA_CUPTI_TIMING");
    g_timing = t && *t && strcmp(t, "0") != 0;
    const char *mode = getenv("GPA_CUPTI_MODE");
    const char *off = getenv("GPA_CUPTI_NO_PCSAMPLING");
    if (mode && strcmp(mode, "counters") == 0) g_mode = GPA_MODE_COUNTERS;
    else if ((mode && strcmp(mode, "durations") == 0) || (off && *off)) g_mode = GPA_MODE_DURATIONS;
    g_nfilters = split_env(getenv("GPA_CUPTI_KERNELS"), '\n', (const char **)g_filters, GPA_MAX_FILTERS);
    g_nmetrics = split_env(getenv("GPA_CUPTI_METRICS"), ',', g_metrics, GPA_MAX_METRICS);
    g_counter_launches = env_size("GPA_CUPTI_COUNTER_LAUNCHES", 1);
    if (g_counter_launches < 1) g_counter_launches = 1;
    const char *ex = getenv("GPA_CUPTI_EXIT_WHEN_DONE");
    g_exit_when_done = ex && *ex && strcmp(ex, "0") != 0;
    p_cxa_demangle = (PFN_cxa_demangle)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    uint32_t api = 0;
    cuptiGetVersion(&api);
    fprintf(g_out, "V %d %u %u\n", GPA_FORMAT, api, g_period);
    if (g_timing) fprintf(g_out, "Z clock0 %" PRIu64 "\n", g_t0);   /* CLOCK_MONOTONIC ns of "init" */
    mark("init");
    if (g_mode == GPA_MODE_COUNTERS)
        fprintf(g_out, "O counters %zu %zu %" PRIu64 "\n", g_nfilters, g_nmetrics, g_counter_launches);
    else if (g_nfilters)
        fprintf(g_out, "O filter %zu\n", g_nfilters);
    load_driver_symbols();

    CUptiResult r = cuptiSubscribe(&g_subscriber, (CUpti_CallbackFunc)callback, NULL);
    if (r != CUPTI_SUCCESS) {
        write_error(0, r, "Subscribe");
        pthread_mutex_unlock(&g_lock);
        return 1;
    }
    static const CUpti_CallbackId launches[] = {
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz};
    for (size_t i = 0; i < sizeof(launches) / sizeof(launches[0]); i++)
        cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, launches[i]);
    cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
    cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING);

    const char *no_act = getenv("GPA_CUPTI_NO_ACTIVITY");
    if ((!no_act || !*no_act) && g_mode != GPA_MODE_COUNTERS) {   /* replayed launches have no useful duration */
        r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
        if (r == CUPTI_SUCCESS) r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        if (r == CUPTI_SUCCESS) g_activity = 1;
        else write_error(0, r, "ActivityEnable");
    }
    if (g_drain_ms && g_mode == GPA_MODE_SAMPLING) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, drain_thread, NULL) != 0) fprintf(g_out, "E 0 0 DrainThread not_started\n");
        pthread_attr_destroy(&attr);
    }
    mark("subscribed");
    fflush(g_out);
    pthread_mutex_unlock(&g_lock);
    on_exit(finish_at_exit, NULL);
    return 1;
}

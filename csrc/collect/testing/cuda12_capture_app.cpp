// cuda12_capture_app: a CUDA 12 program for the collector's CUDA 12 capture on a real GPU
// (scripts/gpu-check.sh's cuda12 phase, tests/test_gpu_cuda12.py). Not built by CMake:
// `gpu-check.sh --pack` compiles it with g++ against the headers of the nvidia-cuda-runtime-cu12
// wheel (12.0's, so that it runs on every 12.x runtime) and links it to libcudart.so.12, which
// LD_LIBRARY_PATH then picks from the packed releases. No nvcc: its one kernel is PTX (below),
// loaded through the driver (cuModuleLoadData) and, where the runtime has it (12.1 on), as a
// runtime library (cudaLibraryLoadData), so that kernels are launched both ways.
//
// Every CUDA call of interest runs inside an NVTX range named for it ("op:driver-launch", ...),
// and the app prints what it did as key=value facts on stdout for the test to check the
// database against.
//
//   cuda12_capture_app [capture|second-client|client-first]
//     capture        the work below
//     second-client  then, as torch.profiler under pyprof: announce torch.profiler to the
//                    collector (pyprof_collect_cupti_request) and subscribe to the libcupti the
//                    collector loaded, as Kineto does; prints both answers
//     client-first   subscribe to libcupti.so.12 before any CUDA call (torch.profiler started
//                    before CUDA), then the work; prints the subscription's answer
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// One kernel, data[i] += 1 for i < n; PTX ISA 8.0 (CUDA 12.0) for sm_52 and newer, which the
// driver compiles for the GPU at hand.
const char kPtx[] = R"(.version 8.0
.target sm_52
.address_size 64

.visible .entry pyprof_cuda12_add_one(
	.param .u64 pyprof_cuda12_add_one_data,
	.param .u32 pyprof_cuda12_add_one_n
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .f32 	%f<3>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [pyprof_cuda12_add_one_data];
	ld.param.u32 	%r2, [pyprof_cuda12_add_one_n];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.u32 	%p1, %r1, %r2;
	@%p1 bra 	$L__done;
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.u32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.f32 	%f1, [%rd4];
	add.f32 	%f2, %f1, 0f3F800000;
	st.global.f32 	[%rd4], %f2;
$L__done:
	ret;
}
)";
constexpr const char* kKernelName = "pyprof_cuda12_add_one";
constexpr unsigned kElements = 1 << 20;
constexpr unsigned kBlock = 256;
constexpr int kLaunchesEach = 4;  // runtime launches, driver launches
constexpr int kCapturedKernels = 2;
constexpr int kReplays = 3;

void fact(const std::string& key, const std::string& value) {
  std::printf("%s=%s\n", key.c_str(), value.c_str());
  std::fflush(stdout);
}
void fact(const std::string& key, long long value) { fact(key, std::to_string(value)); }

[[noreturn]] void fail(const char* what, int code) {
  std::fprintf(stderr, "cuda12_capture_app: %s failed (%d)\n", what, code);
  fact("result", std::string("failed: ") + what);
  std::exit(1);
}

void check(cudaError_t result, const char* what) {
  if (result != cudaSuccess) fail(what, static_cast<int>(result));
}
void check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) fail(what, static_cast<int>(result));
}

// The driver calls, from the libcuda.so.1 the runtime loaded (no link against the driver).
struct Driver {
  decltype(&cuModuleLoadData) ModuleLoadData = nullptr;
  decltype(&cuModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&cuLaunchKernel) LaunchKernel = nullptr;
};

Driver load_driver() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) fail("dlopen libcuda.so.1", 0);
  Driver d;
  d.ModuleLoadData =
      reinterpret_cast<decltype(d.ModuleLoadData)>(dlsym(library, "cuModuleLoadData"));
  d.ModuleGetFunction =
      reinterpret_cast<decltype(d.ModuleGetFunction)>(dlsym(library, "cuModuleGetFunction"));
  d.LaunchKernel = reinterpret_cast<decltype(d.LaunchKernel)>(dlsym(library, "cuLaunchKernel"));
  if (!d.ModuleLoadData || !d.ModuleGetFunction || !d.LaunchKernel) fail("dlsym libcuda", 0);
  return d;
}

// cudaLibraryLoadData and cudaLibraryGetKernel (CUDA 12.1 on; not in 12.0's headers), from the
// runtime the program runs with: null where it has none.
using LibraryLoadData = cudaError_t (*)(void** library, const void* code, void* jit_options,
                                        void** jit_values, unsigned jit_count,
                                        void* library_options, void** library_values,
                                        unsigned library_count);
using LibraryGetKernel = cudaError_t (*)(void** kernel, void* library, const char* name);

template <class Body>
void in_range(const char* name, Body body) {
  nvtxRangePushA(name);
  body();
  nvtxRangePop();
}

// Kineto's first call when torch.profiler starts with CUDA activity.
int subscribe_like_kineto(void* cupti) {
  using Subscribe = int (*)(void**, void*, void*);
  auto subscribe = reinterpret_cast<Subscribe>(dlsym(cupti, "cuptiSubscribe"));
  if (subscribe == nullptr) return -1;
  static auto callback = +[](void*, int, unsigned, const void*) {};
  void* subscriber = nullptr;
  return subscribe(&subscriber, reinterpret_cast<void*>(callback), nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "capture";
  if (mode == "client-first") {
    void* cupti = dlopen("libcupti.so.12", RTLD_NOW | RTLD_LOCAL);
    fact("client_first_subscribe", cupti != nullptr ? subscribe_like_kineto(cupti) : -2);
  }

  int runtime_version = 0, driver_version = 0;
  in_range("op:init", [&] {
    check(cudaSetDevice(0), "cudaSetDevice");
    check(cudaFree(nullptr), "cudaFree(0)");  // creates the context: cuInit has run
  });
  check(cudaRuntimeGetVersion(&runtime_version), "cudaRuntimeGetVersion");
  check(cudaDriverGetVersion(&driver_version), "cudaDriverGetVersion");
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  fact("cudart", runtime_version);
  fact("driver", driver_version);
  fact("device", properties.name);
  fact("sms", properties.multiProcessorCount);

  const Driver driver = load_driver();
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  check(driver.ModuleLoadData(&module, kPtx), "cuModuleLoadData");
  check(driver.ModuleGetFunction(&function, module, kKernelName), "cuModuleGetFunction");
  auto load = reinterpret_cast<LibraryLoadData>(dlsym(RTLD_DEFAULT, "cudaLibraryLoadData"));
  auto get_kernel = reinterpret_cast<LibraryGetKernel>(dlsym(RTLD_DEFAULT, "cudaLibraryGetKernel"));
  void* runtime_kernel = nullptr;
  if (load != nullptr && get_kernel != nullptr) {
    void* library = nullptr;
    check(load(&library, kPtx, nullptr, nullptr, 0, nullptr, nullptr, 0), "cudaLibraryLoadData");
    check(get_kernel(&runtime_kernel, library, kKernelName), "cudaLibraryGetKernel");
  }

  cudaStream_t stream = nullptr;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  float* device = nullptr;
  float* pinned = nullptr;
  std::vector<float> pageable(kElements, 0.0f);
  check(cudaMalloc(reinterpret_cast<void**>(&device), kElements * sizeof(float)), "cudaMalloc");
  check(cudaMallocHost(reinterpret_cast<void**>(&pinned), kElements * sizeof(float)),
        "cudaMallocHost");
  std::memset(pinned, 0, kElements * sizeof(float));
  const size_t bytes = kElements * sizeof(float);
  unsigned n = kElements;
  void* args[] = {&device, &n};
  const unsigned grid = (kElements + kBlock - 1) / kBlock;

  in_range("op:copy-in", [&] {
    check(cudaMemcpyAsync(device, pinned, bytes, cudaMemcpyHostToDevice, stream), "H2D pinned");
    check(cudaMemcpy(device, pageable.data(), bytes, cudaMemcpyHostToDevice), "H2D pageable");
  });
  in_range("op:memset", [&] { check(cudaMemsetAsync(device, 0, bytes, stream), "memset"); });
  int runtime_launches = 0;
  in_range("op:runtime-launch", [&] {
    for (int i = 0; runtime_kernel != nullptr && i < kLaunchesEach; ++i, ++runtime_launches) {
      check(cudaLaunchKernel(runtime_kernel, dim3(grid), dim3(kBlock), args, 0, stream),
            "cudaLaunchKernel");
    }
  });
  in_range("op:driver-launch", [&] {
    for (int i = 0; i < kLaunchesEach; ++i) {
      check(driver.LaunchKernel(function, grid, 1, 1, kBlock, 1, 1, 0, stream, args, nullptr),
            "cuLaunchKernel");
    }
  });
  in_range("op:sync", [&] {
    cudaEvent_t event = nullptr;
    check(cudaEventCreate(&event), "cudaEventCreate");
    check(cudaEventRecord(event, stream), "cudaEventRecord");
    check(cudaEventSynchronize(event), "cudaEventSynchronize");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    check(cudaEventDestroy(event), "cudaEventDestroy");
  });
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  in_range("op:graph-capture", [&] {
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "BeginCapture");
    for (int i = 0; i < kCapturedKernels; ++i) {
      check(driver.LaunchKernel(function, grid, 1, 1, kBlock, 1, 1, 0, stream, args, nullptr),
            "cuLaunchKernel (captured)");
    }
    check(cudaStreamEndCapture(stream, &graph), "EndCapture");
    check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  });
  in_range("op:graph-replay", [&] {
    for (int i = 0; i < kReplays; ++i) check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (replays)");
  });
  in_range("op:copy-out", [&] {
    check(cudaMemcpy(pageable.data(), device, bytes, cudaMemcpyDeviceToHost), "D2H");
  });
  // Every element went through each launch once: the kernels really ran.
  const float expected =
      static_cast<float>(runtime_launches + kLaunchesEach + kCapturedKernels * kReplays);
  bool right = true;
  for (unsigned i = 0; i < kElements && right; i += 4099) right = pageable[i] == expected;
  fact("runtime_launches", runtime_launches);
  fact("driver_launches", kLaunchesEach);
  fact("graph_kernels", kCapturedKernels * kReplays);
  fact("copies", 3);
  fact("memsets", 1);
  fact("result", right ? "ok" : "wrong values");

  if (mode == "second-client") {
    // pyprof.init()'s announcement, then Kineto's subscription to the same libcupti.
    const char* injection = std::getenv("NVTX_INJECTION64_PATH");
    void* collector = injection != nullptr ? dlopen(injection, RTLD_NOW | RTLD_NOLOAD) : nullptr;
    using Request = int (*)(const char*);
    auto request = collector != nullptr
                       ? reinterpret_cast<Request>(dlsym(collector, "pyprof_collect_cupti_request"))
                       : nullptr;
    fact("cupti_request", request != nullptr ? request("torch.profiler") : -100);
    void* cupti = dlopen("libcupti.so.12", RTLD_NOW | RTLD_NOLOAD);
    fact("second_subscribe", cupti != nullptr ? subscribe_like_kineto(cupti) : -2);
  }
  check(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
  check(cudaGraphDestroy(graph), "cudaGraphDestroy");
  check(cudaFreeHost(pinned), "cudaFreeHost");
  check(cudaFree(device), "cudaFree");
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return right ? 0 : 1;
}

// Which libcupti the collector takes, without a GPU: testing/cupti_test_app runs with the
// collector injected and the fake libcupti playing a CUDA 13.0 or 12.9 release, placed where
// pip's wheels and NVIDIA's toolkits put libcupti (links to libfake_cupti.so), beside a CUDA
// runtime the app loads (a link named libcudart.so.N to libfake_cudart.so) and under a driver
// (libfake_cuda_driver.so, soname libcuda.so.1) of a chosen CUDA version. Checked: the library
// that matches the program's runtime is found without PYPROF_CUPTI_LIBRARY; one that cannot
// serve is refused in one line that says what was found and what to install; a real libcupti
// with no driver says why in one line; and CUPTI's one client per process: torch.profiler
// started under pyprof gets none and one line says so, torch.profiler holding CUPTI first is
// named when pyprof cannot have it.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include "testing/capture_test_support.h"
#include "testing/test_app_support.h"

namespace pyprof::collect {
namespace {

using namespace testing;  // NOLINT: the shared helpers of the capture tests
namespace fs = std::filesystem;

class CuptiLibraryTest : public CuptiAppTest {
 protected:
  // A link at `path` (folders made) to `target`.
  std::string link(const std::string& path, const std::string& target) {
    fs::create_directories(fs::path(path).parent_path());
    fs::create_symlink(target, path);
    return path;
  }

  // The app with the collector left to find libcupti itself, CUDA_HOME and CUDA_PATH unset
  // (the runner keeps the rest of this process' environment), plus `env`.
  AppRun run_searching(const std::string& scenario, std::map<std::string, std::string> env) {
    env.emplace("PYPROF_CUPTI_LIBRARY", "");
    env.emplace("CUDA_HOME", "");
    env.emplace("CUDA_PATH", "");
    return run_app(scenario, env, scenario == "basic" ? "init-first" : "");
  }

  std::string major() const { return cuda12() ? "12" : "13"; }
  std::string release() const { return cuda12() ? "CUDA 12.9" : "CUDA 13.0"; }
};
INSTANTIATE_TEST_SUITE_P(Releases, CuptiLibraryTest, ::testing::Values(kCuda13_0, kCuda12_9),
                         release_name);

// The CUPTI status of a run that recorded: on, with this libcupti.
void expect_recorded_with(const AppRun& run, const std::string& db_path,
                          const std::string& library) {
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  const Facts facts = facts_of(run.out);
  expect_no_violation(run, facts);
  TestDb db(db_path);
  ASSERT_TRUE(db.intact());
  const std::string status = capture(db, "PYPROF_CUDA_TRACE");
  EXPECT_EQ(status.rfind("on: ", 0), 0u) << status;
  EXPECT_NE(status.find("(" + library + ")"), std::string::npos) << status;
  EXPECT_EQ(db.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"),
            static_cast<int64_t>(facts.launches_of("kernel").size()));
  EXPECT_GT(facts.launches_of("kernel").size(), 0u);
}

// The status and the one stderr line of a run whose CUPTI was refused: NVTX still recorded.
std::string expect_refused(const AppRun& run, const std::string& db_path) {
  EXPECT_TRUE(run.exited_ok()) << run.describe();
  const Facts facts = facts_of(run.out);
  EXPECT_EQ(facts.number("fake.subscribe_calls"), 0) << run.describe();
  EXPECT_EQ(lines_containing(run.err, "CUDA kernels are not recorded"), 1u) << run.err;
  TestDb db(db_path);
  EXPECT_TRUE(db.intact());
  EXPECT_GT(db.scalar("SELECT count(*) FROM NVTX_EVENTS"), 0);
  EXPECT_EQ(row_count(db, "CUPTI_ACTIVITY_KIND_KERNEL"), 0);
  const std::string status = capture(db, "PYPROF_CUDA_TRACE");
  EXPECT_EQ(status.rfind("off: ", 0), 0u) << status;
  // The line on stderr is the status.
  EXPECT_EQ(lines_containing(run.err, status.substr(5)), 1u) << run.err << "\n" << status;
  return status;
}

// ---------------------------------------------------------------------------------------------
// Found without PYPROF_CUPTI_LIBRARY, from the program's CUDA runtime.
// ---------------------------------------------------------------------------------------------

// torch's CUDA wheels: CUDA 12's one folder per library (nvidia/cuda_runtime/lib,
// nvidia/cuda_cupti/lib), CUDA 13's one folder for all (nvidia/cu13/lib).
TEST_P(CuptiLibraryTest, FindsTheLibcuptiOfTheRuntimesPipWheels) {
  const std::string site = dir_.file("site-packages/nvidia");
  const std::string runtime_dir = site + (cuda12() ? "/cuda_runtime/lib" : "/cu13/lib");
  const std::string cupti_dir = site + (cuda12() ? "/cuda_cupti/lib" : "/cu13/lib");
  const std::string cudart = link(runtime_dir + "/libcudart.so." + major(), FAKE_CUDART_LIBRARY);
  const std::string cupti = link(cupti_dir + "/libcupti.so." + major(), FAKE_CUPTI_LIBRARY);
  const AppRun run = run_searching("basic", {{"FAKE_CUDART", cudart}});
  expect_recorded_with(run, db_path(), cupti);
}

// A CUDA toolkit under $CUDA_HOME (extras/CUPTI/lib64), the runtime loaded from elsewhere.
TEST_P(CuptiLibraryTest, FindsTheLibcuptiOfTheRuntimesReleaseUnderCudaHome) {
  const std::string cudart =
      link(dir_.file("app/lib/libcudart.so." + major()), FAKE_CUDART_LIBRARY);
  const std::string home = dir_.file("cuda-" + major());
  const std::string cupti =
      link(home + "/extras/CUPTI/lib64/libcupti.so." + major(), FAKE_CUPTI_LIBRARY);
  // The other release's libcupti, first in the same folder's search order, is not taken.
  link(dir_.file("app/lib/libcupti.so." + std::string(cuda12() ? "13" : "12")), FAKE_CUPTI_LIBRARY);
  const AppRun run = run_searching("basic", {{"FAKE_CUDART", cudart}, {"CUDA_HOME", home}});
  expect_recorded_with(run, db_path(), cupti);
}

// ---------------------------------------------------------------------------------------------
// A libcupti that cannot serve: one line, what was found and what to install, NVTX recorded.
// ---------------------------------------------------------------------------------------------

TEST_P(CuptiLibraryTest, Cuda11RuntimeIsRefusedInOneLine) {
  const std::string cudart = link(dir_.file("lib/libcudart.so.11.0"), FAKE_CUDART_LIBRARY);
  const AppRun run = run_searching("basic", {{"FAKE_CUDART", cudart}});
  const std::string status = expect_refused(run, db_path());
  EXPECT_NE(status.find("this program runs CUDA 11 (" + cudart + ")"), std::string::npos) << status;
  EXPECT_NE(status.find("CUDA 12 and 13 only"), std::string::npos) << status;
}

TEST_P(CuptiLibraryTest, NoLibcuptiForTheRuntimeSaysWhatToInstall) {
  // The machine's own libcupti of that release would be found by its soname or its toolkit.
  const std::string soname = "libcupti.so." + major();
  if (void* system = dlopen(soname.c_str(), RTLD_LAZY | RTLD_LOCAL); system != nullptr) {
    dlclose(system);
    GTEST_SKIP() << "this machine has a " << soname << " on the loader's path";
  }
  struct stat st {};
  if (::stat(("/usr/local/cuda/extras/CUPTI/lib64/" + soname).c_str(), &st) == 0) {
    GTEST_SKIP() << "this machine has /usr/local/cuda/extras/CUPTI/lib64/" << soname;
  }
  const std::string cudart = link(dir_.file("lib/libcudart.so." + major()), FAKE_CUDART_LIBRARY);
  const AppRun run = run_searching("basic", {{"FAKE_CUDART", cudart}});
  const std::string status = expect_refused(run, db_path());
  EXPECT_NE(status.find("no " + soname + " found for the program's CUDA " + major() + " runtime (" +
                        cudart + ")"),
            std::string::npos)
      << status;
  EXPECT_NE(status.find(cuda12() ? "pip install nvidia-cuda-cupti-cu12"
                                 : "pip install nvidia-cuda-cupti,"),
            std::string::npos)
      << status;
}

TEST_P(CuptiLibraryTest, LibcuptiNewerThanTheDriverIsRefused) {
  // A driver one release older than the libcupti: CUDA 11.8 (r520) under CUDA 12.9's, 12.8
  // (r570) under CUDA 13.0's.
  const std::string driver_version = cuda12() ? "11080" : "12080";
  const AppRun run = run_app("basic",
                             {{"FAKE_CUDA_DRIVER", FAKE_CUDA_DRIVER_LIBRARY},
                              {"FAKE_CUDA_DRIVER_VERSION", driver_version}},
                             "init-first");
  const std::string status = expect_refused(run, db_path());
  EXPECT_NE(status.find(std::string(FAKE_CUPTI_LIBRARY) + " (CUPTI API version " +
                        GetParam().api_version + ", " + release() + ")"),
            std::string::npos)
      << status;
  EXPECT_NE(status.find("needs a driver for CUDA " + major() + ", and this driver runs CUDA " +
                        (cuda12() ? "11.8" : "12.8")),
            std::string::npos)
      << status;
  EXPECT_NE(status.find(cuda12() ? "update the NVIDIA driver (CUDA 12 needs r525 or newer"
                                 : "pip install nvidia-cuda-cupti-cu12, which torch's CUDA 12 "
                                   "builds depend on, or a CUDA 12 toolkit), or update the NVIDIA "
                                   "driver"),
            std::string::npos)
      << status;
}

TEST_P(CuptiLibraryTest, DriverOfTheLibcuptisReleaseIsAccepted) {
  const AppRun run = run_app("basic",
                             {{"FAKE_CUDA_DRIVER", FAKE_CUDA_DRIVER_LIBRARY},
                              {"FAKE_CUDA_DRIVER_VERSION", cuda12() ? "12090" : "13000"}},
                             "init-first");
  expect_recorded_with(run, db_path(), FAKE_CUPTI_LIBRARY);
}

TEST_P(CuptiLibraryTest, LibcuptiOlderThanTheRuntimeIsRefused) {
  // The program runs one CUDA release newer than the libcupti named.
  const std::string newer = cuda12() ? "13" : "14";
  const std::string cudart = link(dir_.file("lib/libcudart.so." + newer), FAKE_CUDART_LIBRARY);
  const AppRun run = run_app("basic", {{"FAKE_CUDART", cudart}}, "init-first");
  const std::string status = expect_refused(run, db_path());
  EXPECT_NE(status.find("is older than the program's CUDA " + newer + " runtime (" + cudart + ")"),
            std::string::npos)
      << status;
}

// A real libcupti (the CUDA 12 wheel the tests' headers come from; the CUDA 13 toolkit's), in
// a process with no NVIDIA driver: CUPTI refuses to start, and the collector says why.
TEST_P(CuptiLibraryTest, RealLibcuptiWithoutADriverSaysWhyInOneLine) {
  const std::string real = cuda12() ? REAL_LIBCUPTI12 : REAL_LIBCUPTI13;
  if (real.empty()) GTEST_SKIP() << "no real libcupti.so." << major() << " next to its headers";
  if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL); driver != nullptr) {
    dlclose(driver);
    GTEST_SKIP() << "this machine has an NVIDIA driver: CUPTI would start";
  }
  const AppRun run = run_app("basic", {{"PYPROF_CUPTI_LIBRARY", real}}, "init-first");
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  EXPECT_EQ(lines_containing(run.err, "CUDA kernels are not recorded"), 1u) << run.err;
  TestDb db(db_path());
  ASSERT_TRUE(db.intact());
  EXPECT_GT(db.scalar("SELECT count(*) FROM NVTX_EVENTS"), 0);
  const std::string status = capture(db, "PYPROF_CUDA_TRACE");
  // Its own version and layout, read from the library itself.
  EXPECT_EQ(status.rfind("off: cuptiSubscribe failed with CUPTI_ERROR_", 0), 0u) << status;
  EXPECT_NE(status.find("(CUPTI API version " + std::string(cuda12() ? "" : "13")),
            std::string::npos)
      << status;
  EXPECT_NE(status.find("(" + real + ")"), std::string::npos) << status;
  EXPECT_NE(status.find("no NVIDIA driver answered"), std::string::npos) << status;
  EXPECT_EQ(lines_containing(run.err, status.substr(5)), 1u) << run.err;
}

// ---------------------------------------------------------------------------------------------
// CUPTI serves one client per process; the first keeps it (docs/install.md).
// ---------------------------------------------------------------------------------------------

// torch.profiler started (twice) in a program pyprof profiles: pyprof holds CUPTI from cuInit
// on, torch.profiler's subscription fails, one line says so and how to give it CUPTI, and
// pyprof records every kernel, those inside the profiler's windows too.
TEST_P(CuptiLibraryTest, TorchProfilerUnderPyprofGetsNoCuptiAndOneLineSaysSo) {
  const AppRun run = run_app("torch-profiler-after");
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  const Facts facts = facts_of(run.out);
  expect_no_violation(run, facts);
  EXPECT_EQ(facts.number("cupti_request_first"), 1);
  EXPECT_EQ(facts.number("cupti_request_second"), 1);
  EXPECT_EQ(facts.number("kineto_subscribe_first"), 39);  // MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
  EXPECT_EQ(facts.number("kineto_subscribe_second"), 39);
  EXPECT_EQ(lines_containing(run.err,
                             "torch.profiler asked for CUDA activity, but pyprof "
                             "profile holds CUPTI"),
            1u)
      << run.err;
  EXPECT_EQ(lines_containing(run.err, "pyprof profile --no-cuda-trace"), 1u) << run.err;
  TestDb db(db_path());
  ASSERT_TRUE(db.intact());
  const std::vector<Launch> kernels = facts.launches_of("kernel");
  ASSERT_EQ(kernels.size(), 3u);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), 3);
  expect_launches_in_ranges(db, facts, kernels);
  const std::string status = capture(db, "PYPROF_CUDA_TRACE");
  EXPECT_EQ(status.rfind("on: ", 0), 0u) << status;
  EXPECT_NE(status.find("CUPTI refused to torch.profiler, which asked for it later"),
            std::string::npos)
      << status;
}

// torch.profiler took CUPTI before CUDA initialised: pyprof records NVTX only and names it.
TEST_P(CuptiLibraryTest, TorchProfilerHoldingCuptiFirstIsNamed) {
  const AppRun run = run_app("torch-profiler-first");
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  const Facts facts = facts_of(run.out);
  expect_no_violation(run, facts);
  EXPECT_EQ(facts.number("cupti_request_first"), 0);  // pyprof did not hold CUPTI yet
  EXPECT_EQ(facts.number("kineto_subscribe_first"), 0);
  EXPECT_EQ(lines_containing(run.err, "CUPTI is already in use by torch.profiler"), 1u) << run.err;
  EXPECT_EQ(lines_containing(run.err, "torch.profiler asked"), 0u) << run.err;
  TestDb db(db_path());
  ASSERT_TRUE(db.intact());
  EXPECT_EQ(db.scalar("SELECT count(*) FROM NVTX_EVENTS WHERE text = 'op:gemm'"), 1);
  EXPECT_EQ(row_count(db, "CUPTI_ACTIVITY_KIND_KERNEL"), 0);
  const std::string status = capture(db, "PYPROF_CUDA_TRACE");
  EXPECT_EQ(status.rfind("off: CUPTI is already in use by torch.profiler", 0), 0u) << status;
}

}  // namespace
}  // namespace pyprof::collect

# pyprof_torch: an imported target for compiling and linking against the torch that
# ${Python3_EXECUTABLE} imports, made from what torch itself reports (the facts
# torch.utils.cpp_extension uses for a C++ extension) instead of find_package(Torch).
#
# Why not find_package(Torch): for a CUDA build of torch, TorchConfig.cmake insists on a full
# CUDA toolkit (FindCUDA, cuDNN, enable_language(CUDA)) and fails without one, while pyprof._C
# uses only c10 and ATen's CPU-side API (RecordFunction, IValue, schemas). A user with a pip
# torch and no nvcc must still be able to build pyprof.
#
# Sets: pyprof_torch (INTERFACE target), PYPROF_TORCH_VERSION, PYPROF_TORCH_CXX_STANDARD
# (the standard TorchConfig.cmake puts on its `torch` target), PYPROF_EXTENSION_CXX_STANDARD
# (the one the extension is compiled as), PYPROF_MIN_TORCH.

set(torch_probe [=[
import json, os, torch, torch.utils, torch.utils.cpp_extension as ext
print(json.dumps({
    "version": torch.__version__,
    "include": ext.include_paths(),
    "lib": os.path.join(os.path.dirname(torch.__file__), "lib"),
    "cmake": torch.utils.cmake_prefix_path,
    "cxx11_abi": int(torch._C._GLIBCXX_USE_CXX11_ABI),
}))
]=])
execute_process(COMMAND "${Python3_EXECUTABLE}" -c "${torch_probe}"
                OUTPUT_VARIABLE torch_json OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_VARIABLE torch_error RESULT_VARIABLE torch_rc)
if(NOT torch_rc EQUAL 0)
  message(FATAL_ERROR "pyprof._C needs torch importable by ${Python3_EXECUTABLE}:\n${torch_error}")
endif()
string(JSON PYPROF_TORCH_VERSION GET "${torch_json}" version)
string(JSON torch_lib_dir GET "${torch_json}" lib)
string(JSON torch_cmake_dir GET "${torch_json}" cmake)
string(JSON torch_cxx11_abi GET "${torch_json}" cxx11_abi)
string(JSON include_count LENGTH "${torch_json}" include)
set(torch_include_dirs "")
math(EXPR last_include "${include_count} - 1")
foreach(i RANGE ${last_include})
  string(JSON dir GET "${torch_json}" include ${i})
  list(APPEND torch_include_dirs "${dir}")
endforeach()

# The supported range has one home, pyprof/_torch_support.py (docs/install.md).
file(STRINGS "${PROJECT_SOURCE_DIR}/pyprof/_torch_support.py" min_torch_line
     REGEX "^MIN_TORCH = ")
string(REGEX REPLACE "^MIN_TORCH = \"([0-9.]+)\".*" "\\1" PYPROF_MIN_TORCH "${min_torch_line}")
string(REGEX MATCH "^[0-9]+(\\.[0-9]+)*" torch_release "${PYPROF_TORCH_VERSION}")
if(torch_release VERSION_LESS PYPROF_MIN_TORCH)
  message(FATAL_ERROR "torch ${PYPROF_TORCH_VERSION} is older than ${PYPROF_MIN_TORCH}, the oldest "
                      "release pyprof builds against (docs/install.md)")
endif()
if(NOT torch_cxx11_abi)
  # Our other code and the system's fmt/simdjson use the C++11 std::string ABI; one library
  # cannot mix the two. Every torch >= 2.7 from pip uses it.
  message(FATAL_ERROR "torch ${PYPROF_TORCH_VERSION} was built with the pre-C++11 ABI "
                      "(_GLIBCXX_USE_CXX11_ABI=0), which pyprof does not support")
endif()

# The C++ standard torch's headers need, as its own CMake package states it.
file(STRINGS "${torch_cmake_dir}/Torch/TorchConfig.cmake" torch_std_line
     REGEX "CXX_STANDARD[ \t]+[0-9]+")
string(REGEX MATCH "[0-9]+" PYPROF_TORCH_CXX_STANDARD "${torch_std_line}")
if(NOT PYPROF_TORCH_CXX_STANDARD)
  set(PYPROF_TORCH_CXX_STANDARD 17)
endif()
# That standard is a floor: csrc/common, which the extension links, is C++20 (CMAKE_CXX_STANDARD),
# so the extension is compiled as the higher of the two (C++20 for torch 2.7-2.12, which ask 17).
if(PYPROF_TORCH_CXX_STANDARD GREATER CMAKE_CXX_STANDARD)
  set(PYPROF_EXTENSION_CXX_STANDARD ${PYPROF_TORCH_CXX_STANDARD})
else()
  set(PYPROF_EXTENSION_CXX_STANDARD ${CMAKE_CXX_STANDARD})
endif()

foreach(lib c10 torch_cpu)
  find_library(PYPROF_TORCH_${lib}_LIBRARY ${lib} PATHS "${torch_lib_dir}" NO_DEFAULT_PATH)
  if(NOT PYPROF_TORCH_${lib}_LIBRARY)
    message(FATAL_ERROR "lib${lib}.so is not in ${torch_lib_dir}: is this torch complete?")
  endif()
endforeach()

add_library(pyprof_torch INTERFACE IMPORTED)
target_include_directories(pyprof_torch SYSTEM INTERFACE ${torch_include_dirs})
target_link_libraries(pyprof_torch INTERFACE ${PYPROF_TORCH_torch_cpu_LIBRARY}
                                             ${PYPROF_TORCH_c10_LIBRARY})
target_compile_definitions(pyprof_torch INTERFACE _GLIBCXX_USE_CXX11_ABI=1)
message(STATUS "torch ${PYPROF_TORCH_VERSION} in ${torch_lib_dir} (asks C++${PYPROF_TORCH_CXX_STANDARD}, "
               "extension compiled as C++${PYPROF_EXTENSION_CXX_STANDARD}; pyprof needs >= "
               "${PYPROF_MIN_TORCH})")

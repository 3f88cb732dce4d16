/* pyprof's NVTX collector: the C API exported by libpyprof_collect.so.
 *
 * Loaded by NVTX3 through NVTX_INJECTION64_PATH (the way Nsight Systems loads its own). Records
 * NVTX ranges, marks, domains, registered strings, category and thread names into an SQLite
 * file laid out like an Nsight Systems export; loaded by the CUDA driver through
 * CUDA_INJECTION64_PATH, it adds CUDA activity from CUPTI (see InitializeInjection).
 *
 * Environment (read once, at the first InitializeInjectionNvtx2 call):
 *   PYPROF_OUTPUT                   output base path without extension (default "pyprof_report")
 *   PYPROF_ROOT_PID                 pid that writes BASE.sqlite (unset: this process)
 *   RANK                            set: BASE.rank<R>.sqlite
 *                                   others and fork children: BASE[.rank<R>].pid<PID>.sqlite;
 *                                   an existing file is never overwritten (falls back to the pid
 *                                   form, then BASE[.rank<R>].pid<PID>.<n>.sqlite)
 *   PYPROF_SESSION_START_MONO_NS    CLOCK_MONOTONIC ns at launch; rows are relative to it
 *   PYPROF_SESSION_START_UTC_NS     wall clock at launch (derived from the above if missing)
 *   PYPROF_DELAY_NS, PYPROF_DURATION_NS   capture window relative to the session start
 *   PYPROF_BUFFER_MB                bytes of events waiting to be written before new events
 *                                   are dropped (default 1024); PYPROF_BUFFER_BYTES overrides
 *   PYPROF_FINALIZE_TIMEOUT_S       longest wait for the writer at exit (default 120)
 *   PYPROF_LAUNCH_CMDLINE           the launcher's command, copied to META_DATA_CAPTURE
 */
#ifndef PYPROF_COLLECT_H_
#define PYPROF_COLLECT_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PYPROF_COLLECT_API __attribute__((visibility("default")))

/* Same type as NVTX's NvtxGetExportTableFunc_t (nvtxDetail/nvtxTypes.h). */
typedef const void* (*pyprof_nvtx_get_export_table_t)(uint32_t export_table_id);

/* NVTX3 injection entry point. Every shared object that includes the NVTX3 headers calls it
 * once with its own function tables; all calls share one collector. Returns 1 (success), or 0
 * if the export table is unusable. */
PYPROF_COLLECT_API int InitializeInjectionNvtx2(pyprof_nvtx_get_export_table_t get_export_table);

/* CUDA driver injection entry point (CUDA_INJECTION64_PATH, set by the launcher): cuInit calls
 * it once per process. Starts the CUPTI Activity API trace of kernels, runtime/driver calls,
 * copies, memsets, synchronizations and device facts into the same database, when a CUDA 12 or
 * 13 libcupti that matches the program's CUDA runtime can be loaded and no other CUPTI client
 * (torch.profiler, Nsight) holds it. Environment:
 *   PYPROF_CUDA_TRACE=0             do not start CUPTI
 *   PYPROF_CUPTI_LIBRARY            the libcupti to load (default: the one of the program's CUDA
 *                                   runtime, libcupti.so.12 or .so.13; cupti_search.h)
 *   PYPROF_CAPTURE_RANGE=cudaProfilerApi  record (NVTX too) only between the first
 *                                   cudaProfilerStart() and the next cudaProfilerStop()
 * Always returns 1: CUDA initialisation must not fail because of the profiler. */
PYPROF_COLLECT_API int InitializeInjection(void);

/* The program announces that another CUPTI client, `tool` (e.g. "torch.profiler"), is about to
 * ask for CUDA activity. CUPTI serves one client per process and the first keeps it. Returns 1
 * when this collector holds CUPTI: `tool` will get no CUDA activity, and the collector prints one
 * line saying so and how to give it CUPTI instead (once per tool; PYPROF_CUDA_TRACE notes it).
 * Returns 0 when it does not (not started yet, or off): the name is kept, so that a failed
 * subscription of the collector later names the holder. pyprof.init() calls it when
 * torch.profiler starts with CUDA activity. */
PYPROF_COLLECT_API int pyprof_collect_cupti_request(const char* tool);

/* Memory capture (csrc/annotate/memory_capture.h; docs/formats.md §2.2). One allocation
 * (bytes > 0) or free (bytes < 0) of a PyTorch allocator on the calling thread, with the
 * allocator's totals for that device after it (total_reserved 0 where the allocator keeps no
 * reserve, as the CPU's). device_type is c10::DeviceType (0 CPU, 1 CUDA), device_index -1 for
 * the CPU. The collector stamps it with its clock and the thread's id, like an NVTX mark, into
 * PYPROF_MEMORY_EVENTS. Never blocks on I/O; events beyond PYPROF_BUFFER_MB are counted. */
PYPROF_COLLECT_API void pyprof_collect_memory_event(uint64_t address, int64_t bytes,
                                                    uint64_t total_allocated,
                                                    uint64_t total_reserved, int32_t device_type,
                                                    int32_t device_index);

/* One device's memory facts at one moment, a PYPROF_MEMORY_DEVICES row. Bytes and counts; -1
 * where unknown (written NULL). */
typedef struct pyprof_memory_device {
  uint32_t struct_size;    /* sizeof(pyprof_memory_device): later fields are read only if present */
  int32_t device_type;     /* c10::DeviceType: 0 CPU, 1 CUDA */
  int32_t device_index;    /* -1 for the CPU */
  int64_t total_memory;    /* the device's memory (CPU: MemTotal) */
  int64_t free_memory;     /* free now (cudaMemGetInfo; CPU: MemAvailable) */
  int64_t allocator_limit; /* what the allocator may reserve (a per-process memory fraction) */
  int64_t allocated;       /* the allocator's totals now */
  int64_t reserved;
  int64_t peak_allocated; /* torch.cuda.max_memory_allocated(): since start or the last reset */
  int64_t peak_reserved;
  int64_t alloc_retries; /* cudaMalloc retries after freeing the cache: memory pressure */
  int64_t ooms;          /* out-of-memory errors the allocator raised */
} pyprof_memory_device;

/* Records `device` as seen at `moment` ("init", "stop", "exit"). Returns 0, or -1 when the
 * collector is not running or the struct is too small. */
PYPROF_COLLECT_API int pyprof_collect_memory_device(const pyprof_memory_device* device,
                                                    const char* moment);

/* What memory capture did in this process: `status` becomes META_DATA_CAPTURE
 * PYPROF_MEMORY_CAPTURE ("on", or "off: why"), `ops_unseen` the PYPROF_COLLECTOR_STATS row
 * memory_ops_unseen (ops that ran while another profiler held torch's per-thread memory
 * reporting, so that their allocations went to it). The last call before finalization wins. */
PYPROF_COLLECT_API void pyprof_collect_memory_capture(const char* status, uint64_t ops_unseen);

/* Flushes everything, writes statistics and metadata and closes the database now; later NVTX
 * calls are only counted. Idempotent; safe from any thread. Call it before os._exit().
 * Returns 0 when the database was written completely, 1 if the collector was never initialised
 * in this process (nothing to write), -1 on failure. */
PYPROF_COLLECT_API int pyprof_collect_shutdown(void);

/* The file this process writes, or NULL before it is chosen (no NVTX call yet, or a fork child
 * that has not recorded yet). Owned by the collector. */
PYPROF_COLLECT_API const char* pyprof_collect_output_path(void);

/* Writes a valid database with every table, metadata and zero statistics but no events, plus
 * META_DATA_CAPTURE row PYPROF_NOTE = note, at `path` (which must not exist). Starts no thread
 * and installs no handler. Returns 0 on success, -1 on failure (reason printed on stderr). */
PYPROF_COLLECT_API int pyprof_collect_write_empty(const char* path, const char* note);

/* Whether the database at `path` was finished: 1 when it holds the collector's final record
 * (META_DATA_CAPTURE FINALIZED_BY, or the launcher's empty-database statistics), 0 when it does
 * not (the process was killed before finishing it, or a rollback journal shows a write was cut
 * off), -1 when it cannot be read. Reads only; takes no lock. */
PYPROF_COLLECT_API int pyprof_collect_database_finished(const char* path);

/* Whether the database at `path` is an empty one that pyprof_collect_write_empty wrote (the
 * launcher's, for a program that made no NVTX call): 1 when it is a regular file holding a
 * META_DATA_CAPTURE PYPROF_NOTE row, no FINALIZED_BY row and no NVTX event, 0 when it is anything
 * else (a recorded profile, a link, a device), -1 when it cannot be read. The launcher replaces
 * such a file without --force: it holds nothing a later run could lose. Reads only. */
PYPROF_COLLECT_API int pyprof_collect_database_is_empty_note(const char* path);

#ifdef __cplusplus
}
#endif

#endif /* PYPROF_COLLECT_H_ */

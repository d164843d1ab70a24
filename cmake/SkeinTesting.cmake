# SPDX-License-Identifier: BSD-3-Clause
# What every test of a directory gets, applied once its tests are all declared
# (skein_finish_tests() at the end of each CMakeLists.txt that adds tests):
#  - one compile cache shared by the processes of a test run, SKEIN_CACHE_DIR=<build>/test-kernel-cache,
#    so that a kernel is compiled once per build rather than once per process and rank (PoCL's
#    compiler is most of the suite's time on a fresh cache). Tests that set SKEIN_CACHE_DIR or
#    SKEIN_DISABLE_CACHE themselves (the cache's own tests) keep what they set.
#  - PROCESSORS for `ctest -j`: a test labelled mpi that declares none is taken to run 2 ranks.
#  - A test labelled mpi of several processes runs PoCL's kernels on one thread per device in each
#    rank (POCL_MAX_PTHREAD_COUNT=1), unless it sets that itself: its ranks already fill the cores,
#    and PoCL's default, a thread per core in every rank, had them waking each other's threads
#    (collectives.np3 on 2 cores: 24.7 s -> 19.3 s, np4: 27.7 s -> 23.2 s, alone). Only PoCL's
#    scheduling changes; the kernels and Skein's code paths are the same.
#  - Under the sanitizers (SKEIN_SANITIZE), the MPI tests' sanitizer options, unless the test set
#    ASAN_OPTIONS itself. AddressSanitizer and UBSan everywhere; LeakSanitizer as follows.
#    * One process (PROCESSORS 1: collectives.np1, which runs the whole MPI suite,
#      hdf5.cross.read.np1, the apps' one-rank runs): leak check with fast unwinding. What Open MPI
#      keeps from MPI_Init and MPI_Finalize until exit is left out where those calls are made
#      (skein/detail/leak_check.hpp); tests/lsan.supp names Open MPI's libraries for the rest.
#    * Several processes: no leak check. There Open MPI's progress thread also allocates for each
#      peer, in libevent callbacks, and keeps it; those blocks can be told from Skein's only by a
#      full stack through Open MPI's frames (no frame pointers: the slow unwinder on every malloc),
#      which tripled the time of the MPI suite on two ranks (collectives.np2: 58 s -> 168 s). The
#      leak check of the same code paths is the one-process run's.
#    * The fault tests (tests/CMakeLists.txt) and the docs' examples: leak check with full stacks
#      (SKEIN_TEST_FULL_STACK_ENV). The fault tests abandon MPI operations on purpose and mostly
#      wait for timeouts, so the slow unwinder costs them little.
# Another build's test cache may be given: CI's sanitizer tests use the release tests' (the same
# PoCL, so the same binaries), which spares PoCL's compiler, slow under AddressSanitizer's
# allocator: the framework suite on 4 PoCL devices took 57 CPU-s on a fresh cache and 34 on the
# release run's. The compile path itself keeps its tests: the cache's own tests use caches of
# their own, and framework.pocl4.nocache runs the multi-device tests with the cache off.
set(SKEIN_TEST_CACHE_DIR "${PROJECT_BINARY_DIR}/test-kernel-cache" CACHE PATH
    "The compile cache shared by the test processes (SKEIN_CACHE_DIR of the tests)")
set(SKEIN_TEST_LEAK_CHECK_ENV
  "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/lsan.supp"
  "ASAN_OPTIONS=detect_leaks=1:intercept_tls_get_addr=0")
set(SKEIN_TEST_NO_LEAK_CHECK_ENV "ASAN_OPTIONS=detect_leaks=0:intercept_tls_get_addr=0")
set(SKEIN_TEST_FULL_STACK_ENV
  "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/lsan.supp"
  "ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0:intercept_tls_get_addr=0"
  "OMPI_MCA_mca_base_component_disable_dlclose=1")

# ctest -j starts the tests of highest COST first: the long ones, so that the short ones fill the
# cores beside them rather than one long test running alone at the end (a fresh clone has no
# CTestCostData.txt to order by). The figures are their seconds in a clean-clone CI run, in the
# release phase and in the sanitizer phase (where the one-rank MPI suite is the longest).
# slurm.multinode holds both cores (PROCESSORS 2): first, it runs alone before the rest rather
# than after it.
if(SKEIN_SANITIZE)
  set(SKEIN_TEST_COSTS
    collectives.np1 50 collectives.grid.np1 34 collectives.np2 34 framework.pocl4 25
    checkpoint.kill 19 collectives.grid.np2 15 collectives.fault.checkpoint_skip 13
    collectives.fault.late 11 collectives.fault.skip 11 collectives.fault.skip_sum 10
    collectives.fault.skip_unchecked 10 collectives.fault.read_skip 7)
else()
  set(SKEIN_TEST_COSTS
    slurm.multinode 70 collectives.np3 65 collectives.np4 61 collectives.np2 41 slurm.scripts 41
    framework.pocl4 22 collectives.grid.np3 19 collectives.grid.np4 18 collectives.grid.np2 13
    checkpoint.kill 20 docs.doxygen 18 collectives.np1 17 collectives.fault.checkpoint_skip 11
    collectives.fault.late 10 collectives.fault.skip 9 docs.examples 8 docs.examples.build 8
    consumer_strict 8 consumer_project 7 collectives.fault.skip_unchecked 6
    apps.cg.deterministic.float64 6
    # From a clean-clone CI run without a compiler cache (it builds libskein_framework; about 6 s
    # when ccache has it).
    consumer_subproject 48)
endif()

function(skein_finish_tests)
  get_property(tests DIRECTORY PROPERTY TESTS)
  set(costs ${SKEIN_TEST_COSTS})
  while(costs)
    list(POP_FRONT costs name cost)
    if(name IN_LIST tests)
      set_property(TEST ${name} PROPERTY COST ${cost})
    endif()
  endwhile()
  foreach(t IN LISTS tests)
    get_test_property(${t} ENVIRONMENT env)
    if(NOT env MATCHES "SKEIN_CACHE_DIR=|SKEIN_DISABLE_CACHE=")
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "SKEIN_CACHE_DIR=${SKEIN_TEST_CACHE_DIR}")
    endif()
    get_test_property(${t} LABELS labels)
    get_test_property(${t} PROCESSORS procs)
    if(labels MATCHES "(^|;)mpi(;|$)" AND NOT procs)
      set_property(TEST ${t} PROPERTY PROCESSORS 2)
      set(procs 2)
    endif()
    if(labels MATCHES "(^|;)mpi(;|$)" AND procs GREATER 1 AND NOT env MATCHES "POCL_MAX_PTHREAD_COUNT=")
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "POCL_MAX_PTHREAD_COUNT=1")
    endif()
    if(SKEIN_SANITIZE AND labels MATCHES "(^|;)mpi(;|$)" AND NOT env MATCHES "ASAN_OPTIONS=")
      if(procs GREATER 1)
        set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT ${SKEIN_TEST_NO_LEAK_CHECK_ENV})
      else()
        set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT ${SKEIN_TEST_LEAK_CHECK_ENV})
      endif()
    endif()
  endforeach()
endfunction()

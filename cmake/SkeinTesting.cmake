# What every test of a directory gets, applied once its tests are all declared
# (skein_finish_tests() at the end of each CMakeLists.txt that adds tests):
#  - one compile cache shared by the processes of a test run, SKEIN_CACHE_DIR=<build>/test-kernel-cache,
#    so that a kernel is compiled once per build rather than once per process and rank (PoCL's
#    compiler is most of the suite's time on a fresh cache). Tests that set SKEIN_CACHE_DIR or
#    SKEIN_DISABLE_CACHE themselves (the cache's own tests) keep what they set.
#  - PROCESSORS for `ctest -j`: a test labelled mpi that declares none is taken to run 2 ranks.
set(SKEIN_TEST_CACHE_DIR "${PROJECT_BINARY_DIR}/test-kernel-cache")

function(skein_finish_tests)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    get_test_property(${t} ENVIRONMENT env)
    if(NOT env MATCHES "SKEIN_CACHE_DIR=|SKEIN_DISABLE_CACHE=")
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "SKEIN_CACHE_DIR=${SKEIN_TEST_CACHE_DIR}")
    endif()
    get_test_property(${t} LABELS labels)
    get_test_property(${t} PROCESSORS procs)
    if(labels MATCHES "(^|;)mpi(;|$)" AND NOT procs)
      set_property(TEST ${t} PROPERTY PROCESSORS 2)
    endif()
  endforeach()
endfunction()

# SPDX-License-Identifier: BSD-3-Clause
# Kill-and-restart of skein-checkpoint-loop (tests/collectives/checkpoint_main.cpp), which
# checkpoints a distributed array after every step:
#   1. an uninterrupted run on 4 ranks gives the reference result;
#   2. for each stage of a checkpoint write, a run whose rank 0 SIGKILLs itself at that stage of
#      its second checkpoint (the program's --kill) must die without a result and leave
#      checkpoint 1 complete (and 2 incomplete, unless killed after the marker); the same command
#      run again, also on 3 or 2 ranks, must resume from checkpoint 1 (2 after the marker) and
#      end with a result bit-identical to the reference; the same for rank 1 killed after the
#      stages it takes part in (created, written), each run within LIMIT;
#   3. a bit flipped in the newest checkpoint must be refused (CheckpointError, SHA-256), and with
#      --fall-back the run resumes from the one before and ends bit-identical.
#   cmake -DMPIEXEC=... -DPROGRAM=... -DDIR=... -DLIMIT=seconds -P checkpoint_kill.cmake
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")
set(ARGS --steps 6 --rows 53 --cols 17 --keep 2)

# run(NAME NP KILL [extra args]): runs the program on NP ranks with checkpoints in DIR/NAME and
# the result in DIR/NAME.bin; KILL is the program's --kill ("" for none). Sets run_rc and run_out.
function(run name np kill)
  set(kill_args "")
  if(kill)
    set(kill_args --kill "${kill}")
  endif()
  execute_process(
    COMMAND ${MPIEXEC} -np ${np} --oversubscribe ${PROGRAM} --dir "${DIR}/${name}" --out "${DIR}/${name}.bin"
            ${ARGS} ${kill_args} ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out TIMEOUT ${LIMIT})
  message(STATUS "---- ${name}: ${np} rank(s), --kill '${kill}' ${ARGN}: exit ${rc}\n${out}")
  if(NOT rc MATCHES "^[0-9]+$")
    message(FATAL_ERROR "${name}: the job did not end within ${LIMIT} s (${rc})")
  endif()
  set(run_rc ${rc} PARENT_SCOPE)
  set(run_out "${out}" PARENT_SCOPE)
endfunction()

function(expect_in text what)
  string(FIND "${run_out}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: the output lacks '${text}'")
  endif()
endfunction()

function(expect_same_result name)
  if(NOT EXISTS "${DIR}/${name}.bin")
    message(FATAL_ERROR "${name}: no result file")
  endif()
  file(SHA256 "${DIR}/${name}.bin" got)
  file(SHA256 "${DIR}/reference.bin" want)
  if(NOT got STREQUAL want)
    message(FATAL_ERROR "${name}: the result differs from the uninterrupted run's (SHA-256 ${got}, reference ${want})")
  endif()
  message(STATUS "${name}: bit-identical to the uninterrupted run")
endfunction()

# 1. The reference.
run(reference 4 "")
if(NOT run_rc EQUAL 0)
  message(FATAL_ERROR "the uninterrupted run failed")
endif()
expect_in("fresh start on 4 rank(s)" "reference")
file(SIZE "${DIR}/reference.bin" size)
if(NOT size EQUAL 7632)  # 53 x 17 float64 + 53 int64
  message(FATAL_ERROR "the reference result has ${size} bytes, expected 7632")
endif()

# 2. Killed during the second checkpoint at each stage; restarted on 4, 3 or 2 ranks.
foreach(case "created;3" "written;4" "renamed;2" "marked;3")
  list(GET case 0 stage)
  list(GET case 1 np)
  set(name "kill-${stage}")
  run(${name} 4 "2:${stage}")
  if(run_rc EQUAL 0)
    message(FATAL_ERROR "${name}: the job exited 0 although rank 0 was killed")
  endif()
  expect_in("killing rank 0 after stage '${stage}' of checkpoint write 2 (step 2)" ${name})
  if(EXISTS "${DIR}/${name}.bin")
    message(FATAL_ERROR "${name}: a killed job left a result")
  endif()
  set(cp "${DIR}/${name}/checkpoint-0000000001")
  if(NOT EXISTS "${cp}.done" OR NOT EXISTS "${cp}.h5")
    message(FATAL_ERROR "${name}: checkpoint 1 is not complete")
  endif()
  set(resume_step 1)
  if(stage STREQUAL "marked")
    set(resume_step 2)
  elseif(EXISTS "${DIR}/${name}/checkpoint-0000000002.done")
    message(FATAL_ERROR "${name}: checkpoint 2 has a completion marker although its write was killed")
  endif()
  run(${name} ${np} "")
  if(NOT run_rc EQUAL 0)
    message(FATAL_ERROR "${name}: the restarted run failed")
  endif()
  expect_in("resumed from step ${resume_step} on ${np} rank(s)" "${name} restarted")
  expect_same_result(${name})
endforeach()

# 2b. Rank 1 (not the rank that does the file work) killed during the second checkpoint: the job
#     ends by itself within LIMIT, non-zero, checkpoint 1 stays complete and 2 incomplete, and the
#     run resumes from 1, bit-identical.
foreach(stage created written)
  set(name "kill-rank1-${stage}")
  run(${name} 4 "1@2:${stage}")
  if(run_rc EQUAL 0)
    message(FATAL_ERROR "${name}: the job exited 0 although rank 1 was killed")
  endif()
  expect_in("killing rank 1 after stage '${stage}' of checkpoint write 2 (step 2)" ${name})
  set(cp "${DIR}/${name}/checkpoint-0000000001")
  if(NOT EXISTS "${cp}.done" OR NOT EXISTS "${cp}.h5")
    message(FATAL_ERROR "${name}: checkpoint 1 is not complete")
  endif()
  if(EXISTS "${DIR}/${name}/checkpoint-0000000002.done" OR EXISTS "${DIR}/${name}.bin")
    message(FATAL_ERROR "${name}: the killed write left a marker or a result")
  endif()
  run(${name} 4 "")
  if(NOT run_rc EQUAL 0)
    message(FATAL_ERROR "${name}: the restarted run failed")
  endif()
  expect_in("resumed from step 1 on 4 rank(s)" "${name} restarted")
  expect_same_result(${name})
endforeach()

# 3. A damaged checkpoint: the reference directory keeps checkpoints 5 and 6; flip a byte of 6.
file(COPY "${DIR}/reference/" DESTINATION "${DIR}/damaged")
set(victim "${DIR}/damaged/checkpoint-0000000006.h5")
file(SIZE "${victim}" victim_size)
math(EXPR offset "${victim_size} / 2")
file(READ "${victim}" old OFFSET ${offset} LIMIT 1 HEX)
if(old STREQUAL "ff")
  set(byte "\\001")
else()
  set(byte "\\377")
endif()
execute_process(COMMAND sh -c "printf '${byte}' | dd of='${victim}' bs=1 seek=${offset} conv=notrunc status=none"
                RESULT_VARIABLE rc)
file(READ "${victim}" new OFFSET ${offset} LIMIT 1 HEX)
if(NOT rc EQUAL 0 OR new STREQUAL old)
  message(FATAL_ERROR "could not change byte ${offset} of ${victim}")
endif()
run(damaged 4 "")
if(run_rc EQUAL 0)
  message(FATAL_ERROR "damaged: the run used a damaged checkpoint")
endif()
expect_in("CheckpointError" "damaged")
expect_in("checkpoint-0000000006.h5' of step 6 has SHA-256" "damaged")
run(damaged 3 "" --fall-back)
if(NOT run_rc EQUAL 0)
  message(FATAL_ERROR "damaged --fall-back: the run failed")
endif()
expect_in("checkpoint of step 6 is not used" "damaged --fall-back")
expect_in("resumed from step 5 on 3 rank(s)" "damaged --fall-back")
expect_same_result(damaged)
message(STATUS "kill, restart and damaged-checkpoint checks passed")

# SPDX-License-Identifier: BSD-3-Clause
# Finds what the Python package `skein` (bindings/python) is built with: a Python 3 interpreter
# whose NumPy imports, its headers (Development.Module) and pybind11.
#
# The interpreter: Python3_EXECUTABLE when given; otherwise the first `python3` on PATH whose
# NumPy imports, then /usr/bin/python3 (a machine may put a Python without NumPy first on PATH,
# e.g. pyenv's shims, while Debian's python3-numpy belongs to /usr/bin/python3). The module is
# built for that interpreter only (its ABI tag), and the tests run with it.
#
# pybind11: its CMake package (Debian's pybind11-dev installs it under /usr/lib/cmake), else the one
# that `python3 -m pybind11 --cmakedir` names (pip's pybind11).

function(_skein_python_with_numpy out)
  set(candidates)
  if(Python3_EXECUTABLE)
    list(APPEND candidates "${Python3_EXECUTABLE}")
  else()
    find_program(_skein_path_python3 NAMES python3 NO_CACHE)
    if(_skein_path_python3)
      list(APPEND candidates "${_skein_path_python3}")
    endif()
    list(APPEND candidates /usr/bin/python3)
  endif()
  foreach(candidate IN LISTS candidates)
    if(NOT EXISTS "${candidate}")
      continue()
    endif()
    execute_process(COMMAND "${candidate}" -c "import numpy, sys; print(sys.executable)"
                    RESULT_VARIABLE status OUTPUT_VARIABLE executable ERROR_QUIET
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(status EQUAL 0)
      set(${out} "${executable}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

# skein_find_python(FOUND_VAR): sets FOUND_VAR to TRUE when all three are found, and then
# Python3_EXECUTABLE (cached), the Python3:: targets, pybind11's functions and SKEIN_PYTHON_VERSION
# (e.g. 3.11).
macro(skein_find_python found_var)
  set(${found_var} FALSE)
  _skein_python_with_numpy(_skein_python)
  if(_skein_python)
    set(Python3_EXECUTABLE "${_skein_python}" CACHE FILEPATH "The Python 3 interpreter Skein's Python package is built for")
    find_package(Python3 QUIET COMPONENTS Interpreter Development.Module NumPy)
  endif()
  if(Python3_FOUND AND Python3_Development.Module_FOUND AND Python3_NumPy_FOUND)
    find_package(pybind11 CONFIG QUIET)
    if(NOT pybind11_FOUND)
      execute_process(COMMAND "${Python3_EXECUTABLE}" -m pybind11 --cmakedir
                      RESULT_VARIABLE _skein_status OUTPUT_VARIABLE _skein_pybind11_dir ERROR_QUIET
                      OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(_skein_status EQUAL 0)
        find_package(pybind11 CONFIG QUIET HINTS "${_skein_pybind11_dir}")
      endif()
    endif()
    if(pybind11_FOUND)
      set(${found_var} TRUE)
      set(SKEIN_PYTHON_VERSION "${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}")
    endif()
  endif()
  if(NOT ${found_var} AND NOT SKEIN_WITH_PYTHON STREQUAL "AUTO")
    message(STATUS "Python package: needs a python3 whose NumPy imports (found: '${_skein_python}'), "
                   "its headers (python3-dev) and pybind11 (pybind11-dev)")
  endif()
endmacro()

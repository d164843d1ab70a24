# SPDX-License-Identifier: BSD-3-Clause
# Text files compiled into a library: the built-in kernels' skeletons (template files kept in the
# tree, framework/src/kernels/*.tmpl) become one generated C++ source with a table of (name, text).
#
#   skein_embed_texts(TARGET tgt NAMESPACE ns INCLUDE header.hpp FILES a.tmpl b.tmpl ...)
#
# adds to `tgt` a source that includes `header.hpp` and defines, in namespace `ns`, the
# `kEmbeddedTexts[]` and `kEmbeddedTextCount` it declares (an array of
# `struct EmbeddedText { std::string_view name; std::string_view text; }`; for the framework,
# framework/src/codegen/skeletons.hpp). Names are the files' names without their
# directory. The source is regenerated when a file changes, so an edit of a template rebuilds.
set(SKEIN_EMBED_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/skein_embed_texts.cmake")

function(skein_embed_texts)
  cmake_parse_arguments(ARG "" "TARGET;NAMESPACE;INCLUDE" "FILES" ${ARGN})
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${ARG_TARGET}_embedded_texts.cpp")
  set(files)
  foreach(f IN LISTS ARG_FILES)
    get_filename_component(abs "${f}" ABSOLUTE)
    list(APPEND files "${abs}")
  endforeach()
  string(REPLACE ";" "|" files_arg "${files}")
  add_custom_command(
    OUTPUT "${out}"
    COMMAND "${CMAKE_COMMAND}" "-DOUTPUT=${out}" "-DNAMESPACE=${ARG_NAMESPACE}"
            "-DINCLUDE=${ARG_INCLUDE}"
            "-DFILES=${files_arg}" -P "${SKEIN_EMBED_SCRIPT}"
    DEPENDS ${files} "${SKEIN_EMBED_SCRIPT}"
    COMMENT "Embedding ${ARG_TARGET}'s kernel skeletons"
    VERBATIM)
  target_sources(${ARG_TARGET} PRIVATE "${out}")
  # The generated source stands alone (no precompiled header, not in a unity batch).
  set_source_files_properties("${out}" PROPERTIES SKIP_PRECOMPILE_HEADERS ON SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()

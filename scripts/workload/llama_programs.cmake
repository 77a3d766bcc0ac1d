# Adds the programs named in PIPELINE_E2E_PROGRAMS (a CMake list) to a llama.cpp
# build whose tools and examples are off.
#
# Why: the end-to-end tests build the real tree with LLAMA_BUILD_TOOLS/EXAMPLES/
# SERVER/APP=OFF to fit CI, but a bundle needs programs for check-bundle's smoke
# run: llama-gguf-split (--version), llama-tokenize (--list-devices and the
# tokenizer check) and llama-simple (one forward pass). The list itself is
# declared once, in tests/support/reduction.py (REDUCED_PROGRAMS).
# Loaded with -DCMAKE_PROJECT_llama.cpp_INCLUDE=<this file>: it runs right after
# llama.cpp's project(), before its targets exist, so the targets are added by a
# deferred call at the end of the top-level CMakeLists.txt (add_subdirectory is
# not allowed there: the few lines of each program's CMakeLists.txt are repeated).
set(_pipeline_e2e_sources
    "llama-gguf-split=tools/gguf-split/gguf-split.cpp"
    "llama-tokenize=tools/tokenize/tokenize.cpp"
    "llama-simple=examples/simple/simple.cpp")

function(_pipeline_e2e_add_programs)
    foreach(program IN LISTS PIPELINE_E2E_PROGRAMS)
        set(source "")
        foreach(pair IN LISTS _pipeline_e2e_sources)
            string(REPLACE "=" ";" parts "${pair}")
            list(GET parts 0 name)
            if(name STREQUAL program)
                list(GET parts 1 source)
            endif()
        endforeach()
        if(source STREQUAL "")
            message(FATAL_ERROR "llama_programs.cmake: no source known for ${program}")
        endif()
        add_executable(${program} "${CMAKE_SOURCE_DIR}/${source}")
        # llama-simple links llama alone upstream; llama-common on top changes nothing it uses.
        target_link_libraries(${program} PRIVATE llama-common llama ${CMAKE_THREAD_LIBS_INIT})
        target_compile_features(${program} PRIVATE cxx_std_17)
    endforeach()
endfunction()
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _pipeline_e2e_add_programs)

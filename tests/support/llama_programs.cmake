# Adds exactly one program, llama-gguf-split, to a llama.cpp build whose tools are off.
#
# Why: the end-to-end test builds the real tree with LLAMA_BUILD_TOOLS/EXAMPLES/
# SERVER/APP=OFF to fit CI (142 Ninja steps instead of 239 with the tools on),
# but a bundle needs one program that runs `--version`. gguf-split is the
# smallest tool that has it (one source file on top of llama-common).
# Loaded with -DCMAKE_PROJECT_llama.cpp_INCLUDE=<this file>: it runs right after
# llama.cpp's project(), before its targets exist, so the target is added by a
# deferred call at the end of the top-level CMakeLists.txt (add_subdirectory is
# not allowed there: the three lines of tools/gguf-split/CMakeLists.txt are
# repeated instead).
function(_pipeline_e2e_add_gguf_split)
    add_executable(llama-gguf-split "${CMAKE_SOURCE_DIR}/tools/gguf-split/gguf-split.cpp")
    target_link_libraries(llama-gguf-split PRIVATE llama-common llama ${CMAKE_THREAD_LIBS_INIT})
    target_compile_features(llama-gguf-split PRIVATE cxx_std_17)
endfunction()
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _pipeline_e2e_add_gguf_split)

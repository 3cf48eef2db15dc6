# CTest: installs streamcheck's build tree into a prefix inside the build
# directory, then configures, builds and runs tests/consumer against it with
# the same compiler and flags (so the sanitizer builds link too).
# Inputs (-D): BUILD_DIR, SOURCE_DIR, WORK_DIR, GENERATOR, CXX_COMPILER,
# CXX_FLAGS, EXE_LINKER_FLAGS, BUILD_TYPE.
set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer)
file(REMOVE_RECURSE ${WORK_DIR})

execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} COMMAND_ECHO STDOUT
                OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer -B ${consumer_build} -G ${GENERATOR}
                        -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
                        -DCMAKE_CXX_FLAGS=${CXX_FLAGS} -DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}
                        -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
                COMMAND_ECHO STDOUT COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${CMAKE_COMMAND} --build ${consumer_build} COMMAND_ECHO STDOUT COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${consumer_build}/consumer COMMAND_ECHO STDOUT COMMAND_ERROR_IS_FATAL ANY)
if(EXISTS ${consumer_build}/consumer_cuda)
  execute_process(COMMAND ${consumer_build}/consumer_cuda COMMAND_ECHO STDOUT COMMAND_ERROR_IS_FATAL ANY)
endif()

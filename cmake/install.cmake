# The streamcheck CMake package (issue 9 item 7): `cmake --install` puts the
# headers of model/, backend_sim/ and backend_cuda/, the libraries and
# streamcheckConfig.cmake under the prefix; a project then does
#   find_package(streamcheck CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE streamcheck::sim)   # or ::model, ::cuda
# tests/consumer/ is such a project; the CTest test Package.ConsumerBuildsAgainstInstalledTree
# installs the build tree and builds it.
include(CMakePackageConfigHelpers)

set(STREAMCHECK_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/streamcheck)
set(_streamcheck_exported streamcheck_model streamcheck_sim)
set(_streamcheck_header_dirs model backend_sim)
if(STREAMCHECK_HAVE_CUDA)
  list(APPEND _streamcheck_exported streamcheck_cuda)
  list(APPEND _streamcheck_header_dirs backend_cuda)
endif()

install(TARGETS ${_streamcheck_exported} EXPORT streamcheckTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(dir IN LISTS _streamcheck_header_dirs)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${STREAMCHECK_INSTALL_INCLUDEDIR}/${dir}
          FILES_MATCHING PATTERN "*.h")
endforeach()
# The validation backends report P1/P2 as props::Violation: that one header
# (standard library only) goes with them.
install(FILES ${PROJECT_SOURCE_DIR}/props/violation.h DESTINATION ${STREAMCHECK_INSTALL_INCLUDEDIR}/props)
install(EXPORT streamcheckTargets NAMESPACE streamcheck:: DESTINATION ${STREAMCHECK_INSTALL_CMAKEDIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/streamcheckConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/streamcheckConfig.cmake
                              INSTALL_DESTINATION ${STREAMCHECK_INSTALL_CMAKEDIR})
# 0.x: a new minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/streamcheckConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/streamcheckConfig.cmake ${PROJECT_BINARY_DIR}/streamcheckConfigVersion.cmake
        DESTINATION ${STREAMCHECK_INSTALL_CMAKEDIR})

# The capture layer (docs/CAPTURE.md): the library the driver injects sits in
# lib/, where `streamcheck capture` looks for it (../lib from bin/), and the
# annotation header in include/streamcheck/.
if(TARGET streamcheck_capture)
  install(TARGETS streamcheck_capture LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(FILES ${PROJECT_SOURCE_DIR}/capture/include/streamcheck/annotate.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/streamcheck)

# xfunc's API reference, built by Doxygen from the doc comments of the public headers and the
# guides in docs/ (docs/Doxyfile.in says what is public and how).
#
#   cmake --build <build> --target docs    ->  <build>/docs/html/index.html
#   ctest --test-dir <build> -R doxygen_reference   (fails on any Doxygen warning)
#
# Included at the end of the top-level CMakeLists.txt, after the tests were added. Without
# doxygen (Debian package `doxygen`) it defines nothing. The target is `docs` when xfunc is the
# top-level project and `xfunc_docs` always, so that a parent project keeps its own `docs`.

find_package(Doxygen QUIET COMPONENTS doxygen)  # no graphviz: the reference has no diagrams

if(NOT DOXYGEN_FOUND)
  message(STATUS "xfunc: doxygen not found: no docs target, no doxygen_reference test")
else()
  set(XFUNC_DOCS_DIR ${PROJECT_BINARY_DIR}/docs)
  set(XFUNC_DOXYFILE ${XFUNC_DOCS_DIR}/Doxyfile)
  # Must match WARN_LOGFILE in docs/Doxyfile.in.
  set(XFUNC_DOXYGEN_LOG ${XFUNC_DOCS_DIR}/doxygen-warnings.log)
  configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${XFUNC_DOXYFILE} @ONLY)

  # Not part of ALL: the reference is built on demand. The warnings, if any, are printed after
  # the run (the check below is what fails on them).
  add_custom_target(xfunc_docs
    COMMAND ${CMAKE_COMMAND} -E make_directory ${XFUNC_DOCS_DIR}
    COMMAND ${CMAKE_COMMAND} -E rm -f ${XFUNC_DOXYGEN_LOG}
    COMMAND ${DOXYGEN_EXECUTABLE} ${XFUNC_DOXYFILE}
    COMMAND ${CMAKE_COMMAND} -E cat ${XFUNC_DOXYGEN_LOG}
    WORKING_DIRECTORY ${XFUNC_DOCS_DIR}
    COMMENT "xfunc: API reference (Doxygen ${DOXYGEN_VERSION}) in ${XFUNC_DOCS_DIR}/html"
    VERBATIM)
  if(XFUNC_TOP_LEVEL AND NOT TARGET docs)
    add_custom_target(docs)
    add_dependencies(docs xfunc_docs)
  endif()

  if(XFUNC_BUILD_TESTS AND NOT XFUNC_SANITIZE)  # (sanitizers change nothing in the reference)
    add_test(NAME doxygen_reference
             COMMAND bash ${PROJECT_SOURCE_DIR}/tests/docs/check_doxygen.sh ${DOXYGEN_EXECUTABLE} ${XFUNC_DOXYFILE}
                     ${XFUNC_DOXYGEN_LOG})
    set_tests_properties(doxygen_reference PROPERTIES LABELS docs TIMEOUT 300)
  endif()
endif()

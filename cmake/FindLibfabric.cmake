# SPDX-License-Identifier: Apache-2.0
# FindLibfabric: locates libfabric (headers + library) via pkg-config, with a plain search fallback.
# Defines the imported targets Libfabric::fabric (headers + library) and Libfabric::headers (headers
# only: smddp loads the library at run time), and Libfabric_VERSION.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_LIBFABRIC QUIET libfabric)
endif()

find_path(Libfabric_INCLUDE_DIR rdma/fabric.h HINTS ${PC_LIBFABRIC_INCLUDE_DIRS} ${LIBFABRIC_ROOT}/include)
find_library(Libfabric_LIBRARY NAMES fabric HINTS ${PC_LIBFABRIC_LIBRARY_DIRS} ${LIBFABRIC_ROOT}/lib)

if(PC_LIBFABRIC_VERSION)
  set(Libfabric_VERSION ${PC_LIBFABRIC_VERSION})
elseif(Libfabric_INCLUDE_DIR AND EXISTS "${Libfabric_INCLUDE_DIR}/rdma/fabric.h")
  file(STRINGS "${Libfabric_INCLUDE_DIR}/rdma/fabric.h" _maj REGEX "#define FI_MAJOR_VERSION")
  file(STRINGS "${Libfabric_INCLUDE_DIR}/rdma/fabric.h" _min REGEX "#define FI_MINOR_VERSION")
  string(REGEX MATCH "[0-9]+" _maj "${_maj}")
  string(REGEX MATCH "[0-9]+" _min "${_min}")
  set(Libfabric_VERSION "${_maj}.${_min}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Libfabric
  REQUIRED_VARS Libfabric_LIBRARY Libfabric_INCLUDE_DIR
  VERSION_VAR Libfabric_VERSION)

if(Libfabric_FOUND AND NOT TARGET Libfabric::fabric)
  add_library(Libfabric::fabric UNKNOWN IMPORTED)
  set_target_properties(Libfabric::fabric PROPERTIES
    IMPORTED_LOCATION "${Libfabric_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${Libfabric_INCLUDE_DIR}")
endif()
if(Libfabric_FOUND AND NOT TARGET Libfabric::headers)
  add_library(Libfabric::headers INTERFACE IMPORTED)
  set_target_properties(Libfabric::headers PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${Libfabric_INCLUDE_DIR}")
endif()
mark_as_advanced(Libfabric_INCLUDE_DIR Libfabric_LIBRARY)

# SPDX-License-Identifier: Apache-2.0
# The transport layer: the Transport interface with two implementations. libfabric's headers are
# visible only in this layer (and only ofi/ may include them); the library itself is not linked but
# loaded at run time (ofi/libfabric_api.h says why), the path found here being the fallback.
smddp_layer(smddp_transport)
target_link_libraries(smddp_transport PUBLIC smddp_common smddp_store ${CMAKE_DL_LIBS}
                      PRIVATE Libfabric::headers)
target_compile_definitions(smddp_transport PRIVATE
                           SMDDP_LIBFABRIC_PATH="${Libfabric_LIBRARY}")
# libfabric versions its symbols (fi_getinfo@@FABRIC_1.3 in 1.17, older versions kept for old
# binaries). Linking would bind the default version of the library built against, whose structs
# match these headers; dlvsym asks for the same ones, so a newer libfabric at run time serves the
# layout this build knows.
execute_process(COMMAND nm -D --defined-only "${Libfabric_LIBRARY}"
                OUTPUT_VARIABLE _fi_symbols ERROR_QUIET RESULT_VARIABLE _fi_nm_rc)
foreach(_fn fi_getinfo fi_freeinfo fi_dupinfo fi_fabric fi_strerror)
  string(TOUPPER "${_fn}" _up)
  if(_fi_nm_rc EQUAL 0 AND _fi_symbols MATCHES " ${_fn}@@([A-Za-z0-9_.]+)")
    target_compile_definitions(smddp_transport PRIVATE
                               SMDDP_${_up}_VERSION="${CMAKE_MATCH_1}")
  endif()
endforeach()
target_sources(smddp_transport PRIVATE transport/factory.cc transport/peer_liveness.cc)
include(transport/loopback/sources.cmake)
include(transport/ofi/sources.cmake)

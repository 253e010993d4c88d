# The transport layer: the Transport interface with two implementations. libfabric's headers are
# visible only in this layer (and only ofi/ may include them); the library itself is not linked but
# loaded at run time (ofi/libfabric_api.h says why), the path found here being the fallback.
smddp_layer(smddp_transport)
target_link_libraries(smddp_transport PUBLIC smddp_common smddp_store ${CMAKE_DL_LIBS}
                      PRIVATE Libfabric::headers)
target_compile_definitions(smddp_transport PRIVATE
                           SMDDP_LIBFABRIC_PATH="${Libfabric_LIBRARY}")
include(transport/loopback/sources.cmake OPTIONAL)
include(transport/ofi/sources.cmake OPTIONAL)
include(transport/shm/sources.cmake OPTIONAL)

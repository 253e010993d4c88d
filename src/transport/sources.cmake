# The transport layer: the Transport interface with two implementations. libfabric is linked, and
# its headers are visible, only in this layer (and only ofi/ may include them).
smddp_layer(smddp_transport)
target_link_libraries(smddp_transport PUBLIC smddp_common smddp_store PRIVATE Libfabric::fabric)
include(transport/loopback/sources.cmake OPTIONAL)
include(transport/ofi/sources.cmake OPTIONAL)
include(transport/shm/sources.cmake OPTIONAL)

# gRPC C-core (python3-grpcio) xDS client driver for xdsconform --client-cmd:
#   /usr/bin/python3 driver.py TARGET CSDS_ADDR   (bootstrap in $GRPC_XDS_BOOTSTRAP)
import os, signal, sys
# SIGTERM is blocked before any thread exists (C-core starts its own), so
# every thread inherits the block and the main thread takes it with sigwait:
# a signal handled by Python would wait for the main thread to run, and a
# SIGTERM delivered to a C-core thread would not wake it.
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
from concurrent import futures
import grpc
from grpc._cython import cygrpc

target, csds = sys.argv[1], sys.argv[2]

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)

def response():
    # dump_xds_configs() is one serialized ClientConfig; a ClientStatusResponse
    # holds it as field 1 (repeated ClientConfig config).
    cfg = cygrpc.dump_xds_configs()
    return b"\x0a" + varint(len(cfg)) + cfg

def stream_client_status(request_iterator, context):
    for _ in request_iterator:
        yield response()

def fetch_client_status(request, context):
    return response()

ident = lambda b: b
handler = grpc.method_handlers_generic_handler(
    "envoy.service.status.v3.ClientStatusDiscoveryService",
    {
        "StreamClientStatus": grpc.stream_stream_rpc_method_handler(stream_client_status, request_deserializer=ident, response_serializer=ident),
        "FetchClientStatus": grpc.unary_unary_rpc_method_handler(fetch_client_status, request_deserializer=ident, response_serializer=ident),
    },
)
server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
server.add_generic_rpc_handlers((handler,))
server.add_insecure_port(csds)
server.start()
channel = grpc.insecure_channel(target)
channel.subscribe(lambda state: None, try_to_connect=True)
signal.sigwait({signal.SIGTERM})
# Stop at once on SIGTERM, as the harness expects (it kills a client still
# running 2 s later and reports an error): C-core's threads would otherwise
# keep the interpreter alive while they wind down.
channel.close()
server.stop(None)
os._exit(0)

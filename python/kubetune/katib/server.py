"""``kubetune-katib``: one gRPC server with Katib's Suggestion and EarlyStopping services and gRPC health.

Katib's controller dials a suggestion service on port 6789 (katib-config ``suggestion`` entries) and an
early-stopping service on the same kind of endpoint, so one image serves both. SIGTERM and SIGINT stop the
server gracefully (in-flight calls finish within ``--grace`` seconds).
"""
from __future__ import annotations

import argparse as _argparse
import logging as _logging
import sys as _sys
import typing as _typing
from concurrent import futures as _futures

import grpc as _grpc
from grpc_health.v1 import health as _health
from grpc_health.v1 import health_pb2 as _health_pb2
from grpc_health.v1 import health_pb2_grpc as _health_pb2_grpc
from kubeflow.katib import katib_api_pb2 as _pb
from kubeflow.katib import katib_api_pb2_grpc as _pb_grpc

from .._cli import LOG_LEVELS as _LOG_LEVELS
from .._cli import StopSignal as _StopSignal
from .._cli import setup_logging as _setup_logging

if _typing.TYPE_CHECKING:
    from typing import Any, Optional, Sequence

del annotations  # the future flag stays in effect; the name would be a stray module attribute

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "DEFAULT_PORT", "main", "serve"]

DEFAULT_PORT = 6789  # Katib's suggestion service port
# Katib sends every trial in each request; 5,000 trials of 10 parameters take about 2 MB. Larger requests get
# RESOURCE_EXHAUSTED from gRPC itself before any parsing.
DEFAULT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024

_log = _logging.getLogger("kubetune.katib")


def serve(
    port: int = DEFAULT_PORT,
    *,
    host: str = "[::]",
    max_workers: int = 4,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    suggestion: Optional[Any] = None,
    early_stopping: Optional[Any] = None,
) -> "tuple[_grpc.Server, int]":
    """Start (not block on) a server with both services and health; returns (server, bound port).

    ``port=0`` picks a free port. ``suggestion`` / ``early_stopping`` replace the default servicers (tests inject
    an EarlyStoppingService with a fake Kubernetes client).
    """
    from .early_stopping import EarlyStoppingService
    from .suggestion import SuggestionService

    for name, value, low in (("port", port, 0), ("max_workers", max_workers, 1), ("max_message_bytes",
                                                                                   max_message_bytes, 1024)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if port > 65535:
        raise ValueError(f"port must be <= 65535, got {port}")
    # A stream window as large as the largest request: Katib sends every trial in each call, and the default
    # 64 KiB window would make the client wait for window updates several times per megabyte.
    options = [("grpc.max_receive_message_length", max_message_bytes), ("grpc.http2.lookahead_bytes", max_message_bytes),
               ("grpc.max_send_message_length", max_message_bytes)]
    server = _grpc.server(_futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="kubetune-katib"),
                          options=options)
    stopping = early_stopping or EarlyStoppingService()
    _add_suggestion(suggestion or SuggestionService(), server)
    _pb_grpc.add_EarlyStoppingServicer_to_server(stopping, server)
    server.kubetune_early_stopping = stopping  # type: ignore[attr-defined]  # closed by main at shutdown
    status = _health.HealthServicer()
    # Katib's suggestion Deployment probes "manager.v1beta1.Suggestion" (Katib consts.DefaultGRPCService, the
    # name its own services register); the proto's own full names are served too.
    names = ("", "manager.v1beta1.Suggestion",
             *(_pb.DESCRIPTOR.services_by_name[s].full_name for s in ("Suggestion", "EarlyStopping")))
    for name in names:
        status.set(name, _health_pb2.HealthCheckResponse.SERVING)
    _health_pb2_grpc.add_HealthServicer_to_server(status, server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot listen on {host}:{port}")
    server.start()
    _log.info("kubetune-katib serving Suggestion, EarlyStopping and health on %s:%d", host, bound)
    return server, bound


def _add_suggestion(servicer: Any, server: "_grpc.Server") -> None:
    """The Suggestion service; GetSuggestions gets the request's bytes when the servicer reads them itself
    (SuggestionService.GetSuggestionsWire), which saves decoding and re-encoding thousands of trials."""
    wire = getattr(servicer, "GetSuggestionsWire", None)
    if wire is None:
        _pb_grpc.add_SuggestionServicer_to_server(servicer, server)
        return
    handlers = {
        "GetSuggestions": _grpc.unary_unary_rpc_method_handler(
            wire, request_deserializer=None, response_serializer=_pb.GetSuggestionsReply.SerializeToString),
        "ValidateAlgorithmSettings": _grpc.unary_unary_rpc_method_handler(
            servicer.ValidateAlgorithmSettings, request_deserializer=_pb.ValidateAlgorithmSettingsRequest.FromString,
            response_serializer=_pb.ValidateAlgorithmSettingsReply.SerializeToString),
    }
    name = _pb.DESCRIPTOR.services_by_name["Suggestion"].full_name
    server.add_generic_rpc_handlers((_grpc.method_handlers_generic_handler(name, handlers),))


def _parser() -> _argparse.ArgumentParser:
    p = _argparse.ArgumentParser(prog="kubetune-katib", description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default %(default)s; 0 picks one)")
    p.add_argument("--host", default="[::]", help="address to bind (default %(default)s)")
    p.add_argument("--max-workers", type=int, default=4, help="concurrent calls (default %(default)s)")
    p.add_argument("--max-message-bytes", type=int, default=DEFAULT_MAX_MESSAGE_BYTES,
                   help="largest request accepted (default %(default)s)")
    p.add_argument("--grace", type=float, default=5.0, help="seconds in-flight calls get at shutdown")
    p.add_argument("--log-level", default="INFO", choices=_LOG_LEVELS,
                   help="stderr log level (default %(default)s)")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    _setup_logging(args.log_level)
    try:
        server, port = serve(args.port, host=args.host, max_workers=args.max_workers,
                             max_message_bytes=args.max_message_bytes)
    except (ValueError, OSError) as exc:
        _log.error("%s", exc)
        return 2
    stop = _StopSignal()
    # Readiness line for wrappers and tests (stdout: the port actually bound).
    print(f"kubetune-katib listening on port {port}", flush=True)
    _log.info("signal %d: stopping (grace %.1f s)", stop.wait(), args.grace)
    server.stop(args.grace).wait()
    server.kubetune_early_stopping.close()  # DB manager channels, Kubernetes client
    return 0


if __name__ == "__main__":
    _sys.exit(main())

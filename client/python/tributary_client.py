"""A Python client for Tributary's TranslationService: Translate and Sync.

Envoy resources come back as Resource values (name, type, version, the
exact bytes and the resource as JSON), so no Envoy types are needed.

    client = TributaryClient("127.0.0.1:8081")
    translation = client.translate(request)
    for r in translation.cluster_load_assignments:
        print(r.name, r.version, r.json["endpoints"])

Needs grpcio and protobuf (Debian: python3-grpcio, python3-protobuf) and the
generated messages in gen/python on the import path:
PYTHONPATH=gen/python:client/python.
"""

from __future__ import annotations

import json
import queue
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional, Union

import grpc
from google.protobuf import json_format

from tributary.v1 import objects_pb2, settings_pb2, translation_pb2

__all__ = [
    "CLUSTER_TYPE",
    "CLUSTER_LOAD_ASSIGNMENT_TYPE",
    "FieldViolation",
    "MalformedResponseError",
    "Resource",
    "SyncDelta",
    "SyncRejected",
    "SyncSession",
    "SyncState",
    "Translation",
    "TributaryClient",
    "field_violations",
    "reference_to",
    "request_from_json",
]

CLUSTER_TYPE = "envoy.config.cluster.v3.Cluster"
CLUSTER_LOAD_ASSIGNMENT_TYPE = "envoy.config.endpoint.v3.ClusterLoadAssignment"
_TYPE_URL_PREFIX = "type.googleapis.com/"

# The server's default limit; gRPC's 4 MiB default would refuse the answer
# for any sizeable cluster.
MAX_MESSAGE_SIZE = 64 << 20

_TRANSLATE = "/tributary.v1.TranslationService/Translate"
_SYNC = "/tributary.v1.TranslationService/Sync"

# The JSON field that names each type's resource, checked against
# Resource.name.
_NAME_FIELD = {CLUSTER_TYPE: "name", CLUSTER_LOAD_ASSIGNMENT_TYPE: "clusterName"}


class MalformedResponseError(Exception):
    """The server answered something this client cannot trust: a resource of
    an unexpected type, a name listed twice or disagreeing with the resource,
    or missing JSON that was asked for. Never the caller's fault."""


@dataclass(frozen=True)
class Resource:
    """One Envoy resource."""

    name: str
    """Cluster.name or ClusterLoadAssignment.cluster_name."""
    type: str
    """The Envoy type's full name, e.g. envoy.config.cluster.v3.Cluster."""
    type_url: str
    version: str
    """A hash of the bytes: equal versions mean equal resources."""
    bytes: bytes
    """The serialised resource."""
    json: Optional[dict]
    """The resource in Envoy's JSON form, parsed; None unless asked for."""


@dataclass
class Translation:
    """A Translate answer; every list sorted by name."""

    clusters: list
    cluster_load_assignments: list
    statuses: list
    """translation_pb2.ExtensionServiceStatus messages."""


@dataclass(frozen=True)
class FieldViolation:
    field: str
    reason: str
    description: str


@dataclass
class SyncDelta:
    """What changed; see SyncSession.state for the sum."""

    batch_id: int
    full_state: bool
    version: str
    clusters: list
    cluster_load_assignments: list
    removed_clusters: list
    removed_cluster_load_assignments: list
    statuses: list
    removed_statuses: list
    """translation_pb2.ObjectReference messages."""


@dataclass
class SyncRejected:
    """A refused batch: it changed nothing, and the session goes on."""

    batch_id: int
    message: str
    violations: list


def _unpack(resources: Iterable, want_type: str, want_json: bool, where: str) -> list:
    seen = set()
    out = []
    for i, r in enumerate(resources):
        at = f"{where}[{i}] {r.name!r}"
        if r.name in seen:
            raise MalformedResponseError(f"{at} is listed twice")
        seen.add(r.name)
        if r.resource.type_url != _TYPE_URL_PREFIX + want_type:
            raise MalformedResponseError(f"{at} has type {r.resource.type_url!r}, want {want_type}")
        parsed = None
        if want_json:
            if not r.json:
                raise MalformedResponseError(
                    f"{at} has no JSON although the request asked for it (include_json); "
                    "is the server older than include_json?")
            parsed = json.loads(r.json)
            named = parsed.get(_NAME_FIELD[want_type])
            if named != r.name:
                raise MalformedResponseError(f"{at} holds a resource whose {_NAME_FIELD[want_type]} is {named!r}")
        out.append(Resource(r.name, want_type, r.resource.type_url, r.version, r.resource.value, parsed))
    return out


class TributaryClient:
    """Calls TranslationService over an insecure gRPC channel (the server has
    no TLS of its own and listens on loopback by default)."""

    def __init__(self, address: str, include_json: bool = True):
        self._channel = grpc.insecure_channel(address, options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_SIZE),
            ("grpc.max_send_message_length", MAX_MESSAGE_SIZE),
        ])
        self._include_json = include_json
        self._translate = self._channel.unary_unary(
            _TRANSLATE,
            request_serializer=translation_pb2.TranslateRequest.SerializeToString,
            response_deserializer=translation_pb2.TranslateResponse.FromString)
        self._sync = self._channel.stream_stream(
            _SYNC,
            request_serializer=translation_pb2.SyncRequest.SerializeToString,
            response_deserializer=translation_pb2.SyncResponse.FromString)

    def translate(self, request: translation_pb2.TranslateRequest, timeout: Optional[float] = None) -> Translation:
        """Translates one complete set of objects.

        A malformed request raises grpc.RpcError with code INVALID_ARGUMENT
        and a message naming the object and field (field_violations lists
        every problem). An ExtensionService that is well formed but invalid
        is not an error: its status says why."""
        req = translation_pb2.TranslateRequest()
        req.CopyFrom(request)
        req.include_json = self._include_json
        resp = self._translate(req, timeout=timeout)
        return Translation(
            clusters=_unpack(resp.clusters, CLUSTER_TYPE, self._include_json, "clusters"),
            cluster_load_assignments=_unpack(
                resp.cluster_load_assignments, CLUSTER_LOAD_ASSIGNMENT_TYPE, self._include_json,
                "cluster_load_assignments"),
            statuses=list(resp.statuses),
        )

    def sync(self, settings: Optional[settings_pb2.Settings] = None) -> "SyncSession":
        """Opens a Sync session (see SyncSession)."""
        return SyncSession(self._sync, settings, self._include_json)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "TributaryClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class SyncState:
    """The session's current output, kept by applying deltas."""

    def __init__(self) -> None:
        self.clusters: dict = {}
        self.cluster_load_assignments: dict = {}
        self.statuses: dict = {}
        """Statuses by (namespace, name)."""
        self.version = ""

    def apply(self, d: SyncDelta) -> None:
        if d.full_state:
            self.clusters.clear()
            self.cluster_load_assignments.clear()
            self.statuses.clear()
        for name in d.removed_clusters:
            self.clusters.pop(name, None)
        for name in d.removed_cluster_load_assignments:
            self.cluster_load_assignments.pop(name, None)
        for ref in d.removed_statuses:
            self.statuses.pop((ref.namespace, ref.name), None)
        for r in d.clusters:
            self.clusters[r.name] = r
        for r in d.cluster_load_assignments:
            self.cluster_load_assignments[r.name] = r
        for s in d.statuses:
            self.statuses[(s.namespace, s.name)] = s
        self.version = d.version

    def to_translation(self) -> Translation:
        """The state as translate() would answer it, sorted by name."""
        return Translation(
            clusters=[self.clusters[k] for k in sorted(self.clusters)],
            cluster_load_assignments=[self.cluster_load_assignments[k] for k in sorted(self.cluster_load_assignments)],
            statuses=[self.statuses[k] for k in sorted(self.statuses)],
        )


_END = object()


class SyncSession:
    """One Sync stream. send() queues a batch; next() (or iteration) reads
    the answers. The server answers each batch once, unless the client sends
    faster than it reads: then one delta may cover several batches."""

    def __init__(self, call: Any, settings: Optional[settings_pb2.Settings], include_json: bool):
        self.state = SyncState()
        self._include_json = include_json
        self._requests: queue.Queue = queue.Queue()
        self._last_id = 0
        self._saw_first_delta = False
        start = translation_pb2.SyncStart(include_json=include_json)
        if settings is not None:
            start.settings.CopyFrom(settings)
        self._requests.put(translation_pb2.SyncRequest(start=start))
        self._responses = call(self._request_iterator())

    def _request_iterator(self) -> Iterator:
        while True:
            item = self._requests.get()
            if item is _END:
                return
            yield item

    def send(self, upserts: Iterable = (), deletes: Iterable = (), batch_id: Optional[int] = None) -> int:
        """Queues one batch, applied atomically, and returns its id (by
        default one more than the previous one; the first is 1)."""
        bid = self._last_id + 1 if batch_id is None else batch_id
        self._last_id = bid
        self._requests.put(translation_pb2.SyncRequest(
            batch=translation_pb2.SyncBatch(id=bid, upserts=list(upserts), deletes=list(deletes))))
        return bid

    def next(self) -> Union[SyncDelta, SyncRejected, None]:
        """The next update; None once the server has ended the stream."""
        try:
            resp = next(self._responses)
        except StopIteration:
            return None
        which = resp.WhichOneof("message")
        if which == "rejected":
            r = resp.rejected
            return SyncRejected(r.batch_id, r.message, [FieldViolation(v.field, v.reason, v.description) for v in r.violations])
        if which != "delta":
            raise MalformedResponseError("a SyncResponse with neither delta nor rejected")
        d = resp.delta
        if d.full_state == self._saw_first_delta:
            raise MalformedResponseError(f"delta for batch {d.batch_id}: full_state is {d.full_state}")
        self._saw_first_delta = True
        delta = SyncDelta(
            batch_id=d.batch_id,
            full_state=d.full_state,
            version=d.version,
            clusters=_unpack(d.clusters, CLUSTER_TYPE, self._include_json, "clusters"),
            cluster_load_assignments=_unpack(
                d.cluster_load_assignments, CLUSTER_LOAD_ASSIGNMENT_TYPE, self._include_json,
                "cluster_load_assignments"),
            removed_clusters=list(d.removed_clusters),
            removed_cluster_load_assignments=list(d.removed_cluster_load_assignments),
            statuses=list(d.statuses),
            removed_statuses=list(d.removed_statuses),
        )
        self.state.apply(delta)
        return delta

    def __iter__(self) -> Iterator:
        while True:
            update = self.next()
            if update is None:
                return
            yield update

    def close(self) -> None:
        """Sends nothing more: the server answers what was sent, then ends
        the stream (next() returns None)."""
        self._requests.put(_END)

    def cancel(self) -> None:
        """Ends the stream at once."""
        self._responses.cancel()


_KINDS = {
    "extension_service": translation_pb2.OBJECT_KIND_EXTENSION_SERVICE,
    "service": translation_pb2.OBJECT_KIND_SERVICE,
    "endpoint_slice": translation_pb2.OBJECT_KIND_ENDPOINT_SLICE,
    "secret": translation_pb2.OBJECT_KIND_SECRET,
    "tls_certificate_delegation": translation_pb2.OBJECT_KIND_TLS_CERTIFICATE_DELEGATION,
}


def reference_to(obj: objects_pb2.KubernetesObject) -> translation_pb2.ObjectReference:
    """Names an object, for SyncSession.send(deletes=...)."""
    which = obj.WhichOneof("kind")
    if which is None:
        raise ValueError("reference_to: the object has no kind set")
    meta = getattr(obj, which).metadata
    return translation_pb2.ObjectReference(kind=_KINDS[which], namespace=meta.namespace, name=meta.name)


def request_from_json(text: str) -> translation_pb2.TranslateRequest:
    """Reads a TranslateRequest in protojson, such as
    examples/grpc/translate-request.json."""
    return json_format.Parse(text, translation_pb2.TranslateRequest())


def field_violations(err: grpc.RpcError) -> list:
    """Lists the google.rpc.BadRequest field violations of a rejected call
    (from the grpc-status-details-bin trailer); [] for other errors."""
    trailers = err.trailing_metadata() if hasattr(err, "trailing_metadata") else None
    for key, value in trailers or ():
        if key == "grpc-status-details-bin":
            return _violations_from_status(value)
    return []


# google.rpc.Status and BadRequest are decoded by hand: three small messages
# are all this client needs of googleapis.
#   Status { int32 code = 1; string message = 2; repeated Any details = 3; }
#   Any { string type_url = 1; bytes value = 2; }
#   BadRequest { repeated FieldViolation field_violations = 1; }
#   FieldViolation { string field = 1; string description = 2; string reason = 3; }

def _fields(buf: bytes) -> Iterator:
    """Yields (field number, value) for length-delimited fields; skips the rest."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            _, i = _varint(buf, i)
        elif wire_type == 1:
            i += 8
        elif wire_type == 5:
            i += 4
        elif wire_type == 2:
            n, i = _varint(buf, i)
            yield number, buf[i:i + n]
            i += n
        else:
            raise ValueError(f"unsupported wire type {wire_type}")


def _varint(buf: bytes, i: int) -> tuple:
    result = shift = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7


def _violations_from_status(status_bytes: bytes) -> list:
    out = []
    for number, any_bytes in _fields(status_bytes):
        if number != 3:
            continue
        any_fields = dict(_fields(any_bytes))
        if any_fields.get(1, b"").decode() != "type.googleapis.com/google.rpc.BadRequest":
            continue
        for n, violation in _fields(any_fields.get(2, b"")):
            if n == 1:
                f = {k: v.decode() for k, v in _fields(violation)}
                out.append(FieldViolation(field=f.get(1, ""), reason=f.get(3, ""), description=f.get(2, "")))
    return out

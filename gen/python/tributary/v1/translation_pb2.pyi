from google.protobuf import any_pb2 as _any_pb2
from tributary.v1 import objects_pb2 as _objects_pb2
from tributary.v1 import settings_pb2 as _settings_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
OBJECT_KIND_ENDPOINT_SLICE: ObjectKind
OBJECT_KIND_EXTENSION_SERVICE: ObjectKind
OBJECT_KIND_SECRET: ObjectKind
OBJECT_KIND_SERVICE: ObjectKind
OBJECT_KIND_TLS_CERTIFICATE_DELEGATION: ObjectKind
OBJECT_KIND_UNSPECIFIED: ObjectKind

class BatchRejected(_message.Message):
    __slots__ = ["batch_id", "message", "violations"]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    batch_id: int
    message: str
    violations: _containers.RepeatedCompositeFieldContainer[FieldViolation]
    def __init__(self, batch_id: _Optional[int] = ..., message: _Optional[str] = ..., violations: _Optional[_Iterable[_Union[FieldViolation, _Mapping]]] = ...) -> None: ...

class DetailedCondition(_message.Message):
    __slots__ = ["errors", "message", "observed_generation", "reason", "status", "type", "warnings"]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    errors: _containers.RepeatedCompositeFieldContainer[SubCondition]
    message: str
    observed_generation: int
    reason: str
    status: str
    type: str
    warnings: _containers.RepeatedCompositeFieldContainer[SubCondition]
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., observed_generation: _Optional[int] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., errors: _Optional[_Iterable[_Union[SubCondition, _Mapping]]] = ..., warnings: _Optional[_Iterable[_Union[SubCondition, _Mapping]]] = ...) -> None: ...

class ExtensionServiceStatus(_message.Message):
    __slots__ = ["availability", "cluster_name", "conditions", "name", "namespace", "response_timeout"]
    AVAILABILITY_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    availability: _containers.RepeatedCompositeFieldContainer[TargetAvailability]
    cluster_name: str
    conditions: _containers.RepeatedCompositeFieldContainer[DetailedCondition]
    name: str
    namespace: str
    response_timeout: str
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., conditions: _Optional[_Iterable[_Union[DetailedCondition, _Mapping]]] = ..., cluster_name: _Optional[str] = ..., response_timeout: _Optional[str] = ..., availability: _Optional[_Iterable[_Union[TargetAvailability, _Mapping]]] = ...) -> None: ...

class FieldViolation(_message.Message):
    __slots__ = ["description", "field", "reason"]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    description: str
    field: str
    reason: str
    def __init__(self, field: _Optional[str] = ..., reason: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class ObjectReference(_message.Message):
    __slots__ = ["kind", "name", "namespace"]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    kind: ObjectKind
    name: str
    namespace: str
    def __init__(self, kind: _Optional[_Union[ObjectKind, str]] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class Resource(_message.Message):
    __slots__ = ["json", "name", "resource", "version"]
    JSON_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    json: str
    name: str
    resource: _any_pb2.Any
    version: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., resource: _Optional[_Union[_any_pb2.Any, _Mapping]] = ..., json: _Optional[str] = ...) -> None: ...

class SubCondition(_message.Message):
    __slots__ = ["message", "reason", "status", "type"]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    message: str
    reason: str
    status: str
    type: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class SyncBatch(_message.Message):
    __slots__ = ["deletes", "id", "upserts"]
    DELETES_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    UPSERTS_FIELD_NUMBER: _ClassVar[int]
    deletes: _containers.RepeatedCompositeFieldContainer[ObjectReference]
    id: int
    upserts: _containers.RepeatedCompositeFieldContainer[_objects_pb2.KubernetesObject]
    def __init__(self, id: _Optional[int] = ..., upserts: _Optional[_Iterable[_Union[_objects_pb2.KubernetesObject, _Mapping]]] = ..., deletes: _Optional[_Iterable[_Union[ObjectReference, _Mapping]]] = ...) -> None: ...

class SyncDelta(_message.Message):
    __slots__ = ["batch_id", "cluster_load_assignments", "clusters", "full_state", "removed_cluster_load_assignments", "removed_clusters", "removed_statuses", "statuses", "version"]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_LOAD_ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    FULL_STATE_FIELD_NUMBER: _ClassVar[int]
    REMOVED_CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    REMOVED_CLUSTER_LOAD_ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    REMOVED_STATUSES_FIELD_NUMBER: _ClassVar[int]
    STATUSES_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    batch_id: int
    cluster_load_assignments: _containers.RepeatedCompositeFieldContainer[Resource]
    clusters: _containers.RepeatedCompositeFieldContainer[Resource]
    full_state: bool
    removed_cluster_load_assignments: _containers.RepeatedScalarFieldContainer[str]
    removed_clusters: _containers.RepeatedScalarFieldContainer[str]
    removed_statuses: _containers.RepeatedCompositeFieldContainer[ObjectReference]
    statuses: _containers.RepeatedCompositeFieldContainer[ExtensionServiceStatus]
    version: str
    def __init__(self, batch_id: _Optional[int] = ..., full_state: bool = ..., version: _Optional[str] = ..., clusters: _Optional[_Iterable[_Union[Resource, _Mapping]]] = ..., cluster_load_assignments: _Optional[_Iterable[_Union[Resource, _Mapping]]] = ..., removed_clusters: _Optional[_Iterable[str]] = ..., removed_cluster_load_assignments: _Optional[_Iterable[str]] = ..., statuses: _Optional[_Iterable[_Union[ExtensionServiceStatus, _Mapping]]] = ..., removed_statuses: _Optional[_Iterable[_Union[ObjectReference, _Mapping]]] = ...) -> None: ...

class SyncRequest(_message.Message):
    __slots__ = ["batch", "start"]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    batch: SyncBatch
    start: SyncStart
    def __init__(self, start: _Optional[_Union[SyncStart, _Mapping]] = ..., batch: _Optional[_Union[SyncBatch, _Mapping]] = ...) -> None: ...

class SyncResponse(_message.Message):
    __slots__ = ["delta", "rejected", "xds_nack"]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    XDS_NACK_FIELD_NUMBER: _ClassVar[int]
    delta: SyncDelta
    rejected: BatchRejected
    xds_nack: XdsNack
    def __init__(self, delta: _Optional[_Union[SyncDelta, _Mapping]] = ..., rejected: _Optional[_Union[BatchRejected, _Mapping]] = ..., xds_nack: _Optional[_Union[XdsNack, _Mapping]] = ...) -> None: ...

class SyncStart(_message.Message):
    __slots__ = ["include_json", "publish_listeners", "settings", "xds_node_group"]
    INCLUDE_JSON_FIELD_NUMBER: _ClassVar[int]
    PUBLISH_LISTENERS_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    XDS_NODE_GROUP_FIELD_NUMBER: _ClassVar[int]
    include_json: bool
    publish_listeners: bool
    settings: _settings_pb2.Settings
    xds_node_group: str
    def __init__(self, settings: _Optional[_Union[_settings_pb2.Settings, _Mapping]] = ..., include_json: bool = ..., xds_node_group: _Optional[str] = ..., publish_listeners: bool = ...) -> None: ...

class TargetAvailability(_message.Message):
    __slots__ = ["port", "ready_endpoints", "reason", "service", "weight"]
    PORT_FIELD_NUMBER: _ClassVar[int]
    READY_ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    port: int
    ready_endpoints: int
    reason: str
    service: str
    weight: int
    def __init__(self, service: _Optional[str] = ..., port: _Optional[int] = ..., ready_endpoints: _Optional[int] = ..., weight: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class TranslateRequest(_message.Message):
    __slots__ = ["include_json", "objects", "settings"]
    INCLUDE_JSON_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    include_json: bool
    objects: _containers.RepeatedCompositeFieldContainer[_objects_pb2.KubernetesObject]
    settings: _settings_pb2.Settings
    def __init__(self, settings: _Optional[_Union[_settings_pb2.Settings, _Mapping]] = ..., objects: _Optional[_Iterable[_Union[_objects_pb2.KubernetesObject, _Mapping]]] = ..., include_json: bool = ...) -> None: ...

class TranslateResponse(_message.Message):
    __slots__ = ["cluster_load_assignments", "clusters", "statuses"]
    CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_LOAD_ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    STATUSES_FIELD_NUMBER: _ClassVar[int]
    cluster_load_assignments: _containers.RepeatedCompositeFieldContainer[Resource]
    clusters: _containers.RepeatedCompositeFieldContainer[Resource]
    statuses: _containers.RepeatedCompositeFieldContainer[ExtensionServiceStatus]
    def __init__(self, clusters: _Optional[_Iterable[_Union[Resource, _Mapping]]] = ..., cluster_load_assignments: _Optional[_Iterable[_Union[Resource, _Mapping]]] = ..., statuses: _Optional[_Iterable[_Union[ExtensionServiceStatus, _Mapping]]] = ...) -> None: ...

class XdsNack(_message.Message):
    __slots__ = ["accepted_version", "error_detail", "node_group", "node_id", "rejected_version", "resource_names", "type_url"]
    ACCEPTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    ERROR_DETAIL_FIELD_NUMBER: _ClassVar[int]
    NODE_GROUP_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    REJECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAMES_FIELD_NUMBER: _ClassVar[int]
    TYPE_URL_FIELD_NUMBER: _ClassVar[int]
    accepted_version: str
    error_detail: str
    node_group: str
    node_id: str
    rejected_version: str
    resource_names: _containers.RepeatedScalarFieldContainer[str]
    type_url: str
    def __init__(self, node_id: _Optional[str] = ..., node_group: _Optional[str] = ..., type_url: _Optional[str] = ..., resource_names: _Optional[_Iterable[str]] = ..., error_detail: _Optional[str] = ..., rejected_version: _Optional[str] = ..., accepted_version: _Optional[str] = ...) -> None: ...

class ObjectKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

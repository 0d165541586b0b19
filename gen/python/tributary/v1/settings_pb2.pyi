from tributary.v1 import objects_pb2 as _objects_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Settings(_message.Message):
    __slots__ = ["client_certificate", "connect_timeout", "enable_external_name_targets", "extension_defaults", "global_circuit_breakers", "upstream_tls", "xds_cluster_name"]
    CLIENT_CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    CONNECT_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    ENABLE_EXTERNAL_NAME_TARGETS_FIELD_NUMBER: _ClassVar[int]
    EXTENSION_DEFAULTS_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_CIRCUIT_BREAKERS_FIELD_NUMBER: _ClassVar[int]
    UPSTREAM_TLS_FIELD_NUMBER: _ClassVar[int]
    XDS_CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    client_certificate: str
    connect_timeout: str
    enable_external_name_targets: bool
    extension_defaults: _objects_pb2.ExtensionOptions
    global_circuit_breakers: _objects_pb2.CircuitBreakers
    upstream_tls: UpstreamTLS
    xds_cluster_name: str
    def __init__(self, xds_cluster_name: _Optional[str] = ..., connect_timeout: _Optional[str] = ..., global_circuit_breakers: _Optional[_Union[_objects_pb2.CircuitBreakers, _Mapping]] = ..., client_certificate: _Optional[str] = ..., upstream_tls: _Optional[_Union[UpstreamTLS, _Mapping]] = ..., extension_defaults: _Optional[_Union[_objects_pb2.ExtensionOptions, _Mapping]] = ..., enable_external_name_targets: bool = ...) -> None: ...

class UpstreamTLS(_message.Message):
    __slots__ = ["cipher_suites", "maximum_protocol_version", "minimum_protocol_version"]
    CIPHER_SUITES_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    cipher_suites: _containers.RepeatedScalarFieldContainer[str]
    maximum_protocol_version: str
    minimum_protocol_version: str
    def __init__(self, minimum_protocol_version: _Optional[str] = ..., maximum_protocol_version: _Optional[str] = ..., cipher_suites: _Optional[_Iterable[str]] = ...) -> None: ...

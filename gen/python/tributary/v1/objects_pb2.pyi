from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CertificateDelegation(_message.Message):
    __slots__ = ["secret_name", "target_namespaces"]
    SECRET_NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    secret_name: str
    target_namespaces: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, secret_name: _Optional[str] = ..., target_namespaces: _Optional[_Iterable[str]] = ...) -> None: ...

class CircuitBreakers(_message.Message):
    __slots__ = ["max_connections", "max_pending_requests", "max_requests", "max_retries", "per_host_max_connections"]
    MAX_CONNECTIONS_FIELD_NUMBER: _ClassVar[int]
    MAX_PENDING_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    MAX_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    MAX_RETRIES_FIELD_NUMBER: _ClassVar[int]
    PER_HOST_MAX_CONNECTIONS_FIELD_NUMBER: _ClassVar[int]
    max_connections: int
    max_pending_requests: int
    max_requests: int
    max_retries: int
    per_host_max_connections: int
    def __init__(self, max_connections: _Optional[int] = ..., max_pending_requests: _Optional[int] = ..., max_requests: _Optional[int] = ..., max_retries: _Optional[int] = ..., per_host_max_connections: _Optional[int] = ...) -> None: ...

class ClientSideWeightedRoundRobin(_message.Message):
    __slots__ = ["blackout_period", "enable_oob_load_report", "error_utilization_penalty", "oob_reporting_period", "weight_expiration_period", "weight_update_period"]
    BLACKOUT_PERIOD_FIELD_NUMBER: _ClassVar[int]
    ENABLE_OOB_LOAD_REPORT_FIELD_NUMBER: _ClassVar[int]
    ERROR_UTILIZATION_PENALTY_FIELD_NUMBER: _ClassVar[int]
    OOB_REPORTING_PERIOD_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_EXPIRATION_PERIOD_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_UPDATE_PERIOD_FIELD_NUMBER: _ClassVar[int]
    blackout_period: str
    enable_oob_load_report: bool
    error_utilization_penalty: float
    oob_reporting_period: str
    weight_expiration_period: str
    weight_update_period: str
    def __init__(self, enable_oob_load_report: bool = ..., oob_reporting_period: _Optional[str] = ..., blackout_period: _Optional[str] = ..., weight_expiration_period: _Optional[str] = ..., weight_update_period: _Optional[str] = ..., error_utilization_penalty: _Optional[float] = ...) -> None: ...

class ConnectionLimits(_message.Message):
    __slots__ = ["max_connection_duration", "max_requests_per_connection"]
    MAX_CONNECTION_DURATION_FIELD_NUMBER: _ClassVar[int]
    MAX_REQUESTS_PER_CONNECTION_FIELD_NUMBER: _ClassVar[int]
    max_connection_duration: str
    max_requests_per_connection: int
    def __init__(self, max_connection_duration: _Optional[str] = ..., max_requests_per_connection: _Optional[int] = ...) -> None: ...

class Endpoint(_message.Message):
    __slots__ = ["addresses", "conditions"]
    ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    addresses: _containers.RepeatedScalarFieldContainer[str]
    conditions: EndpointConditions
    def __init__(self, addresses: _Optional[_Iterable[str]] = ..., conditions: _Optional[_Union[EndpointConditions, _Mapping]] = ...) -> None: ...

class EndpointConditions(_message.Message):
    __slots__ = ["ready", "serving", "terminating"]
    READY_FIELD_NUMBER: _ClassVar[int]
    SERVING_FIELD_NUMBER: _ClassVar[int]
    TERMINATING_FIELD_NUMBER: _ClassVar[int]
    ready: bool
    serving: bool
    terminating: bool
    def __init__(self, ready: bool = ..., serving: bool = ..., terminating: bool = ...) -> None: ...

class EndpointPort(_message.Message):
    __slots__ = ["name", "port", "protocol"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    name: str
    port: int
    protocol: str
    def __init__(self, name: _Optional[str] = ..., port: _Optional[int] = ..., protocol: _Optional[str] = ...) -> None: ...

class EndpointSlice(_message.Message):
    __slots__ = ["address_type", "endpoints", "metadata", "ports"]
    ADDRESS_TYPE_FIELD_NUMBER: _ClassVar[int]
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    address_type: str
    endpoints: _containers.RepeatedCompositeFieldContainer[Endpoint]
    metadata: ObjectMeta
    ports: _containers.RepeatedCompositeFieldContainer[EndpointPort]
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., address_type: _Optional[str] = ..., endpoints: _Optional[_Iterable[_Union[Endpoint, _Mapping]]] = ..., ports: _Optional[_Iterable[_Union[EndpointPort, _Mapping]]] = ...) -> None: ...

class ExtensionOptions(_message.Message):
    __slots__ = ["client_side_weighted_round_robin", "connection_limits", "health_check", "http2_keepalive", "outlier_detection", "slow_start", "tcp_keepalive", "tls"]
    CLIENT_SIDE_WEIGHTED_ROUND_ROBIN_FIELD_NUMBER: _ClassVar[int]
    CONNECTION_LIMITS_FIELD_NUMBER: _ClassVar[int]
    HEALTH_CHECK_FIELD_NUMBER: _ClassVar[int]
    HTTP2_KEEPALIVE_FIELD_NUMBER: _ClassVar[int]
    OUTLIER_DETECTION_FIELD_NUMBER: _ClassVar[int]
    SLOW_START_FIELD_NUMBER: _ClassVar[int]
    TCP_KEEPALIVE_FIELD_NUMBER: _ClassVar[int]
    TLS_FIELD_NUMBER: _ClassVar[int]
    client_side_weighted_round_robin: ClientSideWeightedRoundRobin
    connection_limits: ConnectionLimits
    health_check: HealthCheck
    http2_keepalive: Http2Keepalive
    outlier_detection: OutlierDetection
    slow_start: SlowStart
    tcp_keepalive: TcpKeepalive
    tls: ExtensionTLS
    def __init__(self, health_check: _Optional[_Union[HealthCheck, _Mapping]] = ..., outlier_detection: _Optional[_Union[OutlierDetection, _Mapping]] = ..., tls: _Optional[_Union[ExtensionTLS, _Mapping]] = ..., http2_keepalive: _Optional[_Union[Http2Keepalive, _Mapping]] = ..., tcp_keepalive: _Optional[_Union[TcpKeepalive, _Mapping]] = ..., connection_limits: _Optional[_Union[ConnectionLimits, _Mapping]] = ..., slow_start: _Optional[_Union[SlowStart, _Mapping]] = ..., client_side_weighted_round_robin: _Optional[_Union[ClientSideWeightedRoundRobin, _Mapping]] = ...) -> None: ...

class ExtensionService(_message.Message):
    __slots__ = ["metadata", "spec"]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: ExtensionServiceSpec
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ExtensionServiceSpec, _Mapping]] = ...) -> None: ...

class ExtensionServiceSpec(_message.Message):
    __slots__ = ["circuit_breaker_policy", "load_balancer_policy", "options", "protocol", "protocol_version", "services", "timeout_policy", "validation"]
    CIRCUIT_BREAKER_POLICY_FIELD_NUMBER: _ClassVar[int]
    LOAD_BALANCER_POLICY_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    SERVICES_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_POLICY_FIELD_NUMBER: _ClassVar[int]
    VALIDATION_FIELD_NUMBER: _ClassVar[int]
    circuit_breaker_policy: CircuitBreakers
    load_balancer_policy: LoadBalancerPolicy
    options: ExtensionOptions
    protocol: str
    protocol_version: str
    services: _containers.RepeatedCompositeFieldContainer[ExtensionServiceTarget]
    timeout_policy: TimeoutPolicy
    validation: UpstreamValidation
    def __init__(self, services: _Optional[_Iterable[_Union[ExtensionServiceTarget, _Mapping]]] = ..., validation: _Optional[_Union[UpstreamValidation, _Mapping]] = ..., protocol: _Optional[str] = ..., load_balancer_policy: _Optional[_Union[LoadBalancerPolicy, _Mapping]] = ..., timeout_policy: _Optional[_Union[TimeoutPolicy, _Mapping]] = ..., protocol_version: _Optional[str] = ..., circuit_breaker_policy: _Optional[_Union[CircuitBreakers, _Mapping]] = ..., options: _Optional[_Union[ExtensionOptions, _Mapping]] = ...) -> None: ...

class ExtensionServiceTarget(_message.Message):
    __slots__ = ["name", "port", "weight"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    name: str
    port: int
    weight: int
    def __init__(self, name: _Optional[str] = ..., port: _Optional[int] = ..., weight: _Optional[int] = ...) -> None: ...

class ExtensionTLS(_message.Message):
    __slots__ = ["cipher_suites", "client_certificate", "maximum_protocol_version", "minimum_protocol_version", "sni"]
    CIPHER_SUITES_FIELD_NUMBER: _ClassVar[int]
    CLIENT_CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    SNI_FIELD_NUMBER: _ClassVar[int]
    cipher_suites: _containers.RepeatedScalarFieldContainer[str]
    client_certificate: str
    maximum_protocol_version: str
    minimum_protocol_version: str
    sni: str
    def __init__(self, sni: _Optional[str] = ..., client_certificate: _Optional[str] = ..., minimum_protocol_version: _Optional[str] = ..., maximum_protocol_version: _Optional[str] = ..., cipher_suites: _Optional[_Iterable[str]] = ...) -> None: ...

class HealthCheck(_message.Message):
    __slots__ = ["authority", "healthy_threshold", "interval", "port", "service_name", "timeout", "unhealthy_threshold"]
    AUTHORITY_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    SERVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    UNHEALTHY_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    authority: str
    healthy_threshold: int
    interval: str
    port: int
    service_name: str
    timeout: str
    unhealthy_threshold: int
    def __init__(self, service_name: _Optional[str] = ..., authority: _Optional[str] = ..., interval: _Optional[str] = ..., timeout: _Optional[str] = ..., unhealthy_threshold: _Optional[int] = ..., healthy_threshold: _Optional[int] = ..., port: _Optional[int] = ...) -> None: ...

class Http2Keepalive(_message.Message):
    __slots__ = ["interval", "timeout"]
    INTERVAL_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    interval: str
    timeout: str
    def __init__(self, interval: _Optional[str] = ..., timeout: _Optional[str] = ...) -> None: ...

class KubernetesObject(_message.Message):
    __slots__ = ["endpoint_slice", "extension_service", "secret", "service", "tls_certificate_delegation"]
    ENDPOINT_SLICE_FIELD_NUMBER: _ClassVar[int]
    EXTENSION_SERVICE_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    TLS_CERTIFICATE_DELEGATION_FIELD_NUMBER: _ClassVar[int]
    endpoint_slice: EndpointSlice
    extension_service: ExtensionService
    secret: Secret
    service: Service
    tls_certificate_delegation: TLSCertificateDelegation
    def __init__(self, extension_service: _Optional[_Union[ExtensionService, _Mapping]] = ..., service: _Optional[_Union[Service, _Mapping]] = ..., endpoint_slice: _Optional[_Union[EndpointSlice, _Mapping]] = ..., secret: _Optional[_Union[Secret, _Mapping]] = ..., tls_certificate_delegation: _Optional[_Union[TLSCertificateDelegation, _Mapping]] = ...) -> None: ...

class LoadBalancerPolicy(_message.Message):
    __slots__ = ["strategy"]
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    strategy: str
    def __init__(self, strategy: _Optional[str] = ...) -> None: ...

class ObjectMeta(_message.Message):
    __slots__ = ["annotations", "generation", "labels", "name", "namespace"]
    class AnnotationsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    annotations: _containers.ScalarMap[str, str]
    generation: int
    labels: _containers.ScalarMap[str, str]
    name: str
    namespace: str
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., generation: _Optional[int] = ..., labels: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ...) -> None: ...

class OutlierDetection(_message.Message):
    __slots__ = ["base_ejection_time", "consecutive_gateway_failure", "consecutive_local_origin_failure", "failure_percentage_minimum_hosts", "failure_percentage_request_volume", "failure_percentage_threshold", "interval", "max_ejection_percent", "max_ejection_time"]
    BASE_EJECTION_TIME_FIELD_NUMBER: _ClassVar[int]
    CONSECUTIVE_GATEWAY_FAILURE_FIELD_NUMBER: _ClassVar[int]
    CONSECUTIVE_LOCAL_ORIGIN_FAILURE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_PERCENTAGE_MINIMUM_HOSTS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_PERCENTAGE_REQUEST_VOLUME_FIELD_NUMBER: _ClassVar[int]
    FAILURE_PERCENTAGE_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_FIELD_NUMBER: _ClassVar[int]
    MAX_EJECTION_PERCENT_FIELD_NUMBER: _ClassVar[int]
    MAX_EJECTION_TIME_FIELD_NUMBER: _ClassVar[int]
    base_ejection_time: str
    consecutive_gateway_failure: int
    consecutive_local_origin_failure: int
    failure_percentage_minimum_hosts: int
    failure_percentage_request_volume: int
    failure_percentage_threshold: int
    interval: str
    max_ejection_percent: int
    max_ejection_time: str
    def __init__(self, consecutive_gateway_failure: _Optional[int] = ..., consecutive_local_origin_failure: _Optional[int] = ..., failure_percentage_threshold: _Optional[int] = ..., failure_percentage_minimum_hosts: _Optional[int] = ..., failure_percentage_request_volume: _Optional[int] = ..., interval: _Optional[str] = ..., base_ejection_time: _Optional[str] = ..., max_ejection_time: _Optional[str] = ..., max_ejection_percent: _Optional[int] = ...) -> None: ...

class Secret(_message.Message):
    __slots__ = ["ca_crt", "metadata", "tls_crt", "type"]
    CA_CRT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    TLS_CRT_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ca_crt: bytes
    metadata: ObjectMeta
    tls_crt: bytes
    type: str
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., type: _Optional[str] = ..., ca_crt: _Optional[bytes] = ..., tls_crt: _Optional[bytes] = ...) -> None: ...

class Service(_message.Message):
    __slots__ = ["metadata", "spec"]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: ServiceSpec
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ServiceSpec, _Mapping]] = ...) -> None: ...

class ServicePort(_message.Message):
    __slots__ = ["name", "port", "protocol", "target_port"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    TARGET_PORT_FIELD_NUMBER: _ClassVar[int]
    name: str
    port: int
    protocol: str
    target_port: str
    def __init__(self, name: _Optional[str] = ..., port: _Optional[int] = ..., target_port: _Optional[str] = ..., protocol: _Optional[str] = ...) -> None: ...

class ServiceSpec(_message.Message):
    __slots__ = ["external_name", "ports", "type"]
    EXTERNAL_NAME_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    external_name: str
    ports: _containers.RepeatedCompositeFieldContainer[ServicePort]
    type: str
    def __init__(self, type: _Optional[str] = ..., external_name: _Optional[str] = ..., ports: _Optional[_Iterable[_Union[ServicePort, _Mapping]]] = ...) -> None: ...

class SlowStart(_message.Message):
    __slots__ = ["aggression", "min_weight_percent", "window"]
    AGGRESSION_FIELD_NUMBER: _ClassVar[int]
    MIN_WEIGHT_PERCENT_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    aggression: float
    min_weight_percent: float
    window: str
    def __init__(self, window: _Optional[str] = ..., aggression: _Optional[float] = ..., min_weight_percent: _Optional[float] = ...) -> None: ...

class TLSCertificateDelegation(_message.Message):
    __slots__ = ["delegations", "metadata"]
    DELEGATIONS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    delegations: _containers.RepeatedCompositeFieldContainer[CertificateDelegation]
    metadata: ObjectMeta
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., delegations: _Optional[_Iterable[_Union[CertificateDelegation, _Mapping]]] = ...) -> None: ...

class TcpKeepalive(_message.Message):
    __slots__ = ["interval", "probes", "time"]
    INTERVAL_FIELD_NUMBER: _ClassVar[int]
    PROBES_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    interval: str
    probes: int
    time: str
    def __init__(self, probes: _Optional[int] = ..., time: _Optional[str] = ..., interval: _Optional[str] = ...) -> None: ...

class TimeoutPolicy(_message.Message):
    __slots__ = ["idle", "idle_connection", "response"]
    IDLE_CONNECTION_FIELD_NUMBER: _ClassVar[int]
    IDLE_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    idle: str
    idle_connection: str
    response: str
    def __init__(self, response: _Optional[str] = ..., idle: _Optional[str] = ..., idle_connection: _Optional[str] = ...) -> None: ...

class UpstreamValidation(_message.Message):
    __slots__ = ["ca_secret", "subject_name", "subject_names"]
    CA_SECRET_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_NAMES_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_NAME_FIELD_NUMBER: _ClassVar[int]
    ca_secret: str
    subject_name: str
    subject_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ca_secret: _Optional[str] = ..., subject_name: _Optional[str] = ..., subject_names: _Optional[_Iterable[str]] = ...) -> None: ...

// @tributary/client: a Node.js client for Tributary's TranslationService.
//
//   import { TributaryClient, requestFromJson } from "@tributary/client";
//   const client = new TributaryClient("127.0.0.1:8081");
//   const { clusters, clusterLoadAssignments, statuses } = await client.translate(request);
//
// Envoy resources come back as EnvoyResource values: name, type, version,
// the exact bytes and the resource as JSON, so no Envoy types are needed.

export { TributaryClient, requestFromJson } from "./client.js";
export { SyncSession, SyncState, referenceTo } from "./sync.js";
export { fieldViolations } from "./errors.js";
export { CLUSTER_TYPE, CLUSTER_LOAD_ASSIGNMENT_TYPE, MalformedResponseError } from "./resources.js";
// The API's messages and enums, for building requests with create().
export * from "../gen/tributary/v1/objects_pb.js";
export * from "../gen/tributary/v1/settings_pb.js";
export * from "../gen/tributary/v1/translation_pb.js";

/**
 * @typedef {import("./resources.js").EnvoyResource} EnvoyResource
 * @typedef {import("./client.js").Translation} Translation
 * @typedef {import("./client.js").ClientOptions} ClientOptions
 * @typedef {import("./sync.js").SyncUpdate} SyncUpdate
 * @typedef {import("./sync.js").SyncDeltaUpdate} SyncDeltaUpdate
 * @typedef {import("./sync.js").SyncRejectedUpdate} SyncRejectedUpdate
 * @typedef {import("./sync.js").SyncBatchInit} SyncBatchInit
 * @typedef {import("./errors.js").FieldViolation} FieldViolation
 */

export { Code, ConnectError } from "@connectrpc/connect";
export { create, fromJson, toJson } from "@bufbuild/protobuf";

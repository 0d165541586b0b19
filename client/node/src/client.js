import { create, fromJson } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";

import { TranslateRequestSchema, TranslationService } from "../gen/tributary/v1/translation_pb.js";
import { CLUSTER_LOAD_ASSIGNMENT_TYPE, CLUSTER_TYPE, unpackResources } from "./resources.js";
import { SyncSession } from "./sync.js";

/**
 * @typedef {import("@bufbuild/protobuf").MessageInitShape<typeof TranslateRequestSchema>} TranslateRequestInit
 * @typedef {import("../gen/tributary/v1/translation_pb.js").TranslateRequest} TranslateRequest
 * @typedef {import("../gen/tributary/v1/translation_pb.js").ExtensionServiceStatus} ExtensionServiceStatus
 * @typedef {import("../gen/tributary/v1/settings_pb.js").Settings} Settings
 * @typedef {import("@bufbuild/protobuf").MessageInitShape<typeof import("../gen/tributary/v1/settings_pb.js").SettingsSchema>} SettingsInit
 * @typedef {import("./resources.js").EnvoyResource} EnvoyResource
 */

/**
 * The answer to a Translate call, with its resources unpacked. Every list is
 * sorted by name, as the server sends it.
 *
 * @typedef {object} Translation
 * @property {EnvoyResource[]} clusters One envoy.config.cluster.v3.Cluster
 *   per valid ExtensionService.
 * @property {EnvoyResource[]} clusterLoadAssignments One
 *   envoy.config.endpoint.v3.ClusterLoadAssignment per valid
 *   ExtensionService, named like its Cluster.
 * @property {ExtensionServiceStatus[]} statuses One per ExtensionService,
 *   valid or not.
 */

/**
 * Options for TributaryClient.
 *
 * @typedef {object} ClientOptions
 * @property {boolean} [includeJson] Ask the server to render every Envoy
 *   resource as JSON (EnvoyResource.json). Default true: without Envoy types,
 *   JSON is how a Node caller reads a resource.
 */

/**
 * TributaryClient calls TranslationService over gRPC (HTTP/2 without TLS:
 * the server has no TLS of its own and listens on loopback by default).
 * One client holds one connection, opened on first use; close() ends it.
 */
export class TributaryClient {
  #sessions;
  #rpc;
  #includeJson;

  /**
   * @param {string} address the server's host:port, for example
   *   "127.0.0.1:8081", or a base URL such as "http://127.0.0.1:8081"
   * @param {ClientOptions} [options]
   */
  constructor(address, options = {}) {
    const baseUrl = address.includes("://") ? address : `http://${address}`;
    this.#sessions = new Http2SessionManager(baseUrl);
    this.#rpc = createClient(
      TranslationService,
      createGrpcTransport({ baseUrl, sessionManager: this.#sessions }),
    );
    this.#includeJson = options.includeJson ?? true;
  }

  /**
   * translate translates one complete set of objects.
   *
   * A malformed request (a missing name, an unparsable setting, two objects
   * of one kind with one name) rejects with a ConnectError of code
   * InvalidArgument whose message names the object and field; fieldViolations
   * lists every problem. An ExtensionService that is well formed but invalid
   * is not an error: its status says why, and it has no resources.
   *
   * @param {TranslateRequestInit | TranslateRequest} request the objects and
   *   settings (its include_json is ignored: the client's option decides)
   * @param {{signal?: AbortSignal, timeoutMs?: number}} [callOptions]
   * @returns {Promise<Translation>}
   */
  async translate(request, callOptions = {}) {
    // A new message: create() would return the caller's own message as is.
    const req = create(TranslateRequestSchema, { settings: request.settings, objects: request.objects, includeJson: this.#includeJson });
    const resp = await this.#rpc.translate(req, callOptions);
    return {
      clusters: unpackResources(resp.clusters, CLUSTER_TYPE, this.#includeJson, "clusters"),
      clusterLoadAssignments: unpackResources(resp.clusterLoadAssignments, CLUSTER_LOAD_ASSIGNMENT_TYPE, this.#includeJson, "clusterLoadAssignments"),
      statuses: resp.statuses,
    };
  }

  /**
   * sync opens a Sync session: a stream that follows changing objects. Send
   * batches with session.send(); read what changed with session.next() or
   * `for await (const update of session)`. The session's state lives as long
   * as the stream: after a reconnect, send every object again.
   *
   * @param {{settings?: SettingsInit | Settings, signal?: AbortSignal}} [options]
   * @returns {SyncSession}
   */
  sync(options = {}) {
    return new SyncSession(this.#rpc, { ...options, includeJson: this.#includeJson });
  }

  /**
   * close ends the connection; calls still running fail with Canceled.
   */
  close() {
    this.#sessions.abort();
  }
}

/**
 * requestFromJson reads a TranslateRequest in its protojson form, such as
 * examples/grpc/translate-request.json (the form grpcurl sends).
 *
 * @param {import("@bufbuild/protobuf").JsonValue} json
 * @returns {TranslateRequest}
 */
export function requestFromJson(json) {
  return fromJson(TranslateRequestSchema, json);
}

import { create } from "@bufbuild/protobuf";

import { ObjectKind, SyncRequestSchema } from "../gen/tributary/v1/translation_pb.js";
import { CLUSTER_LOAD_ASSIGNMENT_TYPE, CLUSTER_TYPE, MalformedResponseError, unpackResources } from "./resources.js";

/**
 * @typedef {import("@bufbuild/protobuf").MessageInitShape<typeof import("../gen/tributary/v1/objects_pb.js").KubernetesObjectSchema>} KubernetesObjectInit
 * @typedef {import("../gen/tributary/v1/objects_pb.js").KubernetesObject} KubernetesObject
 * @typedef {import("@bufbuild/protobuf").MessageInitShape<typeof import("../gen/tributary/v1/translation_pb.js").ObjectReferenceSchema>} ObjectReferenceInit
 * @typedef {import("../gen/tributary/v1/translation_pb.js").ObjectReference} ObjectReference
 * @typedef {import("../gen/tributary/v1/translation_pb.js").ExtensionServiceStatus} ExtensionServiceStatus
 * @typedef {import("../gen/tributary/v1/translation_pb.js").SyncResponse} SyncResponse
 * @typedef {import("../gen/tributary/v1/settings_pb.js").Settings} Settings
 * @typedef {import("@bufbuild/protobuf").MessageInitShape<typeof import("../gen/tributary/v1/settings_pb.js").SettingsSchema>} SettingsInit
 * @typedef {import("./resources.js").EnvoyResource} EnvoyResource
 * @typedef {import("./errors.js").FieldViolation} FieldViolation
 */

/**
 * What changed in the session's output. Applying every delta in order to an
 * empty state gives exactly what a Translate of the session's objects gives;
 * SyncSession.state does that for you.
 *
 * @typedef {object} SyncDeltaUpdate
 * @property {"delta"} kind
 * @property {bigint} batchId the last batch this delta covers; it covers
 *   every earlier batch not yet answered too
 * @property {boolean} fullState true for the session's first delta, which
 *   holds the complete state
 * @property {string} version the version of the session's whole output
 * @property {EnvoyResource[]} clusters added or changed
 * @property {EnvoyResource[]} clusterLoadAssignments added or changed
 * @property {string[]} removedClusters
 * @property {string[]} removedClusterLoadAssignments
 * @property {ExtensionServiceStatus[]} statuses added or changed
 * @property {ObjectReference[]} removedStatuses ExtensionServices deleted
 */

/**
 * A batch the server refused; it changed nothing and the session goes on.
 *
 * @typedef {object} SyncRejectedUpdate
 * @property {"rejected"} kind
 * @property {bigint} batchId
 * @property {string} message names the object and field, like Translate's
 *   InvalidArgument message
 * @property {FieldViolation[]} violations every problem found
 */

/** @typedef {SyncDeltaUpdate | SyncRejectedUpdate} SyncUpdate */

/**
 * A batch of changes, applied atomically: all of them, or none when any is
 * malformed.
 *
 * @typedef {object} SyncBatchInit
 * @property {bigint | number} [id] echoed in the answers; by default one
 *   more than the session's previous batch id (the first is 1)
 * @property {(KubernetesObjectInit | KubernetesObject)[]} [upserts] objects
 *   to create or replace, matched by kind, namespace and name
 * @property {(ObjectReferenceInit | ObjectReference)[]} [deletes] objects to
 *   delete (see referenceTo); deleting an unknown object is not an error
 */

/**
 * SyncState is the session's current output, kept by applying deltas.
 */
export class SyncState {
  /** @type {Map<string, EnvoyResource>} Clusters by name. */
  clusters = new Map();
  /** @type {Map<string, EnvoyResource>} ClusterLoadAssignments by name. */
  clusterLoadAssignments = new Map();
  /** @type {Map<string, ExtensionServiceStatus>} statuses by "namespace/name". */
  statuses = new Map();
  /** The version of the whole output, "" before the first delta. */
  version = "";

  /**
   * apply applies one delta; a full-state delta replaces everything.
   *
   * @param {SyncDeltaUpdate} delta
   */
  apply(delta) {
    if (delta.fullState) {
      this.clusters.clear();
      this.clusterLoadAssignments.clear();
      this.statuses.clear();
    }
    for (const name of delta.removedClusters) this.clusters.delete(name);
    for (const name of delta.removedClusterLoadAssignments) this.clusterLoadAssignments.delete(name);
    for (const ref of delta.removedStatuses) this.statuses.delete(`${ref.namespace}/${ref.name}`);
    for (const r of delta.clusters) this.clusters.set(r.name, r);
    for (const r of delta.clusterLoadAssignments) this.clusterLoadAssignments.set(r.name, r);
    for (const s of delta.statuses) this.statuses.set(`${s.namespace}/${s.name}`, s);
    this.version = delta.version;
  }

  /**
   * toTranslation lists the state the way translate() answers: each list
   * sorted by name (statuses by namespace, then name).
   *
   * @returns {import("./client.js").Translation}
   */
  toTranslation() {
    const byKey = (/** @type {Map<string, any>} */ m) => [...m.keys()].sort(compareStrings).map((k) => m.get(k));
    return {
      clusters: byKey(this.clusters),
      clusterLoadAssignments: byKey(this.clusterLoadAssignments),
      statuses: [...this.statuses.values()].sort((a, b) => compareStrings(a.namespace, b.namespace) || compareStrings(a.name, b.name)),
    };
  }
}

/**
 * Compares by UTF-16 code units, which for the ASCII names Kubernetes allows
 * is the byte order the server sorts by (unlike localeCompare).
 *
 * @param {string} a
 * @param {string} b
 */
function compareStrings(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * SyncSession is one Sync stream. Send batches with send(); read updates
 * with next() or for-await. The server answers each batch with one update,
 * unless the client sends faster than it reads: then one delta may cover
 * several batches (its batchId is the last one's).
 */
export class SyncSession {
  /** The output so far: every delta read is applied to it before next() returns it. */
  state = new SyncState();
  #requests = new RequestQueue();
  #responses;
  #abort = new AbortController();
  #includeJson;
  #lastId = 0n;
  #sawFirstDelta = false;

  /**
   * Use TributaryClient.sync().
   *
   * @param {import("@connectrpc/connect").Client<typeof import("../gen/tributary/v1/translation_pb.js").TranslationService>} rpc
   * @param {{settings?: SettingsInit | Settings, includeJson: boolean, signal?: AbortSignal}} options
   */
  constructor(rpc, options) {
    this.#includeJson = options.includeJson;
    if (options.signal) {
      const outer = options.signal;
      if (outer.aborted) this.#abort.abort(outer.reason);
      else outer.addEventListener("abort", () => this.#abort.abort(outer.reason), { once: true });
    }
    this.#requests.push(create(SyncRequestSchema, {
      message: { case: "start", value: { settings: options.settings, includeJson: options.includeJson } },
    }));
    /** @type {AsyncIterator<SyncResponse>} */
    this.#responses = rpc.sync(this.#requests, { signal: this.#abort.signal })[Symbol.asyncIterator]();
  }

  /**
   * send queues one batch and returns its id.
   *
   * @param {SyncBatchInit} batch
   * @returns {bigint}
   */
  send(batch) {
    const id = batch.id === undefined ? this.#lastId + 1n : BigInt(batch.id);
    this.#lastId = id;
    this.#requests.push(create(SyncRequestSchema, {
      message: { case: "batch", value: { id, upserts: batch.upserts ?? [], deletes: batch.deletes ?? [] } },
    }));
    return id;
  }

  /**
   * next waits for the next update; undefined means the server ended the
   * stream (after close()). A failed stream rejects with a ConnectError.
   *
   * @returns {Promise<SyncUpdate | undefined>}
   */
  async next() {
    const r = await this.#responses.next();
    if (r.done) {
      return undefined;
    }
    const msg = r.value.message;
    switch (msg.case) {
      case "delta": {
        const d = msg.value;
        if (d.fullState === this.#sawFirstDelta) {
          throw new MalformedResponseError(this.#sawFirstDelta
            ? `delta for batch ${d.batchId} claims full state after the first delta`
            : `the first delta (batch ${d.batchId}) is not a full state`);
        }
        this.#sawFirstDelta = true;
        /** @type {SyncDeltaUpdate} */
        const update = {
          kind: "delta",
          batchId: d.batchId,
          fullState: d.fullState,
          version: d.version,
          clusters: unpackResources(d.clusters, CLUSTER_TYPE, this.#includeJson, "clusters"),
          clusterLoadAssignments: unpackResources(d.clusterLoadAssignments, CLUSTER_LOAD_ASSIGNMENT_TYPE, this.#includeJson, "clusterLoadAssignments"),
          removedClusters: d.removedClusters,
          removedClusterLoadAssignments: d.removedClusterLoadAssignments,
          statuses: d.statuses,
          removedStatuses: d.removedStatuses,
        };
        this.state.apply(update);
        return update;
      }
      case "rejected":
        return {
          kind: "rejected",
          batchId: msg.value.batchId,
          message: msg.value.message,
          violations: msg.value.violations.map((v) => ({ field: v.field, reason: v.reason, description: v.description })),
        };
      default:
        throw new MalformedResponseError("a SyncResponse with neither delta nor rejected");
    }
  }

  /** @returns {AsyncGenerator<SyncUpdate, void, undefined>} */
  async *[Symbol.asyncIterator]() {
    for (;;) {
      const update = await this.next();
      if (update === undefined) return;
      yield update;
    }
  }

  /**
   * close says the client sends nothing more. The server still answers the
   * batches already sent, then ends the stream: keep reading until next()
   * gives undefined.
   */
  close() {
    this.#requests.end();
  }

  /** cancel ends the stream at once; pending reads reject with Canceled. */
  cancel() {
    this.#abort.abort();
  }
}

/**
 * referenceTo names a KubernetesObject for SyncBatchInit.deletes.
 *
 * @param {KubernetesObjectInit | KubernetesObject} obj
 * @returns {ObjectReferenceInit}
 */
export function referenceTo(obj) {
  const kinds = {
    extensionService: ObjectKind.EXTENSION_SERVICE,
    service: ObjectKind.SERVICE,
    endpointSlice: ObjectKind.ENDPOINT_SLICE,
    secret: ObjectKind.SECRET,
    tlsCertificateDelegation: ObjectKind.TLS_CERTIFICATE_DELEGATION,
  };
  const k = obj.kind;
  if (k === undefined || k.case === undefined || k.value === undefined) {
    throw new TypeError("referenceTo: the object has no kind set");
  }
  const meta = k.value.metadata;
  return { kind: kinds[k.case], namespace: meta?.namespace ?? "", name: meta?.name ?? "" };
}

/**
 * RequestQueue is the client's side of the stream: an async iterable that
 * yields what was pushed, waits when empty, and finishes after end().
 *
 * @template T
 */
class RequestQueue {
  /** @type {T[]} */
  #items = [];
  #ended = false;
  /** @type {(() => void) | undefined} */
  #wake;

  /** @param {T} item */
  push(item) {
    if (this.#ended) {
      throw new Error("the Sync session is closed: no more batches can be sent");
    }
    this.#items.push(item);
    this.#wakeReader();
  }

  end() {
    this.#ended = true;
    this.#wakeReader();
  }

  #wakeReader() {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** @returns {AsyncGenerator<T, void, undefined>} */
  async *[Symbol.asyncIterator]() {
    for (;;) {
      while (this.#items.length > 0) {
        yield /** @type {T} */ (this.#items.shift());
      }
      if (this.#ended) return;
      await new Promise((resolve) => { this.#wake = () => resolve(undefined); });
    }
  }
}

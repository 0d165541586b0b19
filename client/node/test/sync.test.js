// A Sync session against a real `tributary serve`: the examples' objects,
// an endpoint change, a malformed batch, and a delete, checking after each
// answer that the deltas applied so far equal a Translate of the same
// objects.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import {
  ObjectKind,
  TributaryClient,
  create,
  KubernetesObjectSchema,
  referenceTo,
  requestFromJson,
} from "../src/index.js";
import { repoRoot, startServer } from "../testing/server.js";

const NAME = "extension/auth/ext-authz";

/**
 * The localities of a ClusterLoadAssignment's JSON as
 * [subZone, weight, [addresses]].
 *
 * @param {import("../src/index.js").EnvoyResource | undefined} cla
 */
function localities(cla) {
  assert.ok(cla?.json, "the ClusterLoadAssignment has JSON");
  return /** @type {any} */ (cla.json).endpoints.map((/** @type {any} */ l) => [
    l.locality.subZone,
    l.loadBalancingWeight,
    l.lbEndpoints.map((/** @type {any} */ e) => e.endpoint.address.socketAddress.address),
  ]);
}

describe("sync", () => {
  /** @type {import("../testing/server.js").RunningServer} */
  let server;
  /** @type {TributaryClient} */
  let client;

  before(async () => {
    server = await startServer();
    client = new TributaryClient(server.address);
  });
  after(async () => {
    client?.close();
    await server?.stop();
  });

  it("follows batches with deltas whose sum is the Translate of the same objects", async () => {
    const request = requestFromJson(JSON.parse(await readFile(join(repoRoot, "examples/grpc/translate-request.json"), "utf8")));
    /** @type {Map<string, import("../src/index.js").KubernetesObject>} objects by kind/namespace/name */
    const objects = new Map();
    const keyOf = (/** @type {import("../src/index.js").KubernetesObject} */ o) => {
      const r = referenceTo(o);
      return `${r.kind}/${r.namespace}/${r.name}`;
    };
    for (const o of request.objects) objects.set(keyOf(o), o);

    const session = client.sync({ settings: request.settings });
    /** Reads one update and checks the session's state against Translate. */
    const nextMatchingTranslate = async () => {
      const update = await session.next();
      assert.ok(update, "the stream ended early");
      const want = await client.translate({ settings: request.settings, objects: [...objects.values()] });
      assert.deepEqual(session.state.toTranslation(), want, `state after batch ${update.batchId}`);
      return update;
    };

    // Batch 1: every object. The first delta is the full state.
    assert.equal(session.send({ upserts: [...objects.values()] }), 1n);
    const first = await nextMatchingTranslate();
    assert.equal(first.kind, "delta");
    if (first.kind !== "delta") return;
    assert.equal(first.batchId, 1n);
    assert.equal(first.fullState, true);
    assert.deepEqual(first.clusters.map((r) => r.name), [NAME]);
    assert.deepEqual(localities(first.clusterLoadAssignments[0]), [
      ["auth/authz-stable/9001", 80, ["10.244.1.17", "10.244.2.9", "10.244.3.21"]],
      ["auth/authz-canary/9001", 20, ["10.244.2.30"]],
    ]);
    assert.deepEqual(first.statuses.map((s) => [s.name, s.conditions[0].status]), [["ext-authz", "True"]]);

    // Batch 2: an endpoint change. The stable pod that was not ready
    // becomes ready: the ClusterLoadAssignment changes, and the status,
    // whose availability counts the stable Service's ready endpoints.
    const stable = request.objects.find((o) => o.kind.case === "endpointSlice" && o.kind.value.metadata?.name === "authz-stable-7x2kq");
    assert.ok(stable && stable.kind.case === "endpointSlice");
    const readySlice = create(KubernetesObjectSchema, stable);
    assert.ok(readySlice.kind.case === "endpointSlice");
    const notReady = readySlice.kind.value.endpoints.find((e) => e.addresses[0] === "10.244.3.22");
    assert.ok(notReady?.conditions);
    notReady.conditions.ready = true;
    objects.set(keyOf(readySlice), readySlice);
    assert.equal(session.send({ upserts: [readySlice] }), 2n);
    const second = await nextMatchingTranslate();
    assert.equal(second.kind, "delta");
    if (second.kind !== "delta") return;
    assert.equal(second.batchId, 2n);
    assert.equal(second.fullState, false);
    assert.deepEqual(second.clusters, [], "the Cluster did not change");
    assert.deepEqual(second.statuses.map((s) => s.availability.map((a) => [a.service, a.readyEndpoints, a.weight])), [
      [["authz-stable", 4, 80], ["authz-canary", 1, 20]],
    ]);
    assert.deepEqual(localities(second.clusterLoadAssignments[0]), [
      ["auth/authz-stable/9001", 80, ["10.244.1.17", "10.244.2.9", "10.244.3.21", "10.244.3.22"]],
      ["auth/authz-canary/9001", 20, ["10.244.2.30"]],
    ]);
    assert.notEqual(second.version, first.version);
    assert.notEqual(second.clusterLoadAssignments[0].version, first.clusterLoadAssignments[0].version);

    // Batch 3: malformed (a Service without a name). Refused, nothing
    // changes, and the session goes on.
    assert.equal(session.send({ upserts: [{ kind: { case: "service", value: { metadata: { namespace: "auth" } } } }] }), 3n);
    const third = await nextMatchingTranslate();
    assert.equal(third.kind, "rejected");
    if (third.kind !== "rejected") return;
    assert.equal(third.batchId, 3n);
    assert.match(third.message, /metadata\.name is required/);
    assert.deepEqual(third.violations.map((v) => [v.field, v.reason]), [["batch.upserts[0].service.metadata.name", "REQUIRED"]]);
    assert.equal(session.state.version, second.version);

    // Batch 4: delete the ExtensionService. Its resources and status go.
    const extensionService = request.objects.find((o) => o.kind.case === "extensionService");
    assert.ok(extensionService);
    objects.delete(keyOf(extensionService));
    assert.equal(session.send({ deletes: [referenceTo(extensionService)] }), 4n);
    const fourth = await nextMatchingTranslate();
    assert.equal(fourth.kind, "delta");
    if (fourth.kind !== "delta") return;
    assert.equal(fourth.batchId, 4n);
    assert.deepEqual(fourth.removedClusters, [NAME]);
    assert.deepEqual(fourth.removedClusterLoadAssignments, [NAME]);
    assert.deepEqual(fourth.removedStatuses.map((r) => [r.kind, r.namespace, r.name]), [[ObjectKind.EXTENSION_SERVICE, "auth", "ext-authz"]]);
    assert.equal(session.state.clusters.size, 0);

    // Closing the sending side ends the stream once everything is answered.
    session.close();
    assert.equal(await session.next(), undefined);
  });
});

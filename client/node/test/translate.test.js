// Translate against a real `tributary serve`: the examples' objects, the
// same request without JSON, and malformed requests.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";

import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE,
  CLUSTER_TYPE,
  Code,
  ConnectError,
  ExtensionServiceStatusSchema,
  TributaryClient,
  fieldViolations,
  requestFromJson,
  toJson,
} from "../src/index.js";
import { repoRoot, startServer } from "../testing/server.js";

const NAME = "extension/auth/ext-authz";

/** The examples' request: the objects of examples/extauth.yaml. */
async function exampleRequest() {
  return requestFromJson(JSON.parse(await readFile(join(repoRoot, "examples/grpc/translate-request.json"), "utf8")));
}

/**
 * The Clusters and ClusterLoadAssignments of an admin ConfigDump in
 * protojson, without the @type each carries as an Any.
 * @param {any} dump
 */
function configDumpResources(dump) {
  const bare = (/** @type {any} */ { "@type": _, ...resource }) => resource;
  /** @type {any[]} */
  let clusters = [];
  /** @type {any[]} */
  let assignments = [];
  for (const section of dump.configs) {
    if (section["@type"].endsWith(".ClustersConfigDump")) {
      clusters = (section.dynamicActiveClusters ?? []).map((/** @type {any} */ c) => bare(c.cluster));
    } else if (section["@type"].endsWith(".EndpointsConfigDump")) {
      assignments = (section.dynamicEndpointConfigs ?? []).map((/** @type {any} */ e) => bare(e.endpointConfig));
    }
  }
  return { clusters, assignments };
}

describe("translate", () => {
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

  it("returns the examples' Cluster and ClusterLoadAssignment with name, type, version and JSON", async () => {
    const got = await client.translate(await exampleRequest());

    assert.deepEqual(got.clusters.map((r) => [r.name, r.type, r.typeUrl]), [
      [NAME, CLUSTER_TYPE, `type.googleapis.com/${CLUSTER_TYPE}`],
    ]);
    assert.deepEqual(got.clusterLoadAssignments.map((r) => [r.name, r.type, r.typeUrl]), [
      [NAME, CLUSTER_LOAD_ASSIGNMENT_TYPE, `type.googleapis.com/${CLUSTER_LOAD_ASSIGNMENT_TYPE}`],
    ]);
    for (const r of [...got.clusters, ...got.clusterLoadAssignments]) {
      assert.match(r.version, /^[0-9a-f]{16}$/, `${r.type} version`);
      assert.ok(r.bytes.length > 0, `${r.type} has bytes`);
    }

    // The weights the README promises, read from the JSON.
    const cla = /** @type {any} */ (got.clusterLoadAssignments[0].json);
    assert.deepEqual(
      cla.endpoints.map((/** @type {any} */ l) => [l.locality.subZone, l.loadBalancingWeight, l.lbEndpoints.length]),
      [["auth/authz-stable/9001", 80, 3], ["auth/authz-canary/9001", 20, 1]],
    );

    // The whole JSON equals what the command line prints for the same
    // objects (examples/extauth.yaml), which renders through another path.
    const { stdout } = await promisify(execFile)(server.binary, ["translate", "-f", "examples/extauth.yaml", "-o", "json"], { cwd: repoRoot });
    // It prints an Envoy ConfigDump: each resource wrapped with its
    // version, and its @type inline.
    const { clusters, assignments } = configDumpResources(JSON.parse(stdout).configDump);
    assert.deepEqual(got.clusters.map((r) => r.json), clusters);
    assert.deepEqual(got.clusterLoadAssignments.map((r) => r.json), assignments);

    assert.deepEqual(got.statuses.map((s) => toJson(ExtensionServiceStatusSchema, s)), [{
      namespace: "auth",
      name: "ext-authz",
      clusterName: NAME,
      responseTimeout: "500ms",
      conditions: [{ type: "Valid", status: "True", reason: "Valid", message: "Valid ExtensionService" }],
      availability: [
        { service: "authz-stable", port: 9001, readyEndpoints: 3, weight: 80 },
        { service: "authz-canary", port: 9001, readyEndpoints: 1, weight: 20 },
      ],
    }]);
  });

  it("without JSON returns the same bytes and versions, and no JSON", async () => {
    const plain = new TributaryClient(server.address, { includeJson: false });
    try {
      const req = await exampleRequest();
      const withJSON = await client.translate(req);
      const without = await plain.translate(req);
      for (const list of /** @type {const} */ (["clusters", "clusterLoadAssignments"])) {
        assert.equal(without[list].length, 1, list);
        assert.equal(without[list][0].json, undefined, `${list}[0].json`);
        assert.equal(without[list][0].version, withJSON[list][0].version, `${list}[0].version`);
        assert.deepEqual(without[list][0].bytes, withJSON[list][0].bytes, `${list}[0].bytes`);
      }
      assert.deepEqual(without.statuses, withJSON.statuses);
      assert.equal(req.includeJson, false, "translate() left the caller's request alone");
    } finally {
      plain.close();
    }
  });

  it("reports an invalid ExtensionService in its status, not as an error", async () => {
    const req = await exampleRequest();
    // Drop the canary Service: the ExtensionService now names a missing one.
    req.objects = req.objects.filter((o) => !(o.kind.case === "service" && o.kind.value.metadata?.name === "authz-canary"));
    const got = await client.translate(req);
    assert.deepEqual(got.clusters, []);
    assert.deepEqual(got.clusterLoadAssignments, []);
    const [status] = got.statuses;
    assert.equal(status.conditions[0].status, "False");
    assert.deepEqual(status.conditions[0].errors.map((e) => [e.type, e.reason, e.message]), [
      ["ServiceError", "ServiceUnresolvedReference", 'unresolved service "auth/authz-canary": service "auth/authz-canary" not found'],
    ]);
  });

  it("answers a malformed request with InvalidArgument naming the object and field", async () => {
    const missingName = { objects: [{ kind: { case: /** @type {const} */ ("service"), value: { metadata: { namespace: "auth" } } } }] };
    const err = await client.translate(missingName).then(
      () => assert.fail("a Service without a name was accepted"),
      (e) => e,
    );
    assert.ok(err instanceof ConnectError, `want a ConnectError, got ${err}`);
    assert.equal(err.code, Code.InvalidArgument);
    assert.equal(err.rawMessage, "objects[0] (Service): metadata.name is required");
    assert.deepEqual(fieldViolations(err), [{
      field: "objects[0].service.metadata.name",
      reason: "REQUIRED",
      description: "objects[0] (Service): metadata.name is required",
    }]);
  });

  it("lists every duplicate in the field violations", async () => {
    const req = await exampleRequest();
    req.objects.push(req.objects[1], req.objects[2]);
    const err = await client.translate(req).then(() => assert.fail("duplicates were accepted"), (e) => e);
    assert.equal(err.code, Code.InvalidArgument);
    assert.deepEqual(fieldViolations(err).map((v) => [v.field, v.reason]), [
      ["objects[5].service.metadata.name", "DUPLICATE"],
      ["objects[6].service.metadata.name", "DUPLICATE"],
    ]);
  });
});

#!/usr/bin/env node
// Translates the objects of examples/ with Tributary, then follows them in a
// Sync session while an endpoint change is applied, printing what changed.
//
//   make run                                   # in one terminal
//   cd client/node && npm ci && cd ../..       # once
//   node examples/node/follow.js 127.0.0.1:8081
//
// Node has no Envoy types at hand, so the client asks for each resource as
// JSON and this script reads the ClusterLoadAssignments from it.

import { readFile } from "node:fs/promises";

import { EndpointSchema, KubernetesObjectSchema, TributaryClient, create, requestFromJson } from "../../client/node/src/index.js";

const address = process.argv[2] ?? "127.0.0.1:8081";
const request = requestFromJson(JSON.parse(await readFile(new URL("../grpc/translate-request.json", import.meta.url), "utf8")));
const client = new TributaryClient(address);

try {
  console.log(`== Translate examples/grpc/translate-request.json (${request.objects.length} objects)`);
  const translation = await client.translate(request);
  for (const r of translation.clusters) {
    console.log(`Cluster ${r.name} version ${r.version}: ${r.json?.type} cluster, connect timeout ${r.json?.connectTimeout}`);
  }
  for (const r of translation.clusterLoadAssignments) {
    console.log(`ClusterLoadAssignment ${r.name} version ${r.version}`);
    for (const line of describeLocalities(r.json)) console.log(`  ${line}`);
  }
  for (const s of translation.statuses) {
    const c = s.conditions[0];
    console.log(`status ${s.namespace}/${s.name}: ${c.type}=${c.status} (${c.message})`);
  }

  console.log("\n== Sync: send every object");
  const session = client.sync({ settings: request.settings });
  session.send({ upserts: request.objects });
  printUpdate(await session.next(), new Map());

  console.log("\n== Sync: the fourth stable pod becomes ready, and the canary gets a second pod");
  const before = new Map([...session.state.clusterLoadAssignments].map(([name, r]) => [name, r.json]));
  session.send({ upserts: request.objects.filter((o) => o.kind.case === "endpointSlice").map(rollOut) });
  printUpdate(await session.next(), before);

  session.close();
  while (await session.next()) {
    // Nothing else was sent: the stream just ends.
  }
} finally {
  client.close();
}

/**
 * rollOut returns a copy of an EndpointSlice object after the change: every
 * endpoint ready, and one more canary pod.
 *
 * @param {import("../../client/node/src/index.js").KubernetesObject} obj
 */
function rollOut(obj) {
  const copy = create(KubernetesObjectSchema, obj);
  if (copy.kind.case !== "endpointSlice") return copy;
  const slice = copy.kind.value;
  for (const e of slice.endpoints) {
    if (e.conditions) e.conditions.ready = true;
  }
  if (slice.metadata?.labels["kubernetes.io/service-name"] === "authz-canary") {
    slice.endpoints.push(create(EndpointSchema, { addresses: ["10.244.1.40"] }));
  }
  return copy;
}

/**
 * printUpdate prints one Sync update; before holds the previous JSON of
 * each ClusterLoadAssignment, to print endpoint changes as + and -.
 *
 * @param {import("../../client/node/src/index.js").SyncUpdate | undefined} update
 * @param {Map<string, any>} before
 */
function printUpdate(update, before) {
  if (update === undefined) throw new Error("the server ended the stream early");
  if (update.kind === "rejected") {
    console.log(`batch ${update.batchId} rejected: ${update.message}`);
    return;
  }
  console.log(`batch ${update.batchId}: ${update.fullState ? "full state" : "delta"}`);
  for (const r of update.clusters) console.log(`  Cluster ${r.name} version ${r.version}`);
  for (const r of update.clusterLoadAssignments) {
    const old = before.get(r.name);
    console.log(`  ClusterLoadAssignment ${r.name} version ${r.version}${old ? " changed:" : ":"}`);
    for (const line of old ? diffLocalities(old, r.json) : describeLocalities(r.json)) console.log(`    ${line}`);
  }
  for (const name of update.removedClusters) console.log(`  Cluster ${name} removed`);
  for (const name of update.removedClusterLoadAssignments) console.log(`  ClusterLoadAssignment ${name} removed`);
  for (const s of update.statuses) console.log(`  status ${s.namespace}/${s.name}: ${s.conditions[0].type}=${s.conditions[0].status}`);
  for (const ref of update.removedStatuses) console.log(`  status ${ref.namespace}/${ref.name} removed`);
}

/**
 * The localities of a ClusterLoadAssignment as a map from sub-zone to its
 * weight and endpoint addresses.
 *
 * @param {any} cla a ClusterLoadAssignment in JSON
 * @returns {Map<string, {weight: number, addresses: string[]}>}
 */
function localities(cla) {
  return new Map((cla?.endpoints ?? []).map((/** @type {any} */ l) => [
    l.locality?.subZone ?? "",
    {
      weight: l.loadBalancingWeight,
      addresses: (l.lbEndpoints ?? []).map((/** @type {any} */ e) => e.endpoint.address.socketAddress.address),
    },
  ]));
}

/** @param {any} cla */
function describeLocalities(cla) {
  return [...localities(cla)].map(([zone, l]) => `${zone} weight ${l.weight}: ${l.addresses.join(", ")}`);
}

/**
 * @param {any} oldCLA
 * @param {any} newCLA
 */
function diffLocalities(oldCLA, newCLA) {
  const was = localities(oldCLA);
  const now = localities(newCLA);
  const lines = [];
  for (const [zone, l] of now) {
    const prev = was.get(zone);
    const added = l.addresses.filter((a) => !prev?.addresses.includes(a));
    const removed = (prev?.addresses ?? []).filter((a) => !l.addresses.includes(a));
    const weight = prev && prev.weight !== l.weight ? `weight ${prev.weight} -> ${l.weight}` : `weight ${l.weight}`;
    if (!prev || added.length > 0 || removed.length > 0 || prev.weight !== l.weight) {
      lines.push(`${zone} ${weight}: ${[...added.map((a) => `+${a}`), ...removed.map((a) => `-${a}`)].join(" ") || "no endpoint change"}`);
    }
  }
  for (const zone of was.keys()) {
    if (!now.has(zone)) lines.push(`${zone} removed`);
  }
  return lines;
}

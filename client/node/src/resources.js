// Envoy resources as a Node caller can use them without Envoy's types: the
// name, type and version the API carries beside each resource, the exact
// bytes, and the JSON the server renders on request (include_json).

/**
 * @typedef {import("../gen/tributary/v1/translation_pb.js").Resource} ResourceMessage
 */

/**
 * One Envoy resource.
 *
 * @typedef {object} EnvoyResource
 * @property {string} name The resource name: Cluster.name, or
 *   ClusterLoadAssignment.cluster_name. A Cluster and the
 *   ClusterLoadAssignment of one ExtensionService share it.
 * @property {string} type The Envoy type's full name, for example
 *   "envoy.config.cluster.v3.Cluster".
 * @property {string} typeUrl The Any type URL, as xDS carries it.
 * @property {string} version A hash of bytes: equal versions mean equal
 *   resources, so a caller can skip pushing what has not changed.
 * @property {Uint8Array} bytes The serialised resource, for callers that do
 *   have Envoy types (or that forward it to Envoy as an Any).
 * @property {Record<string, unknown> | undefined} json The resource in
 *   Envoy's JSON form (lowerCamelCase field names, "@type" in nested Anys),
 *   parsed; undefined unless JSON was asked for.
 */

export const CLUSTER_TYPE = "envoy.config.cluster.v3.Cluster";
export const CLUSTER_LOAD_ASSIGNMENT_TYPE = "envoy.config.endpoint.v3.ClusterLoadAssignment";

const TYPE_URL_PREFIX = "type.googleapis.com/";

/**
 * MalformedResponseError says the server answered something this client
 * cannot trust: a resource of an unexpected type, a name listed twice, a
 * name that disagrees with the resource, or missing JSON that was asked for.
 * It is never the caller's fault.
 */
export class MalformedResponseError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(`malformed response from Tributary: ${message}`);
    this.name = "MalformedResponseError";
  }
}

/**
 * The JSON field that holds each type's resource name: checking it against
 * Resource.name catches a server that lists a resource under the wrong name.
 */
/** @type {Record<string, string>} */
const NAME_FIELD = {
  [CLUSTER_TYPE]: "name",
  [CLUSTER_LOAD_ASSIGNMENT_TYPE]: "clusterName",
};

/**
 * unpackResources converts one list of API Resources, all of type wantType,
 * into EnvoyResources, in the server's order (sorted by name).
 *
 * @param {ResourceMessage[]} list
 * @param {string} wantType
 * @param {boolean} wantJSON whether the request asked for JSON
 * @param {string} where the list's field name, for error messages
 * @returns {EnvoyResource[]}
 */
export function unpackResources(list, wantType, wantJSON, where) {
  const seen = new Set();
  return list.map((r, i) => {
    const at = `${where}[${i}] ${JSON.stringify(r.name)}`;
    if (seen.has(r.name)) {
      throw new MalformedResponseError(`${at} is listed twice`);
    }
    seen.add(r.name);
    const any = r.resource;
    if (any === undefined) {
      throw new MalformedResponseError(`${at} has no resource`);
    }
    if (any.typeUrl !== TYPE_URL_PREFIX + wantType) {
      throw new MalformedResponseError(`${at} has type ${JSON.stringify(any.typeUrl)}, want ${wantType}`);
    }
    /** @type {Record<string, unknown> | undefined} */
    let json;
    if (wantJSON) {
      if (r.json === "") {
        throw new MalformedResponseError(`${at} has no JSON although the request asked for it (include_json); is the server older than include_json?`);
      }
      try {
        json = JSON.parse(r.json);
      } catch (err) {
        throw new MalformedResponseError(`${at} has JSON that does not parse: ${/** @type {Error} */ (err).message}`);
      }
      const nameField = NAME_FIELD[wantType];
      const named = /** @type {Record<string, unknown>} */ (json)[nameField];
      if (named !== r.name) {
        throw new MalformedResponseError(`${at} holds a resource whose ${nameField} is ${JSON.stringify(named)}`);
      }
    }
    return { name: r.name, type: wantType, typeUrl: any.typeUrl, version: r.version, bytes: any.value, json };
  });
}

import { ConnectError } from "@connectrpc/connect";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";

/**
 * One problem in a rejected request: the path of the field at fault (for
 * example "objects[3].metadata.name"), a machine-readable reason (REQUIRED,
 * DUPLICATE, ...) and a human-readable description.
 *
 * @typedef {object} FieldViolation
 * @property {string} field
 * @property {string} reason
 * @property {string} description
 */

const BAD_REQUEST = "google.rpc.BadRequest";

/**
 * fieldViolations lists the field violations of a rejected Translate call:
 * the server answers a malformed request with INVALID_ARGUMENT, a message
 * naming the first problem, and a google.rpc.BadRequest detail listing every
 * problem found. It returns [] for any other error.
 *
 * @param {unknown} err what a Translate call threw
 * @returns {FieldViolation[]}
 */
export function fieldViolations(err) {
  if (!(err instanceof ConnectError)) {
    return [];
  }
  /** @type {FieldViolation[]} */
  const out = [];
  for (const detail of err.details) {
    // Incoming details carry the type name and bytes; outgoing ones (only
    // in errors built locally) are not from the server.
    if ("type" in detail && detail.type === BAD_REQUEST && "value" in detail) {
      out.push(...decodeBadRequest(/** @type {Uint8Array} */ (detail.value)));
    }
  }
  return out;
}

// google.rpc.BadRequest is decoded by hand: its two small messages are all
// this client needs of googleapis, and shipping their generated code would
// mean vendoring the googleapis protos.
//
//   message BadRequest { repeated FieldViolation field_violations = 1; }
//   message FieldViolation { string field = 1; string description = 2; string reason = 3; }

/**
 * @param {Uint8Array} bytes
 * @returns {FieldViolation[]}
 */
function decodeBadRequest(bytes) {
  const r = new BinaryReader(bytes);
  /** @type {FieldViolation[]} */
  const out = [];
  while (r.pos < r.len) {
    const [field, wireType] = r.tag();
    if (field === 1 && wireType === WireType.LengthDelimited) {
      out.push(decodeFieldViolation(r.bytes()));
    } else {
      r.skip(wireType, field);
    }
  }
  return out;
}

/**
 * @param {Uint8Array} bytes
 * @returns {FieldViolation}
 */
function decodeFieldViolation(bytes) {
  const r = new BinaryReader(bytes);
  const v = { field: "", reason: "", description: "" };
  while (r.pos < r.len) {
    const [field, wireType] = r.tag();
    if (wireType !== WireType.LengthDelimited) {
      r.skip(wireType, field);
    } else if (field === 1) {
      v.field = r.string();
    } else if (field === 2) {
      v.description = r.string();
    } else if (field === 3) {
      v.reason = r.string();
    } else {
      r.skip(wireType, field);
    }
  }
  return v;
}

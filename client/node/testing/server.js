// Starts a real `tributary serve` for the tests: the binary named by
// TRIBUTARY_BIN (make node-test sets it to bin/tributary), or one built from
// this checkout with `go build`. Anything missing fails the test run: a
// client test that skips when the server is absent proves nothing.

import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

/** The repository root: client/node/testing/../../.. */
export const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

/**
 * tributaryBinary returns the path of a tributary binary, building one into
 * a temporary directory when TRIBUTARY_BIN is unset. cleanup removes what
 * it built.
 *
 * @returns {Promise<{path: string, cleanup: () => Promise<void>}>}
 */
export async function tributaryBinary() {
  const fromEnv = process.env.TRIBUTARY_BIN;
  if (fromEnv) {
    if (!existsSync(fromEnv)) {
      throw new Error(`TRIBUTARY_BIN=${fromEnv} does not exist: run 'make build' first`);
    }
    return { path: fromEnv, cleanup: async () => {} };
  }
  const dir = await mkdtemp(join(tmpdir(), "tributary-node-test-"));
  const path = join(dir, "tributary");
  try {
    await promisify(execFile)("go", ["build", "-o", path, "./cmd/tributary"], { cwd: repoRoot });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    const e = /** @type {Error & {stderr?: string}} */ (err);
    throw new Error(`cannot build tributary (set TRIBUTARY_BIN to use a built one): ${e.stderr || e.message}`);
  }
  return { path, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * A running `tributary serve`.
 *
 * @typedef {object} RunningServer
 * @property {string} address the host:port it listens on
 * @property {string} binary the binary's path, for other subcommands
 * @property {() => string} log what it has written to standard error
 * @property {() => Promise<void>} stop SIGTERM, then wait for it to exit
 */

/**
 * startServer starts `tributary serve --address 127.0.0.1:0` and reads the
 * port it picked from its first log line ("serving gRPC" address=...).
 *
 * @returns {Promise<RunningServer>}
 */
export async function startServer() {
  const binary = await tributaryBinary();
  const child = spawn(binary.path, ["serve", "--address", "127.0.0.1:0"], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  const lines = createInterface({ input: child.stderr });
  const exited = once(child, "exit");

  const address = await new Promise((resolve, reject) => {
    lines.on("line", (line) => {
      log += line + "\n";
      const m = /msg="serving gRPC" address=(\S+)/.exec(line);
      if (m) resolve(m[1]);
    });
    child.on("error", reject);
    exited.then(([code, signal]) => reject(new Error(`tributary serve exited (code ${code}, signal ${signal}) before serving:\n${log}`)));
  });

  return {
    address,
    binary: binary.path,
    log: () => log,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
      }
      await exited;
      await binary.cleanup();
    },
  };
}

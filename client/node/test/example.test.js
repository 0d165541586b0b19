// examples/node/follow.js against a real `tributary serve`: its output must
// equal examples/node/follow.golden, so the example keeps working and its
// output in the repository stays true. UPDATE_GOLDEN=1 rewrites the file.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { promisify } from "node:util";

import { repoRoot, startServer } from "../testing/server.js";

/** @type {import("../testing/server.js").RunningServer} */
let server;
before(async () => { server = await startServer(); });
after(async () => { await server?.stop(); });

it("examples/node/follow.js prints the translation and the endpoint change", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ["examples/node/follow.js", server.address], { cwd: repoRoot });
  const golden = join(repoRoot, "examples/node/follow.golden");
  if (process.env.UPDATE_GOLDEN) {
    await writeFile(golden, stdout);
  }
  assert.equal(stdout, await readFile(golden, "utf8"));
});

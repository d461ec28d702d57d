// `okfit serve` on a free loopback port, for the tests that reach it over
// HTTP: started, waited for until /healthz answers, killed by the caller.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:net";

/** A port nothing listens on now. */
export const freePort = () =>
  new Promise((ok, fail) => {
    const s = createServer();
    s.on("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const p = s.address().port;
      s.close(() => ok(p));
    });
  });

/**
 * Starts `okfit serve --data DATA --listen 127.0.0.1:PORT` with `env`;
 * resolves once it answers `/healthz`, with `{ child, port, stderr() }`.
 */
export async function serve(okfitBin, data, env) {
  const port = await freePort();
  const child = spawn(okfitBin, ["serve", "--data", data, "--listen", `127.0.0.1:${port}`], {
    stdio: ["ignore", "ignore", "pipe"],
    env,
  });
  let err = "";
  child.stderr.on("data", (d) => (err += d.toString()));
  const deadline = Date.now() + 20000;
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    assert.ok(Date.now() < deadline, `okfit serve did not start: ${err}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, port, stderr: () => err };
}

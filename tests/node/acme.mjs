// The two concepts the store tests write to tenant `acme`, and the manifest
// they make: one set of texts for every client that checks them.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

export const ORDERS = "---\ntype: BigQuery Table\ngrain: order_id\ndescription: One row per completed customer order.\n---\n# Orders\n\nJoins [customers](customers.md).\n\n## Schema\n\norder_id, customer_id\n";
export const CUSTOMERS = "---\ntype: BigQuery Table\nstatus: deprecated\ndescription: Registered customers, including churned.\n---\n# Customers\n\nEvery customer who ever signed up.\n";

/** The manifest of tenant `acme` once both concepts are in bundle `sales`. */
export const ACME_MANIFEST = [
  "# tenant: acme",
  "# bundles: sales",
  "id\tbundle\tkind\tstatus\tgrain\tsummary\tlinks",
  "customers\tsales\tbigquery_table\tdeprecated\t-\tRegistered customers, including churned.\t-",
  "orders\tsales\tbigquery_table\t-\torder_id\tOne row per completed customer order.\tcustomers",
  "",
].join("\n");

/**
 * Resolves once `read()` holds a whole line (or after `ms`): stderr and
 * stdout are separate pipes, so the server's first stderr line may reach
 * us after its answer to `initialize` does.
 */
export async function firstLine(read, ms = 5000) {
  const until = Date.now() + ms;
  while (!read().includes("\n") && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Starts `command args` over stdio with the official SDK's client named
 * `name`; resolves to `{ client, stderr() }` once initialized and its
 * first stderr line has arrived.
 */
export async function connectStdio(command, args, env, name) {
  const transport = new StdioClientTransport({ command, args, env, stderr: "pipe" });
  let err = "";
  transport.stderr?.on("data", (d) => (err += d.toString()));
  const client = new Client({ name, version: "0.0.0" });
  await client.connect(transport);
  await firstLine(() => err);
  return { client, stderr: () => err };
}

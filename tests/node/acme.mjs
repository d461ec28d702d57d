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
 * Starts `command args` over stdio with the official SDK's client named
 * `name`; resolves to `{ client, stderr() }` once initialized.
 */
export async function connectStdio(command, args, env, name) {
  const transport = new StdioClientTransport({ command, args, env, stderr: "pipe" });
  let err = "";
  transport.stderr?.on("data", (d) => (err += d.toString()));
  const client = new Client({ name, version: "0.0.0" });
  await client.connect(transport);
  return { client, stderr: () => err };
}

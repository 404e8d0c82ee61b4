// MCP resource subscriptions with the official TypeScript SDK client, driven by tests/events/test_ts_subscribe.py.
// Usage: node subscribe.mjs http <server>/mcp         (the key in SOCIALPUB_API_KEY, sent as a Bearer token)
//        node subscribe.mjs stdio <command> [args...]  (spawns `socialpub mcp`; it reads SOCIALPUB_API_KEY itself)
// and, once it says "connected", one JSON line on stdin: the create_schedule arguments.
//
// It creates the Schedule, sends resources/subscribe for the resource_link the result names, says "subscribed"
// and waits for notifications/resources/updated while the test's worker publishes; after each update it reads
// the resource, and ends when the Schedule's state is final. No update within SUBSCRIBE_TIMEOUT_MS (default 15 s)
// of the test's "worker_done": it prints an error event and exits 1, so a server that stops announcing fails.
// Output: JSON lines {"event": ...} on stdout.
import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const FINAL = new Set(['published', 'partially_published', 'failed', 'cancelled']);
const [mode, target, ...rest] = process.argv.slice(2);
const emit = (event, fields = {}) => process.stdout.write(JSON.stringify({ event, ...fields }) + '\n');
const fail = (message) => { emit('error', { message: String(message) }); process.exit(1); };
setTimeout(() => fail('timed out after 300 s'), 300_000).unref();

const key = process.env.SOCIALPUB_API_KEY;
if (!key) fail('SOCIALPUB_API_KEY is not set');
let transport;
if (mode === 'http') {
  transport = new StreamableHTTPClientTransport(new URL(target),
    { requestInit: { headers: { authorization: `Bearer ${key}` } } });
} else if (mode === 'stdio') {
  // The SDK passes only a safe subset of the environment by default; the server needs its home and key.
  transport = new StdioClientTransport({ command: target, args: rest, env: { ...process.env }, stderr: 'inherit' });
} else {
  fail(`usage: subscribe.mjs http <url> | stdio <command> [args...]; got ${mode}`);
}

const client = new Client({ name: 'socialpub-ts-subscribe-test', version: '1.0.0' });
const updates = [];
let wake = () => {};
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
  updates.push(n.params.uri);
  wake();
});
await client.connect(transport);
const subscribe = client.getServerCapabilities()?.resources?.subscribe;
if (subscribe !== true) fail(`the server does not declare resources.subscribe: ${JSON.stringify(client.getServerCapabilities())}`);

// Warm (the server loads its catalogue on the first call), then the test sends the arguments.
const tools = await client.listTools();
if (!tools.tools.some((t) => t.name === 'create_schedule')) fail('create_schedule is not offered');
const context = await client.callTool({ name: 'get_context', arguments: {} });
if (context.isError) fail(`get_context: ${JSON.stringify(context.structuredContent ?? context.content)}`);
emit('connected');
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const first = await lines.next();
if (first.done) fail('expected the create_schedule arguments on stdin');
// scheduled_at is set here, just before the call, LEAD_MS ahead (a past time is refused), so that it is due soon.
const leadMs = Number(process.env.SUBSCRIBE_LEAD_MS || 5_000);
const args = { ...JSON.parse(first.value), scheduled_at: new Date(Date.now() + leadMs).toISOString() };

const started = Date.now();
const created = await client.callTool({ name: 'create_schedule', arguments: args });
if (created.isError) fail(`create_schedule: ${JSON.stringify(created.structuredContent ?? created.content)}`);
const links = created.content.filter((c) => c.type === 'resource_link');
if (links.length !== 1) fail(`expected one resource_link, got ${JSON.stringify(created.content)}`);
const uri = links[0].uri;
emit('created', { uri, schedule_id: created.structuredContent?.data?.schedule?.id, ms: Date.now() - started,
                  scheduled_at: args.scheduled_at });

await client.subscribeResource({ uri });
emit('subscribed', { uri });

// The test runs the worker, then says "worker_done"; from then the server has SUBSCRIBE_TIMEOUT_MS to announce it.
const waitMs = Number(process.env.SUBSCRIBE_TIMEOUT_MS || 15_000);
const workerDone = lines.next().then(({ value, done }) => {
  if (done || value.trim() !== 'worker_done') fail(`expected "worker_done" on stdin, got ${done ? 'EOF' : value}`);
  setTimeout(() => fail(`no final state announced within ${waitMs} ms of the worker's pass`), waitMs).unref();
});

const read = async () => {
  const result = await client.readResource({ uri });
  const data = JSON.parse(result.contents[0].text);
  return data.schedule ?? data;  // the get_schedule view
};
let schedule;
let seen = 0;
for (;;) {
  if (updates.length === seen) await new Promise((resolve) => { wake = resolve; });
  const fresh = updates.slice(seen);
  seen = updates.length;
  if (!fresh.includes(uri)) continue;
  emit('updated', { uri, count: updates.filter((u) => u === uri).length });
  schedule = await read();
  if (FINAL.has(schedule.status)) break;
}
emit('read', { status: schedule.status, id: schedule.id, updates: updates.filter((u) => u === uri).length });
await workerDone;  // the update may come before the worker process has exited; the test still says so
await client.unsubscribeResource({ uri });
await client.close();
process.exit(0);

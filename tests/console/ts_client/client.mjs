// MCP authorization with the official TypeScript SDK client's OAuth support, driven by
// tests/console/test_ts_client.py. Usage: node client.mjs <server>/mcp
//
// The SDK does discovery (RFC 9728 → RFC 8414), dynamic registration (RFC 7591) and code + PKCE; this script
// only supplies the OAuthClientProvider (in memory) and a loopback redirect target. It talks to the test as
// JSON lines: it prints {"event": ...} on stdout and, where the test must act (the browser consents, the user
// revokes the grant in the console), waits for the loopback callback or for a line on stdin.
import http from 'node:http';
import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const serverUrl = new URL(process.argv[2]);
const emit = (event, fields = {}) => process.stdout.write(JSON.stringify({ event, ...fields }) + '\n');
const fail = (message) => { emit('error', { message: String(message) }); process.exit(1); };
setTimeout(() => fail('timed out after 120 s'), 120_000).unref();

// The loopback redirect target (RFC 8252): the browser lands here with ?code=…&state=…
let gotCode;
const codeArrived = new Promise((resolve) => { gotCode = resolve; });
const callback = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1');
  res.writeHead(200, { 'content-type': 'text/plain' }).end('Authorized; you can close this page.');
  if (url.pathname === '/callback') gotCode(url.searchParams);
});
await new Promise((resolve) => callback.listen(0, '127.0.0.1', resolve));
const redirectUrl = `http://127.0.0.1:${callback.address().port}/callback`;

const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const waitFor = async (word) => {
  const { value, done } = await lines.next();
  if (done || value.trim() !== word) fail(`expected "${word}" on stdin, got ${done ? 'EOF' : value}`);
};

class MemoryProvider {
  constructor() { this.store = {}; this.redirects = 0; }
  get redirectUrl() { return redirectUrl; }
  get clientMetadata() {
    return { client_name: 'TypeScript SDK test client', redirect_uris: [redirectUrl],
             grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
             token_endpoint_auth_method: 'none' };
  }
  state() { return 'ts-state-1'; }
  clientInformation() { return this.store.client; }
  saveClientInformation(info) { this.store.client = info; }
  tokens() { return this.store.tokens; }
  saveTokens(tokens) { this.store.tokens = tokens; }
  saveCodeVerifier(v) { this.store.verifier = v; }
  codeVerifier() { return this.store.verifier; }
  discoveryState() { return this.store.discovery; }
  saveDiscoveryState(s) { this.store.discovery = s; }
  invalidateCredentials(scope) {
    if (scope === 'all' || scope === 'tokens') delete this.store.tokens;
    if (scope === 'all' || scope === 'client') delete this.store.client;
  }
  redirectToAuthorization(url) {
    this.redirects += 1;
    if (this.redirects === 1) emit('authorize', { url: url.href });
  }
}

const provider = new MemoryProvider();
const connect = async () => {
  const client = new Client({ name: 'socialpub-ts-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(serverUrl, { authProvider: provider }));
  return client;
};
const rawStatus = async (token) => {
  const resp = await fetch(serverUrl, {
    method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json',
               accept: 'application/json, text/event-stream' } });
  return { status: resp.status, wwwAuthenticate: resp.headers.get('www-authenticate') };
};
const callTool = async (client) => {
  const result = await client.callTool({ name: 'get_context', arguments: {} });
  if (result.isError || !result.structuredContent) fail(`get_context: ${JSON.stringify(result)}`);
  return result.structuredContent;  // the envelope (the SDK validated it against the tool's outputSchema)
};

// 1. No token: the SDK discovers, registers, and hands the authorization URL to the "browser" (the test).
try {
  await connect();
  fail('connected without authorization');
} catch (e) {
  if (!(e instanceof UnauthorizedError)) fail(`expected UnauthorizedError, got ${e}`);
}
emit('registered', { client_id: provider.store.client?.client_id,
                     authorization_server: provider.store.discovery?.authorizationServerUrl,
                     resource: provider.store.discovery?.resourceMetadata?.resource });
const params = await codeArrived;
if (params.get('state') !== 'ts-state-1') fail(`state ${params.get('state')}`);
if (!params.get('code')) fail(`no code: ${params}`);

// 2. The code for tokens (PKCE verifier from the provider), then a tool call.
const transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider });
await transport.finishAuth(params.get('code'));
const first = { ...provider.store.tokens };
let client = await connect();
const tools = await client.listTools();
const context = await callTool(client);
emit('tool_call', { token_type: first.token_type, expires_in: first.expires_in, scope: first.scope,
                    has_refresh_token: Boolean(first.refresh_token), tools: tools.tools.length,
                    success: context.success });
await client.close();

// 3. Refresh through the SDK (auth() with a stored refresh token); the old access token stops working.
const outcome = await auth(provider, { serverUrl });
const second = provider.store.tokens;
client = await connect();
const again = await callTool(client);
await client.close();
emit('refreshed', { outcome, rotated: second.access_token !== first.access_token
                    && second.refresh_token !== first.refresh_token,
                    old: await rawStatus(first.access_token), success: again.success });

// 4. The user revokes the grant in the console; the next request is 401 and the SDK must authorize anew.
emit('revoke_now');
await waitFor('revoked');
const after = await rawStatus(second.access_token);
let sdkError = null;
try {
  await connect();
} catch (e) {
  sdkError = e.constructor.name;
}
emit('revoked', { after, sdk_error: sdkError, asked_again: provider.redirects > 1 });
callback.close();
process.exit(0);

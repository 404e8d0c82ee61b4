// Starts a PLC directory and a Bluesky PDS for socialpub's tests, both on 127.0.0.1 only, and prints one JSON
// line {"pds": url, "plc": url} when both answer. install.sh copies this file next to the installed packages.
//
// Environment: SOCIALPUB_PDS_PORT, SOCIALPUB_PLC_PORT, SOCIALPUB_PDS_DATA (an empty folder, removed by the caller),
// SOCIALPUB_PDS_ADMIN_PASSWORD; optionally SOCIALPUB_PDS_APPVIEW_URL, the local URL the PDS takes for the Bluesky
// AppView (did:web:api.bsky.app), so a test decides what proxied app.bsky.* reads meet. Everything the PDS could reach outside (app view, moderation and report
// services, crawlers, email, Redis, entryway) is left unset, which the PDS reads as "off"; the PLC directory is
// the local one. The one lookup it can still make outside is resolving a handle that is not its own (DNS TXT
// and https://<handle>/.well-known/atproto-did), so tests mention only `.test` handles, which it answers from its
// own database. SIGTERM / SIGINT stop both servers.
import crypto from 'node:crypto'
import net from 'node:net'
import path from 'node:path'

import { Secp256k1Keypair } from '@atproto/crypto'
import { PDS, envToCfg, envToSecrets, readEnv } from '@atproto/pds'
import { Database, PlcServer } from '@did-plc/server'

const required = (name) => {
  const value = process.env[name]
  if (!value) {
    console.error(`start.mjs: ${name} is required`)
    process.exit(2)
  }
  return value
}

const pdsPort = Number(required('SOCIALPUB_PDS_PORT'))
const plcPort = Number(required('SOCIALPUB_PLC_PORT'))
const data = required('SOCIALPUB_PDS_DATA')
const adminPassword = required('SOCIALPUB_PDS_ADMIN_PASSWORD')

// Both servers call listen(port) without a host, which binds every interface; a test server binds loopback only.
const listen = net.Server.prototype.listen
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' || (typeof args[0] === 'string' && /^\d+$/.test(args[0]))) {
    const [port, ...rest] = args
    const hostless = typeof rest[0] !== 'string'
    return listen.call(this, Number(port), ...(hostless ? ['127.0.0.1', ...rest] : rest))
  }
  if (args[0] && typeof args[0] === 'object' && args[0].port !== undefined && !args[0].host) {
    return listen.call(this, { ...args[0], host: '127.0.0.1' }, ...args.slice(1))
  }
  return listen.apply(this, args)
}

const plc = PlcServer.create({ db: Database.mock(), port: plcPort })
await plc.start()

const rotationKey = await Secp256k1Keypair.create({ exportable: true })
const env = {
  PDS_HOSTNAME: 'localhost', // handles are <name>.test
  PDS_PORT: String(pdsPort),
  PDS_DATA_DIRECTORY: data,
  PDS_BLOBSTORE_DISK_LOCATION: path.join(data, 'blobs'),
  PDS_DID_PLC_URL: `http://127.0.0.1:${plcPort}`,
  PDS_DEV_MODE: 'true',
  PDS_INVITE_REQUIRED: 'false',
  PDS_RATE_LIMITS_ENABLED: 'false',
  PDS_JWT_SECRET: crypto.randomBytes(32).toString('hex'),
  PDS_ADMIN_PASSWORD: adminPassword,
  PDS_PLC_ROTATION_KEY_K256_PRIVATE_KEY_HEX: Buffer.from(await rotationKey.export()).toString('hex'),
  PDS_BLOB_UPLOAD_LIMIT: String(5 * 1024 * 1024),
  PDS_CRAWLERS: '',
  PDS_ID_RESOLVER_TIMEOUT: '2000',
}
if (process.env.SOCIALPUB_PDS_APPVIEW_URL) {
  env.PDS_BSKY_APP_VIEW_URL = process.env.SOCIALPUB_PDS_APPVIEW_URL
  env.PDS_BSKY_APP_VIEW_DID = 'did:web:api.bsky.app'
}
for (const key of Object.keys(process.env)) {
  if (key.startsWith('PDS_')) delete process.env[key] // only the settings above, whatever the caller's environment
}
Object.assign(process.env, env)

const pds = await PDS.create(envToCfg(readEnv()), envToSecrets(readEnv()))
await pds.start()
console.log(JSON.stringify({ pds: `http://127.0.0.1:${pdsPort}`, plc: `http://127.0.0.1:${plcPort}` }))

let stopping = false
const stop = async () => {
  if (stopping) return
  stopping = true
  try {
    await pds.destroy()
    await plc.destroy()
  } finally {
    process.exit(0)
  }
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)

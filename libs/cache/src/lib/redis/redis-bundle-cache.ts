import { createHash } from 'node:crypto';
import { createClient, RESP_TYPES } from 'redis';
import type { RedisClientOptions } from 'redis';
import type { Blob, BundleCache, NodeBundleRecord, NodeHashEntry } from '../bundle-cache';
import { digestsText, splitDigests } from '../record-digests';

export interface RedisBundleCacheOptions {
  readonly url: string;
  /** Prefix of every key (default `policygen:`), so deployments or tests can share a server. */
  readonly prefix?: string;
}

/*
 * Blob references: `blob-refs` counts, per digest, the node records naming it (records marked
 * `counted`; older ones are left out, so their blobs are never collected); `blob-free` holds, per
 * digest, when it was last put or last lost its last reference. The collector deletes what has sat
 * in `blob-free` past the grace period and still has no reference. A record names its blobs by
 * `digests`, their 64-character digests one after the other (cut in Lua without decoding JSON); a
 * record written before it by `files`, its file list as JSON, read as it is until replaced.
 */
const REFERENCES = `
local function digests(list, manifest)
  local set = {}
  if list then for at = 1, #list, 64 do set[string.sub(list, at, at + 63)] = true end end
  if manifest and manifest ~= '' then set[manifest] = true end
  return set
end
local function listed(files, manifest)
  local set = {}
  for _, file in ipairs(cjson.decode(files)) do set[file.sha256] = true end
  if manifest and manifest ~= '' then set[manifest] = true end
  return set
end
local function held(key)
  if redis.call('HGET', key, 'counted') ~= '1' then return {} end
  local fields = redis.call('HMGET', key, 'digests', 'manifestSha256', 'files')
  if fields[1] then return digests(fields[1], fields[2]) end
  if fields[3] then return listed(fields[3], fields[2]) end
  return digests(nil, fields[2])
end
local function stale(key, revision)
  local held = redis.call('HGET', key, 'revision')
  return held and tonumber(held) > tonumber(revision)
end
local function release(refs, free, now, before, after)
  for digest in pairs(after) do
    if not before[digest] then redis.call('HINCRBY', refs, digest, 1) end
  end
  for digest in pairs(before) do
    if not after[digest] and redis.call('HINCRBY', refs, digest, -1) <= 0 then
      redis.call('ZADD', free, now, digest)
    end
  end
end
`;

/*
 * One call records or removes a whole batch of nodes and answers once: called a node at a time in
 * a pipeline, Redis answered a slice's records in as many pieces as it read the request in (16 KiB
 * at a time), and each piece woke the generator. KEYS: the index, blob-refs, blob-free, then each
 * node's key; ARGV: the time, then each node's arguments. A node's record moves forward only; a
 * removal leaves a tombstone with its revision for the same reason.
 */
const RECORD = `${REFERENCES}
local results = {}
for index = 4, #KEYS do
  local key, at = KEYS[index], 2 + (index - 4) * 6
  if stale(key, ARGV[at]) then
    results[#results + 1] = 0
  else
    release(KEYS[2], KEYS[3], ARGV[1], held(key), digests(ARGV[at + 3], ARGV[at + 4]))
    redis.call('DEL', key)
    redis.call('HSET', key, 'revision', ARGV[at], 'hash', ARGV[at + 1], 'committedAt', ARGV[at + 2], 'digests', ARGV[at + 3], 'manifestSha256', ARGV[at + 4], 'counted', '1')
    redis.call('HSET', KEYS[1], ARGV[at + 5], ARGV[at] .. ' ' .. ARGV[at + 1])
    results[#results + 1] = 1
  end
end
return results`;

const REMOVE = `${REFERENCES}
local results = {}
for index = 4, #KEYS do
  local key, at = KEYS[index], 2 + (index - 4) * 2
  if stale(key, ARGV[at]) then
    results[#results + 1] = 0
  else
    release(KEYS[2], KEYS[3], ARGV[1], held(key), {})
    redis.call('DEL', key)
    redis.call('HSET', key, 'revision', ARGV[at], 'deleted', '1')
    redis.call('HDEL', KEYS[1], ARGV[at + 1])
    results[#results + 1] = 1
  end
end
return results`;

// KEYS: blob-free, then each blob's key; ARGV: the time, each digest, then each content. A put is a
// use: the blob stays a grace period even before a record names it. One answer for the batch.
const PUT = `
local stored, count = 0, #KEYS - 1
for index = 2, #KEYS do
  if redis.call('SET', KEYS[index], ARGV[count + index], 'NX') then stored = stored + 1 end
  redis.call('ZADD', KEYS[1], ARGV[1], ARGV[index])
end
return stored`;

// KEYS: blob-refs, blob-free, then each candidate's blob key; ARGV: the cut-off, then each digest.
const COLLECT = `
local collected = 0
for index = 2, #ARGV do
  local digest = ARGV[index]
  local since = redis.call('ZSCORE', KEYS[2], digest)
  if since and tonumber(since) < tonumber(ARGV[1]) then
    redis.call('ZREM', KEYS[2], digest)
    if tonumber(redis.call('HGET', KEYS[1], digest) or '0') <= 0 then
      redis.call('HDEL', KEYS[1], digest)
      collected = collected + redis.call('DEL', KEYS[index + 1])
    end
  end
end
return collected`;

interface Script {
  readonly text: string;
  readonly sha1: string;
}

function script(text: string): Script {
  return { text, sha1: createHash('sha1').update(text).digest('hex') };
}

const PUT_SCRIPT = script(PUT);
const RECORD_SCRIPT = script(RECORD);
const REMOVE_SCRIPT = script(REMOVE);

function isNoScript(reply: unknown): boolean {
  return reply instanceof Error && reply.message.startsWith('NOSCRIPT');
}

/** Candidates looked at per call of the collecting script. */
const COLLECT_BATCH = 500;

type Client = ReturnType<typeof createClient>;

/**
 * How much the client may hand the socket before waiting for it to drain. node-redis stops
 * writing whenever the socket's buffer passes its high-water mark and goes on at the next
 * 'drain': at Node's default of 16 KiB, a slice's commands (a script call of up to ~180 KB for
 * its records, as much for its blobs) went out in a write, and a turn of the event loop, per
 * 16 KiB.
 */
const PIPELINE_WRITE_BYTES = 4 * 1024 * 1024;

// `net.Socket` takes the stream's options; node-redis passes its socket options to it as they are.
const PIPELINE_SOCKET = { writableHighWaterMark: PIPELINE_WRITE_BYTES } as RedisClientOptions['socket'] &
  object;

/** The bundle cache on Redis: `blob:<sha256>` strings, a hash per node, and an index of nodes. */
export class RedisBundleCache implements BundleCache {
  private readonly prefix: string;

  private constructor(
    private readonly client: Client,
    prefix: string,
  ) {
    this.prefix = prefix;
  }

  static async connect(options: RedisBundleCacheOptions): Promise<RedisBundleCache> {
    const client = createClient({ url: options.url, socket: PIPELINE_SOCKET });
    client.on('error', () => {
      // Reconnection is the client's job; a command issued meanwhile rejects and its caller retries.
    });
    await client.connect();
    return new RedisBundleCache(client, options.prefix ?? 'policygen:');
  }

  async putBlobs(blobs: readonly Blob[]): Promise<number> {
    if (blobs.length === 0) return 0;
    return (await this.runScript(PUT_SCRIPT, {
      keys: [this.freeKey(), ...blobs.map((blob) => this.blobKey(blob.sha256))],
      // As bytes: node-redis writes a Buffer as it is, where it would copy a string into the
      // command's text (a second copy of the content on the heap, alive until the socket takes it).
      arguments: [
        String(Date.now()),
        ...blobs.map((blob) => blob.sha256),
        ...blobs.map((blob) => (typeof blob.content === 'string' ? Buffer.from(blob.content) : blob.content)),
      ],
    })) as number;
  }

  getBlob(sha256: string): Promise<string | null> {
    return this.client.get(this.blobKey(sha256));
  }

  async getBlobs(sha256s: readonly string[]): Promise<(Buffer | null)[]> {
    if (sha256s.length === 0) return [];
    return this.client
      .withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer })
      .mGet(sha256s.map((sha256) => this.blobKey(sha256)));
  }

  async recordBundles(bundles: readonly NodeBundleRecord[]): Promise<boolean[]> {
    if (bundles.length === 0) return [];
    const replies = (await this.runScript(RECORD_SCRIPT, {
      keys: [
        this.indexKey(),
        this.refsKey(),
        this.freeKey(),
        ...bundles.map((bundle) => this.nodeKey(bundle.nodeId)),
      ],
      arguments: [
        String(Date.now()),
        ...bundles.flatMap((bundle) => [
          String(bundle.revision),
          bundle.hash,
          bundle.committedAt,
          digestsText(bundle),
          bundle.manifestSha256,
          bundle.nodeId,
        ]),
      ],
    })) as unknown[];
    return replies.map((reply: unknown) => reply === 1);
  }

  async removeNodes(nodes: readonly { nodeId: string; revision: number }[]): Promise<boolean[]> {
    if (nodes.length === 0) return [];
    const replies = (await this.runScript(REMOVE_SCRIPT, {
      keys: [
        this.indexKey(),
        this.refsKey(),
        this.freeKey(),
        ...nodes.map((node) => this.nodeKey(node.nodeId)),
      ],
      arguments: [String(Date.now()), ...nodes.flatMap((node) => [String(node.revision), node.nodeId])],
    })) as unknown[];
    return replies.map((reply: unknown) => reply === 1);
  }

  async nodeBundle(nodeId: string): Promise<NodeBundleRecord | null> {
    const fields = await this.client.hGetAll(this.nodeKey(nodeId));
    if (!fields['hash'] || fields['deleted']) return null;
    return {
      nodeId,
      hash: fields['hash'],
      revision: Number(fields['revision']),
      committedAt: fields['committedAt'] ?? '',
      digests:
        fields['digests'] === undefined
          ? (JSON.parse(fields['files'] ?? '[]') as { sha256: string }[]).map((file) => file.sha256)
          : splitDigests(fields['digests']),
      manifestSha256: fields['manifestSha256'] ?? '',
    };
  }

  async nodeHashes(nodeIds?: readonly string[]): Promise<Map<string, NodeHashEntry>> {
    let entries: [string, string | null][];
    if (nodeIds === undefined) entries = Object.entries(await this.client.hGetAll(this.indexKey()));
    else if (nodeIds.length === 0) entries = [];
    else {
      const values = await this.client.hmGet(this.indexKey(), [...nodeIds]);
      entries = nodeIds.map((nodeId, index) => [nodeId, values[index] ?? null]);
    }
    const hashes = new Map<string, NodeHashEntry>();
    for (const [nodeId, entry] of entries) {
      if (entry === null) continue;
      const space = entry.indexOf(' ');
      hashes.set(nodeId, { revision: Number(entry.slice(0, space)), hash: entry.slice(space + 1) });
    }
    return hashes;
  }

  async collectBlobs(options: {
    readonly unreferencedBefore: number;
    readonly limit?: number;
  }): Promise<number> {
    const limit = options.limit ?? 10_000;
    let collected = 0;
    while (collected < limit) {
      const candidates = await this.client.zRangeByScore(
        this.freeKey(),
        '-inf',
        `(${options.unreferencedBefore}`,
        { LIMIT: { offset: 0, count: Math.min(COLLECT_BATCH, limit - collected) } },
      );
      if (candidates.length === 0) break;
      collected += Number(
        await this.client.eval(COLLECT, {
          keys: [this.refsKey(), this.freeKey(), ...candidates.map((digest) => this.blobKey(digest))],
          arguments: [String(options.unreferencedBefore), ...candidates],
        }),
      );
    }
    return collected;
  }

  /**
   * Calls a script by its digest (EVALSHA): its text goes to Redis once, not with every call. A
   * server that does not know it (restarted, flushed) is given it and the call made again.
   */
  private async runScript(
    script: Script,
    call: { readonly keys: string[]; readonly arguments: (string | Buffer)[] },
  ): Promise<unknown> {
    const send = (): Promise<unknown> => this.client.evalSha(script.sha1, call);
    try {
      return await send();
    } catch (error) {
      if (!isNoScript(error)) throw error;
      await this.client.scriptLoad(script.text);
      return send();
    }
  }

  async claimFreshness(): Promise<boolean> {
    const reply = await this.client.set(this.key('filled'), new Date().toISOString(), { NX: true });
    return reply === 'OK';
  }

  async ping(): Promise<void> {
    await this.client.ping();
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  private key(name: string): string {
    return `${this.prefix}${name}`;
  }

  private blobKey(sha256: string): string {
    return this.key(`blob:${sha256}`);
  }

  private nodeKey(nodeId: string): string {
    return this.key(`node:${nodeId}`);
  }

  private indexKey(): string {
    return this.key('nodes');
  }

  private refsKey(): string {
    return this.key('blob-refs');
  }

  private freeKey(): string {
    return this.key('blob-free');
  }
}

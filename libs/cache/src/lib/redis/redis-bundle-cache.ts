import { createClient } from 'redis';
import type { Blob, BundleCache, NodeBundleRecord, NodeHashEntry } from '../bundle-cache';

export interface RedisBundleCacheOptions {
  readonly url: string;
  /** Prefix of every key (default `policygen:`), so deployments or tests can share a server. */
  readonly prefix?: string;
}

// A node's record moves forward only; a removal leaves a tombstone with its revision for the same reason.
const RECORD = `
local held = redis.call('HGET', KEYS[1], 'revision')
if held and tonumber(held) > tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'revision', ARGV[1], 'hash', ARGV[2], 'committedAt', ARGV[3], 'files', ARGV[4], 'manifestSha256', ARGV[5])
redis.call('HSET', KEYS[2], ARGV[6], ARGV[1] .. ' ' .. ARGV[2])
return 1`;

const REMOVE = `
local held = redis.call('HGET', KEYS[1], 'revision')
if held and tonumber(held) > tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'revision', ARGV[1], 'deleted', '1')
redis.call('HDEL', KEYS[2], ARGV[2])
return 1`;

type Client = ReturnType<typeof createClient>;

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
    const client = createClient({ url: options.url });
    client.on('error', () => {
      // Reconnection is the client's job; a command issued meanwhile rejects and its caller retries.
    });
    await client.connect();
    return new RedisBundleCache(client, options.prefix ?? 'policygen:');
  }

  async putBlobs(blobs: readonly Blob[]): Promise<number> {
    if (blobs.length === 0) return 0;
    const multi = this.client.multi();
    for (const blob of blobs) multi.set(this.blobKey(blob.sha256), blob.content, { NX: true });
    const replies = await multi.execAsPipeline();
    return replies.filter((reply: unknown) => reply === 'OK').length;
  }

  getBlob(sha256: string): Promise<string | null> {
    return this.client.get(this.blobKey(sha256));
  }

  async getBlobs(sha256s: readonly string[]): Promise<(string | null)[]> {
    if (sha256s.length === 0) return [];
    return this.client.mGet(sha256s.map((sha256) => this.blobKey(sha256)));
  }

  async recordBundles(bundles: readonly NodeBundleRecord[]): Promise<boolean[]> {
    if (bundles.length === 0) return [];
    const multi = this.client.multi();
    for (const bundle of bundles)
      multi.eval(RECORD, {
        keys: [this.nodeKey(bundle.nodeId), this.indexKey()],
        arguments: [
          String(bundle.revision),
          bundle.hash,
          bundle.committedAt,
          JSON.stringify(bundle.files),
          bundle.manifestSha256,
          bundle.nodeId,
        ],
      });
    const replies = await multi.execAsPipeline();
    return replies.map((reply: unknown) => reply === 1);
  }

  async removeNodes(nodes: readonly { nodeId: string; revision: number }[]): Promise<boolean[]> {
    if (nodes.length === 0) return [];
    const multi = this.client.multi();
    for (const node of nodes)
      multi.eval(REMOVE, {
        keys: [this.nodeKey(node.nodeId), this.indexKey()],
        arguments: [String(node.revision), node.nodeId],
      });
    const replies = await multi.execAsPipeline();
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
      files: JSON.parse(fields['files'] ?? '[]') as NodeBundleRecord['files'],
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

  async claimFreshness(): Promise<boolean> {
    const reply = await this.client.set(this.key('filled'), new Date().toISOString(), { NX: true });
    return reply === 'OK';
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
}

import { createHash } from 'node:crypto';
import type { BundleEvent } from '../contract/schemas';

/** The name of a bundle's manifest file (outputs.md), fetched by `manifestSha256`. */
export const MANIFEST_PATH = 'policy-manifest.json';

/**
 * Files a `node.bundle` names that are not part of the node's tree: the two parts its manifest is
 * put together from where the node is served (what many nodes share, and the merged properties).
 */
export const MANIFEST_HEAD_PATH = '.policygen/manifest-head.json';
export const MANIFEST_PROPERTIES_PATH = '.policygen/manifest-properties.json';

export function isManifestPartPath(path: string): boolean {
  return path === MANIFEST_HEAD_PATH || path === MANIFEST_PROPERTIES_PATH;
}

export interface BundleFilesOptions {
  /**
   * Where blobs are served: the distribution-service (`http://distribution:3003`, or
   * `http://127.0.0.1:8080/distribution` under `policygen start`) or a relay (`…/relay`).
   */
  readonly url: string;
  /** Sent as `Authorization: Bearer <token>`. */
  readonly token?: string;
  /**
   * Tries per blob (default 5): a blob named by a `node.bundle` event can arrive at the
   * distribution-service a moment after the event. Events of the latest-bundles topic name blobs
   * that are already there.
   */
  readonly attempts?: number;
  readonly retryDelayMs?: number;
}

export class BlobFetchError extends Error {
  constructor(
    message: string,
    readonly sha256: string,
    readonly status: number | null,
  ) {
    super(message);
    this.name = 'BlobFetchError';
  }
}

/** A bundle's files, fetched by digest and checked against it. */
export class BundleFiles {
  private readonly base: string;

  constructor(private readonly options: BundleFilesOptions) {
    this.base = options.url.replace(/\/+$/, '');
  }

  /** One blob's contents; rejects with a `BlobFetchError` if it cannot be had or does not match. */
  async blob(sha256: string): Promise<Buffer> {
    if (!/^[0-9a-f]{64}$/.test(sha256))
      throw new BlobFetchError(`not a SHA-256 digest: "${sha256}"`, sha256, null);
    const attempts = this.options.attempts ?? 5;
    for (let attempt = 1; ; attempt += 1) {
      let status: number | null = null;
      let reason: string;
      try {
        const response = await fetch(`${this.base}/blobs/${sha256}`, {
          headers: this.options.token ? { authorization: `Bearer ${this.options.token}` } : {},
        });
        status = response.status;
        if (response.ok) {
          const contents = Buffer.from(await response.arrayBuffer());
          const actual = createHash('sha256').update(contents).digest('hex');
          if (actual === sha256) return contents;
          reason = `the contents served have the digest ${actual}`;
        } else {
          reason = `${response.status} ${response.statusText}`;
          if (response.status === 401 || response.status === 403)
            throw new BlobFetchError(`blob ${sha256}: ${reason} (check the token)`, sha256, status);
        }
      } catch (error) {
        if (error instanceof BlobFetchError) throw error;
        reason = error instanceof Error ? error.message : String(error);
      }
      if (attempt >= attempts)
        throw new BlobFetchError(
          `blob ${sha256} from ${this.base}: ${reason} (after ${attempt} tries)`,
          sha256,
          status,
        );
      await new Promise((resolve) =>
        setTimeout(resolve, (this.options.retryDelayMs ?? 200) * 2 ** (attempt - 1)),
      );
    }
  }

  /**
   * Every file of the node's tree by path, its manifest included (events before `manifestSha256`
   * carry it inline); the manifest's parts are not files of the tree.
   */
  async bundle(event: BundleEvent): Promise<Map<string, Buffer>> {
    const files = event.files.filter((file) => !isManifestPartPath(file.path));
    if (event.manifestSha256 !== undefined) files.push({ path: MANIFEST_PATH, sha256: event.manifestSha256 });
    const contents = await Promise.all(files.map((file) => this.blob(file.sha256)));
    const bundle = new Map<string, Buffer>();
    files.forEach((file, index) => bundle.set(file.path, contents[index] as Buffer));
    return bundle;
  }
}

import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { writeFileDurably } from '@policygen/service-kit';

/** The secrets of an embedded run: what its tokens derive from or are checked against. */
export interface EmbeddedSecrets {
  /** What node tokens and relay credentials derive from: kept, a node's token outlives a restart. */
  readonly nodeTokenSecret: string;
  /** The generator's and the distribution-service's reader token on the config API. */
  readonly serviceToken: string;
  /** The bootstrap admin's token, when it was generated rather than given. */
  readonly adminToken?: string | undefined;
  /** The dashboard's reader token, kept so that its printed address keeps working. */
  readonly dashboardToken?: string | undefined;
}

const secretsSchema = z.object({
  schemaVersion: z.literal(1),
  nodeTokenSecret: z.string().min(32),
  serviceToken: z.string().min(32),
  adminToken: z.string().min(16).optional(),
  dashboardToken: z.string().min(16).optional(),
});

function generated(): string {
  return randomBytes(24).toString('hex');
}

/**
 * Where an embedded run keeps its secrets: `secrets.json` (mode 0600) of its data directory, written
 * crash-safe, or nowhere (`file` null: a temporary run, its secrets die with it).
 */
export class SecretsFile {
  private constructor(
    private readonly file: string | null,
    private current: EmbeddedSecrets,
  ) {}

  /** The kept secrets, or new ones (then kept at once: a token printed after this survives a crash). */
  static async open(file: string | null): Promise<SecretsFile> {
    const kept = file === null ? null : await readSecrets(file);
    if (kept) return new SecretsFile(file, kept);
    const secrets = new SecretsFile(file, { nodeTokenSecret: generated(), serviceToken: generated() });
    await secrets.save();
    return secrets;
  }

  get secrets(): EmbeddedSecrets {
    return this.current;
  }

  /** The admin's token: the one given wins; else the kept one; else a new one, kept. */
  async adminToken(given: string | undefined): Promise<string> {
    if (given !== undefined) return given;
    if (this.current.adminToken !== undefined) return this.current.adminToken;
    const adminToken = generated();
    await this.update({ adminToken });
    return adminToken;
  }

  async update(changes: Partial<EmbeddedSecrets>): Promise<void> {
    this.current = { ...this.current, ...changes };
    await this.save();
  }

  private async save(): Promise<void> {
    if (this.file === null) return;
    writeFileDurably(this.file, `${JSON.stringify({ schemaVersion: 1, ...this.current }, null, 2)}\n`, {
      mode: 0o600,
    });
  }
}

async function readSecrets(file: string): Promise<EmbeddedSecrets | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${file}: not JSON; restore it, or remove the data directory to start afresh`);
  }
  const result = secretsSchema.safeParse(parsed);
  if (!result.success)
    throw new Error(
      `${file}: ${result.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ')}`,
    );
  const { schemaVersion: _version, ...secrets } = result.data;
  return secrets;
}

import { readFileSync } from 'node:fs';
import { z } from 'zod';

/** The environment a service was started with does not fit its schema; each problem names its variable. */
export class EnvironmentError extends Error {
  override readonly name = 'EnvironmentError';

  constructor(readonly problems: readonly string[]) {
    super(`invalid environment: ${problems.join('; ')}`);
  }
}

/**
 * Parses a service's settings from its environment with a zod object whose keys are the variables'
 * names. Empty values count as unset, so `PORT=` takes the default. Any variable may come from a
 * file instead, `<NAME>_FILE=/run/secrets/...` (Docker secrets): its content, trailing newline
 * left out. Throws one `EnvironmentError` naming every variable that is missing or wrong; a secret's
 * value is never repeated in it.
 */
export function readEnvironment<Shape extends z.ZodRawShape>(
  schema: z.ZodObject<Shape>,
  env: Readonly<Record<string, string | undefined>>,
): z.infer<z.ZodObject<Shape>> {
  const given: Record<string, string> = {};
  const problems: string[] = [];
  for (const name of Object.keys(schema.shape)) {
    const value = env[name]?.trim();
    const file = env[`${name}_FILE`]?.trim();
    if (value !== undefined && value !== '') {
      if (file) problems.push(`${name}: set both directly and by ${name}_FILE; keep one`);
      given[name] = value;
    } else if (file) {
      try {
        given[name] = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
      } catch (error) {
        problems.push(
          `${name}_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
        );
      }
    }
  }
  const parsed = schema.safeParse(given);
  if (parsed.success && problems.length === 0) return parsed.data;
  throw new EnvironmentError([
    ...problems,
    ...(parsed.success ? [] : parsed.error.issues).map((issue) => {
      const name = String(issue.path[0] ?? '(environment)');
      const value = given[name];
      const shown = value === undefined || SECRET_NAME.test(name) ? '' : ` (got ${JSON.stringify(value)})`;
      return `${name}: ${issue.message}${shown}`;
    }),
  ]);
}

/** Variables whose values an error message must not repeat. */
const SECRET_NAME = /SECRET|TOKEN|PASSWORD|KEY/;

/** Texts that say "put your secret here": a deployment that kept one has no secret at all. */
const PLACEHOLDER_SECRET = /change-?me|replace-?me|placeholder|example|^(secret|password|default)$/i;

/** Schemas of the variables every service shares. */
export const env = {
  port: (fallback: number) => z.coerce.number().int().min(0).max(65_535).default(fallback),
  host: (fallback: string) => z.string().min(1).default(fallback),
  /** `host:port` list, comma-separated. */
  brokers: () =>
    z
      .string()
      .transform((text) =>
        text
          .split(',')
          .map((broker) => broker.trim())
          .filter((broker) => broker !== ''),
      )
      .pipe(z.array(z.string().regex(/^[^\s:]+:\d+$/, 'host:port')).min(1, 'at least one host:port')),
  url: () => z.url(),
  positiveInteger: () => z.coerce.number().int().positive(),
  /** A secret: no default, long enough not to be guessed, and not a placeholder left in place. */
  secret: () =>
    z
      .string()
      .min(16, 'at least 16 characters')
      .refine((value) => !PLACEHOLDER_SECRET.test(value), {
        message: 'is a placeholder, not a secret: generate one (openssl rand -hex 32)',
      }),
  logLevel: () => z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** A switch: `on`/`true`/`1` or `off`/`false`/`0`; anything else is refused, naming the variable. */
  flag: (fallback: boolean) =>
    z
      .enum(['on', 'off', 'true', 'false', '1', '0'], { message: 'on or off' })
      .transform((value) => value === 'on' || value === 'true' || value === '1')
      .default(fallback),
};

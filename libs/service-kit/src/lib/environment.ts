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
 * names. Empty values count as unset, so `PORT=` takes the default. Throws one `EnvironmentError`
 * naming every variable that is missing or wrong.
 */
export function readEnvironment<Shape extends z.ZodRawShape>(
  schema: z.ZodObject<Shape>,
  env: Readonly<Record<string, string | undefined>>,
): z.infer<z.ZodObject<Shape>> {
  const given: Record<string, string> = {};
  for (const name of Object.keys(schema.shape)) {
    const value = env[name]?.trim();
    if (value !== undefined && value !== '') given[name] = value;
  }
  const parsed = schema.safeParse(given);
  if (parsed.success) return parsed.data;
  throw new EnvironmentError(
    parsed.error.issues.map((issue) => {
      const name = String(issue.path[0] ?? '(environment)');
      const value = given[name];
      return `${name}: ${issue.message}${value === undefined ? '' : ` (got ${JSON.stringify(value)})`}`;
    }),
  );
}

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
  /** A secret: no default, and long enough not to be guessed. */
  secret: () => z.string().min(16, 'at least 16 characters'),
  logLevel: () => z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
};

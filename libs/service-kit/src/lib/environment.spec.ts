import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { env, EnvironmentError, readEnvironment } from './environment';

function problemsOf(read: () => unknown): readonly string[] {
  try {
    read();
  } catch (error) {
    if (error instanceof EnvironmentError) return error.problems;
    throw error;
  }
  throw new Error('the environment was accepted');
}

describe('readEnvironment: secrets', () => {
  const schema = z.object({ POLICYGEN_NODE_TOKEN_SECRET: env.secret(), PORT: env.port(3001) });
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'policygen-env-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads any variable from <NAME>_FILE (Docker secrets), its trailing newline left out', () => {
    const file = join(dir, 'secret');
    writeFileSync(file, 'a-long-random-secret-0123456789\n');
    expect(readEnvironment(schema, { POLICYGEN_NODE_TOKEN_SECRET_FILE: file, PORT_FILE: '' })).toEqual({
      POLICYGEN_NODE_TOKEN_SECRET: 'a-long-random-secret-0123456789',
      PORT: 3001,
    });
  });

  it('names a missing secret, an unreadable file, a value set twice, never repeating a secret', () => {
    expect(problemsOf(() => readEnvironment(schema, {}))).toEqual([
      'POLICYGEN_NODE_TOKEN_SECRET: Invalid input: expected string, received undefined',
    ]);
    expect(
      problemsOf(() => readEnvironment(schema, { POLICYGEN_NODE_TOKEN_SECRET_FILE: join(dir, 'missing') })),
    ).toEqual([
      `POLICYGEN_NODE_TOKEN_SECRET_FILE: cannot read ${join(dir, 'missing')} (ENOENT)`,
      'POLICYGEN_NODE_TOKEN_SECRET: Invalid input: expected string, received undefined',
    ]);
    const file = join(dir, 'secret');
    writeFileSync(file, 'a-long-random-secret-0123456789');
    const twice = problemsOf(() =>
      readEnvironment(schema, {
        POLICYGEN_NODE_TOKEN_SECRET: 'short',
        POLICYGEN_NODE_TOKEN_SECRET_FILE: file,
      }),
    );
    expect(twice).toEqual([
      'POLICYGEN_NODE_TOKEN_SECRET: set both directly and by POLICYGEN_NODE_TOKEN_SECRET_FILE; keep one',
      'POLICYGEN_NODE_TOKEN_SECRET: at least 16 characters',
    ]);
  });

  it.each([
    'change-me-to-a-long-random-secret',
    'CHANGEME-changeme-changeme',
    'replace-me-with-32-characters!!',
  ])('refuses the placeholder %s', (placeholder) => {
    expect(problemsOf(() => readEnvironment(schema, { POLICYGEN_NODE_TOKEN_SECRET: placeholder }))).toEqual([
      'POLICYGEN_NODE_TOKEN_SECRET: is a placeholder, not a secret: generate one (openssl rand -hex 32)',
    ]);
  });
});

describe('readEnvironment: switches', () => {
  const schema = z.object({ POLICYGEN_LATEST_BUNDLES_TOPIC: env.flag(false) });

  it.each([
    [undefined, false],
    ['on', true],
    ['true', true],
    ['1', true],
    ['off', false],
    ['0', false],
  ])('reads %s as %s', (value, expected) => {
    const given = value === undefined ? {} : { POLICYGEN_LATEST_BUNDLES_TOPIC: value };
    expect(readEnvironment(schema, given).POLICYGEN_LATEST_BUNDLES_TOPIC).toBe(expected);
  });

  it('refuses anything else, naming the variable', () => {
    expect(problemsOf(() => readEnvironment(schema, { POLICYGEN_LATEST_BUNDLES_TOPIC: 'yes' }))).toEqual([
      'POLICYGEN_LATEST_BUNDLES_TOPIC: on or off (got "yes")',
    ]);
  });
});

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { arbitraryFleet } from '../testing/fleet-arbitrary';
import { compileFleet } from './index/fleet-index';
import { generateNode } from './generate/generate';
import type { NodeBundle } from './generate/types';
import type { ValidationResult } from './validation/validate';
import { loadFleet, validateFleet } from './validation/validate';

/**
 * The acceptance check of outputs.md: CFEngine 3.21's own `cf-promises --full-check` accepts the
 * tree of every node that generated ok. Never skipped: without cf-promises the suite fails.
 */

const PROMISES_CF = 'rules/cfengine-community/promises.cf';
const OPTIONS = { generatedAt: 1_700_000_000_000, revision: 1 } as const;

function findOnPath(command: string): string | undefined {
  for (const directory of (process.env['PATH'] ?? '').split(path.delimiter)) {
    if (directory === '') continue;
    const candidate = path.join(directory, command);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

function requireCfPromises(): string {
  const found = findOnPath('cf-promises');
  if (!found) {
    throw new Error(
      'cf-promises is not on PATH: install Debian package cfengine3 (CFEngine 3.21, e.g. `apt-get install cfengine3` ' +
        'or `npm run setup:system`). This acceptance test never skips.',
    );
  }
  return found;
}

function repositoryRoot(): string {
  let directory = __dirname;
  while (!fs.existsSync(path.join(directory, 'nx.json'))) {
    const parent = path.dirname(directory);
    if (parent === directory) throw new Error(`no nx.json above ${__dirname}`);
    directory = parent;
  }
  return directory;
}

function validOrThrow(result: ValidationResult, what: string): Parameters<typeof compileFleet>[0] {
  if (!result.ok)
    throw new Error(`${what} is invalid:\n${result.issues.map((i) => `${i.path}: ${i.message}`).join('\n')}`);
  return result.fleet;
}

function generateAllNodes(fleet: Parameters<typeof compileFleet>[0]): NodeBundle[] {
  const compiled = compileFleet(fleet);
  return compiled.nodeIds.map((nodeId) => generateNode(compiled, nodeId, OPTIONS));
}

/**
 * Writes node trees side by side under one temporary directory and runs cf-promises on each;
 * trees with the same hash (byte-identical policy) are checked once.
 */
class PolicyChecker {
  private readonly checkedHashes = new Set<string>();
  private next = 0;
  readonly failures: string[] = [];
  checked = 0;

  constructor(
    private readonly binary: string,
    private readonly root: string,
    private readonly workdir: string,
  ) {}

  /** Checks an ok node's tree; returns whether cf-promises accepted it. */
  check(bundle: NodeBundle, label: string, context: () => string = () => ''): boolean {
    if (bundle.status !== 'ok') throw new Error(`${label}: only ok nodes have a tree to check`);
    const key = bundle.hash ?? '';
    if (this.checkedHashes.has(key)) return true;
    this.checkedHashes.add(key);
    const tree = path.join(this.root, String(this.next++));
    for (const file of bundle.files) {
      const target = path.join(tree, ...file.path.split('/'));
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, file.content);
    }
    const ok = this.run(path.join(tree, ...PROMISES_CF.split('/')), label, context);
    this.checked++;
    return ok;
  }

  /** Runs cf-promises on a promises.cf; a non-zero exit OR any `error:` line is a rejection. */
  run(promisesCf: string, label: string, context: () => string = () => ''): boolean {
    const result = spawnSync(this.binary, ['--full-check', '-w', this.workdir, '-f', promisesCf], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
    // cf-promises exits 0 on some errors it finds while evaluating (e.g. illegal variable names).
    if (result.status === 0 && result.error === undefined && !/\berror:/i.test(output)) return true;
    const files = [...new Set(output.match(/\/[^\s':"]+\.cf\b/g) ?? [])]
      .filter((file) => fs.existsSync(file))
      .map((file) => `--- ${file}\n${fs.readFileSync(file, 'utf8').slice(0, 4000)}`);
    this.failures.push(
      [
        `cf-promises rejected ${label} (exit ${result.status}${result.signal ? `, signal ${result.signal}` : ''}${
          result.error ? `, ${result.error.message}` : ''
        }):`,
        output.trim(),
        ...files,
        context(),
      ]
        .filter((part) => part !== '')
        .join('\n'),
    );
    return false;
  }
}

function report(failures: readonly string[]): string {
  if (failures.length === 0) return '';
  return `${failures.length} tree(s) rejected; the first ones:\n\n${failures.slice(0, 3).join('\n\n')}`;
}

describe('cf-promises accepts every generated tree (CFEngine 3.21)', () => {
  let binary: string;
  let temporary: string;
  let checker: PolicyChecker;
  let serial = 0;

  beforeAll(() => {
    binary = requireCfPromises();
    temporary = fs.mkdtempSync(path.join(os.tmpdir(), 'policygen-cf-promises-'));
    fs.mkdirSync(path.join(temporary, 'work'));
  });

  afterAll(() => {
    if (temporary) fs.rmSync(temporary, { recursive: true, force: true });
  });

  beforeEach(() => {
    const root = path.join(temporary, `run-${serial++}`);
    fs.mkdirSync(root);
    checker = new PolicyChecker(binary, root, path.join(temporary, 'work'));
  });

  it('is installed, in version 3.21', () => {
    const version = spawnSync(binary, ['--version'], { encoding: 'utf8' });
    expect(version.status).toBe(0);
    expect(version.stdout).toMatch(/CFEngine Core 3\.21\./);
  });

  it('and the check notices broken policy (syntax errors and evaluation errors)', () => {
    const write = (name: string, body: string): string => {
      const directory = path.join(temporary, `broken-${name}`);
      fs.mkdirSync(directory);
      fs.writeFileSync(
        path.join(directory, 'promises.cf'),
        'body common control\n{\n    inputs => { "main.cf" };\n    bundlesequence => { "main" };\n}\n',
      );
      fs.writeFileSync(path.join(directory, 'main.cf'), `bundle agent main\n{\n  vars:\n${body}\n}\n`);
      return path.join(directory, 'promises.cf');
    };
    expect(checker.run(write('valid', '      "x" string => "a \\"b\\"";'), 'valid')).toBe(true);
    expect(checker.run(write('syntax', '      "x" string => "a;'), 'syntax error')).toBe(false);
    // Exit status 0, yet an error: the check must still fail.
    expect(checker.run(write('eval', '      "a b\\"c" string => "x";'), 'illegal variable')).toBe(false);
    expect(checker.failures).toHaveLength(2);
  });

  it('for every ok node of the shared example fleets', () => {
    const directory = path.join(repositoryRoot(), '..', 'shared', 'examples');
    const examples = fs
      .readdirSync(directory)
      .filter((name) => name.endsWith('.fleet.json'))
      .sort();
    expect(examples.length).toBeGreaterThan(0);
    let ok = 0;
    for (const name of examples) {
      const fleet = validOrThrow(
        loadFleet(fs.readFileSync(path.join(directory, name), 'utf8'), 'json'),
        name,
      );
      for (const bundle of generateAllNodes(fleet)) {
        if (bundle.status !== 'ok') continue;
        ok++;
        checker.check(bundle, `${name} node ${bundle.nodeId}`);
      }
    }
    expect(ok).toBeGreaterThan(0);
    expect(report(checker.failures)).toBe('');
  });

  it('for every ok node of 250 random fleets', () => {
    const files = fc.sample(arbitraryFleet({ relationships: 'acyclic' }), { numRuns: 250, seed: 42 });
    let ok = 0;
    files.forEach((file, index) => {
      const fleet = validOrThrow(validateFleet(file), `random fleet #${index}`);
      for (const bundle of generateAllNodes(fleet)) {
        if (bundle.status !== 'ok') continue;
        ok++;
        checker.check(
          bundle,
          `random fleet #${index} node ${bundle.nodeId}`,
          () => `fleet: ${JSON.stringify(file)}`,
        );
      }
    });
    // Most random nodes generate; a sample where they all failed would check nothing.
    expect(ok).toBeGreaterThan(300);
    expect(checker.checked).toBeGreaterThan(200);
    expect(report(checker.failures)).toBe('');
  }, 300_000);

  // TODO(demo fleet): add the demo fleet case once it no longer makes a project cycle.
  // `@policygen/fleets` exists and exports buildDemoFleet, and its 300 nodes pass this check (verified
  // once by hand), but importing `@policygen/fleets` here makes engine -> fleets -> engine, which
  // @nx/enforce-module-boundaries rejects as a circular dependency. Once allowed (or from a project
  // that may depend on both), the case is the random-fleet one over a single fleet:
  // `validOrThrow(validateFleet(buildDemoFleet()), 'the demo fleet')`, then `checker.check` on every
  // ok node of `generateAllNodes(fleet)`, expecting more than 200 ok nodes and no failure.
});

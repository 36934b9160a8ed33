import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentRun } from '@policygen/testing-agent';
import { runAgent } from '@policygen/testing-agent';
import { compileValid, fleetFile, rule } from '../../testing/builders';
import { generateNode } from '../generate/generate';
import type { ManifestPolicy, NodeBundle } from '../generate/types';

/**
 * Policy modes (semantics.md §5b) as the real `cf-agent` runs them: a directive in audit warns of
 * what it would change and changes nothing; one in enforce repairs. Which mode wins follows
 * Rudder's rules (global switch, node, directive).
 */

const OPTIONS = { generatedAt: 1_700_000_000_000, revision: 1 } as const;

/** Creates `out/{{slot}}` and runs `/bin/echo ran-{{slot}}`: two kinds of change the agent makes. */
function touch(id: string, policyGeneration: string): Record<string, unknown> {
  return {
    id,
    version: '1.0',
    name: id,
    multiInstance: true,
    policyGeneration,
    parameters: [{ name: 'slot', required: true }],
    promises: [
      { type: 'files', promiser: '$(sys.workdir)/out/{{slot}}', attributes: { create: 'true' } },
      { type: 'commands', promiser: '/bin/echo ran-{{slot}}' },
      { type: 'reports', promiser: 'checked {{slot}}' },
    ],
  };
}

function touching(
  id: string,
  technique: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return { id, name: id, technique, parameters: { slot: id }, ...extra };
}

interface Outcome {
  readonly bundle: NodeBundle;
  readonly run: AgentRun;
  /** The slots whose file the agent created. */
  readonly created: readonly string[];
}

function outcome(fleet: Record<string, unknown>, slots: readonly string[]): Outcome {
  const bundle = generateNode(compileValid(fleet), 'n1', OPTIONS);
  if (bundle.status !== 'ok') throw new Error(`n1 failed: ${JSON.stringify(bundle.errors)}`);
  const run = runAgent(new Map(bundle.files.map((file) => [file.path, file.content])));
  try {
    expect(run.rejected).toBeNull();
    return { bundle, run, created: slots.filter((slot) => existsSync(join(run.dir, 'out', slot))) };
  } finally {
    run.remove();
  }
}

function policy(bundle: NodeBundle, id: string): ManifestPolicy {
  const found = bundle.manifest?.policies.find((entry) => entry.id === id);
  if (!found) throw new Error(`no policy ${id}`);
  return found;
}

const TECHNIQUES = [touch('merged', 'merged'), touch('apart', 'separated-with-parameters')];

describe('policy modes on the agent', () => {
  it('audit warns of every change and makes none; enforce repairs; a merged policy runs each directive in its own mode', () => {
    const { bundle, run, created } = outcome(
      fleetFile({
        techniques: TECHNIQUES,
        directives: [
          touching('a', 'merged', { policyMode: 'audit' }),
          touching('b', 'merged'),
          touching('c', 'apart', { policyMode: 'audit' }),
          touching('d', 'apart'),
        ],
        rules: [rule('r', ['a', 'b', 'c', 'd'])],
      }),
      ['a', 'b', 'c', 'd'],
    );
    expect(created).toEqual(['b', 'd']);
    expect(run.commandOutput).toEqual(['ran-b', 'ran-d']);
    for (const slot of ['a', 'c']) {
      expect(run.output).toContain(`Should create file '${run.dir}/out/${slot}'`);
      expect(run.output).toContain(
        `Command '/bin/echo ran-${slot}' needs to be executed, but only warning was promised`,
      );
    }
    // Reports are no change: they run in both modes.
    expect(run.reports).toEqual(expect.arrayContaining(['checked a', 'checked b', 'checked c', 'checked d']));

    expect(policy(bundle, 'merged')).toMatchObject({
      mode: 'mixed',
      directives: [
        { id: 'a', mode: 'audit', modeSource: 'directive' },
        { id: 'b', mode: 'enforce', modeSource: 'global' },
      ],
    });
    expect(policy(bundle, 'apart:c')).toMatchObject({ mode: 'audit' });
    expect(policy(bundle, 'apart:d')).toMatchObject({ mode: 'enforce' });
  });

  it.each([
    {
      case: 'a node in audit keeps an enforce directive in audit',
      settings: {},
      node: 'audit',
      directive: 'enforce',
      expected: { mode: 'audit', modeSource: 'node' },
    },
    {
      case: 'a directive in audit wins over a node in enforce',
      settings: {},
      node: 'enforce',
      directive: 'audit',
      expected: { mode: 'audit', modeSource: 'directive' },
    },
    {
      case: 'a directive in enforce wins over the overridable global audit',
      settings: { policyMode: 'audit' },
      node: undefined,
      directive: 'enforce',
      expected: { mode: 'enforce', modeSource: 'directive' },
    },
    {
      case: 'a global mode that is not overridable wins over the node and the directive',
      settings: { policyMode: 'audit', policyModeOverridable: false },
      node: 'enforce',
      directive: 'enforce',
      expected: { mode: 'audit', modeSource: 'global' },
    },
    {
      case: 'the global enforce that is not overridable repairs a node in audit',
      settings: { policyModeOverridable: false },
      node: 'audit',
      directive: 'audit',
      expected: { mode: 'enforce', modeSource: 'global' },
    },
  ])('$case', ({ settings, node, directive, expected }) => {
    const { bundle, created, run } = outcome(
      fleetFile({
        settings,
        techniques: TECHNIQUES,
        directives: [touching('x', 'merged', directive === undefined ? {} : { policyMode: directive })],
        rules: [rule('r', ['x'])],
        nodes: [
          { id: 'n1', hostname: 'n1.example.com', ...(node === undefined ? {} : { policyMode: node }) },
        ],
      }),
      ['x'],
    );
    expect(policy(bundle, 'merged')).toMatchObject({ mode: expected.mode, directives: [expected] });
    expect(created).toEqual(expected.mode === 'enforce' ? ['x'] : []);
    expect(run.commandOutput).toEqual(expected.mode === 'enforce' ? ['ran-x'] : []);
  });

  it('what an audited policy would change neither notifies nor skips what follows it', () => {
    const command = {
      id: 'cmd',
      version: '1.0',
      name: 'Command',
      multiInstance: true,
      policyGeneration: 'separated',
      parameters: [{ name: 'command', required: true }],
      promises: [{ type: 'commands', promiser: '{{command}}' }],
      refresh: [{ type: 'commands', promiser: '{{command}}-refresh' }],
    };
    const { run } = outcome(
      fleetFile({
        techniques: [command],
        directives: [
          {
            id: 'f',
            name: 'f',
            technique: 'cmd',
            parameters: { command: '/bin/echo f' },
            policyMode: 'audit',
            notify: ['d'],
          },
          { id: 'd', name: 'd', technique: 'cmd', parameters: { command: '/bin/echo d' } },
        ],
        rules: [rule('r', ['f', 'd'])],
      }),
      [],
    );
    // `f` would run (a warning): `d` runs, not skipped, and is not refreshed (nothing changed).
    expect(run.commandOutput).toEqual(['d']);
    expect(run.output).toContain("Command '/bin/echo f' needs to be executed, but only warning was promised");
    expect(run.reports.filter((line) => line.includes('Skipping'))).toEqual([]);
  });
});

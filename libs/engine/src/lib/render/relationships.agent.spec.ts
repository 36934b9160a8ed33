import type { AgentRun } from '@policygen/testing-agent';
import { runAgent } from '@policygen/testing-agent';
import { compileValid, fleetFile, rule } from '../../testing/builders';
import { generateNode } from '../generate/generate';
import type { NodeBundle } from '../generate/types';

/**
 * Relationships as the real `cf-agent` runs them (seed 004, semantics.md §3.6): the order of
 * effects, the refreshes, and the policies skipped when one they follow fails.
 */

const OPTIONS = { generatedAt: 1_700_000_000_000, revision: 1 } as const;

/** One policy per directive; its command runs, and its refresh command when it is notified. */
const COMMAND = {
  id: 'cmd',
  version: '1.0',
  name: 'Command',
  multiInstance: true,
  policyGeneration: 'separated',
  parameters: [{ name: 'command', required: true }, { name: 'refresh' }],
  promises: [{ type: 'commands', promiser: '{{command}}' }],
  refresh: [{ type: 'commands', promiser: '{{refresh}}' }],
};

function command(id: string, run: string, relations: Record<string, string[]> = {}): Record<string, unknown> {
  return {
    id,
    name: id,
    technique: 'cmd',
    parameters: { command: run, refresh: `/bin/echo refresh-${id}` },
    ...relations,
  };
}

function bundleOf(fleet: Record<string, unknown>): NodeBundle {
  const bundle = generateNode(compileValid(fleet), 'n1', OPTIONS);
  if (bundle.status !== 'ok') throw new Error(`n1 failed: ${JSON.stringify(bundle.errors)}`);
  return bundle;
}

function run(bundle: NodeBundle): AgentRun {
  const result = runAgent(new Map(bundle.files.map((file) => [file.path, file.content])));
  result.remove();
  expect(result.rejected).toBeNull();
  return result;
}

/** Seed 004's example: `f` and the policies that follow it in every way, and an unrelated `i`. */
function seedFleet(f: string): Record<string, unknown> {
  const ids = ['f', 'd1', 'd2', 'd3', 'd4', 'd5', 'd6', 'i'];
  return fleetFile({
    techniques: [COMMAND],
    directives: [
      command('f', f, { before: ['d5'], notify: ['d6'] }),
      command('d1', '/bin/echo d1', { require: ['f'] }),
      command('d2', '/bin/echo d2', { subscribe: ['f'] }),
      command('d3', '/bin/echo d3', { require: ['d1'] }),
      command('d4', '/bin/echo d4'),
      command('d5', '/bin/echo d5'),
      command('d6', '/bin/echo d6'),
      command('i', '/bin/echo i'),
    ],
    relationships: [{ from: 'f', to: 'd4', kind: '->' }],
    rules: [rule('r1', ids)],
  });
}

describe('relationships on the agent', () => {
  it('runs every policy in order, and the refreshes of the notified ones, when nothing fails', () => {
    const result = run(bundleOf(seedFleet('/bin/echo f')));
    expect(result.commandOutput).toEqual([
      'f',
      'd1',
      'd2',
      'refresh-d2',
      'd3',
      'd4',
      'd5',
      'd6',
      'refresh-d6',
      'i',
    ]);
    expect(result.reports.filter((line) => line.includes('Skipping'))).toEqual([]);
  });

  it('skips, transitively and refresh included, every policy that follows a failed one, and says so', () => {
    const bundle = bundleOf(seedFleet('/bin/false'));
    const result = run(bundle);
    expect(result.commandOutput).toEqual(['i']);
    expect(result.reports).toEqual(
      ['d1', 'd2', 'd3', 'd4', 'd5', 'd6'].map(
        (id) => `Directive[${id}]: Skipping because of failed dependencies (Directive[f] failed)`,
      ),
    );
    // The manifest says beforehand what a failure of each policy skips.
    const skipped = Object.fromEntries(
      (bundle.manifest?.policies ?? []).map((policy) => [policy.id, policy.skippedWhenFails]),
    );
    expect(skipped).toMatchObject({
      'cmd:f': ['cmd:d1', 'cmd:d2', 'cmd:d3', 'cmd:d4', 'cmd:d5', 'cmd:d6'],
      'cmd:d1': ['cmd:d3'],
      'cmd:i': [],
    });
  });

  it('skips only what follows the failed policy: a failure in the middle leaves its predecessor alone', () => {
    const fleet = seedFleet('/bin/echo f');
    const directives = (fleet['directives'] as Record<string, unknown>[]).map((directive) =>
      directive['id'] === 'd1' ? { ...directive, parameters: { command: '/bin/false' } } : directive,
    );
    const result = run(bundleOf({ ...fleet, directives }));
    expect(result.commandOutput).toEqual(['f', 'd2', 'refresh-d2', 'd4', 'd5', 'd6', 'refresh-d6', 'i']);
    expect(result.reports).toEqual([
      'Directive[d3]: Skipping because of failed dependencies (Directive[d1] failed)',
    ]);
  });

  it("notifies from a promise that sets classes of its own: both the technique's class and the refresh", () => {
    const owning = {
      ...COMMAND,
      id: 'owning',
      promises: [
        {
          type: 'commands',
          promiser: '{{command}}',
          attributes: { classes: { call: 'policygen_if_repaired', args: ['own_class_{{command_id}}'] } },
        },
      ],
      parameters: [...COMMAND.parameters, { name: 'command_id', required: true }],
    };
    const fleet = fleetFile({
      techniques: [COMMAND, owning],
      directives: [
        {
          id: 'n',
          name: 'n',
          technique: 'owning',
          parameters: { command: '/bin/echo n', command_id: 'n' },
          notify: ['d'],
        },
        command('d', '/bin/echo d'),
        // Runs only where the technique's own class was set.
        { ...command('z', '/bin/echo own-class-set'), parameters: { command: '/bin/echo own-class-set' } },
      ],
      rules: [rule('r1', ['n', 'd', 'z'])],
    });
    const withGuard = {
      ...fleet,
      techniques: [
        COMMAND,
        owning,
        {
          ...COMMAND,
          id: 'guarded',
          promises: [{ type: 'commands', promiser: '{{command}}', attributes: { if: 'own_class_n' } }],
        },
      ],
      directives: (fleet['directives'] as Record<string, unknown>[]).map((directive) =>
        directive['id'] === 'z' ? { ...directive, technique: 'guarded' } : directive,
      ),
    };
    const result = run(bundleOf(withGuard));
    expect(result.commandOutput).toEqual(['n', 'd', 'refresh-d', 'own-class-set']);
  });
});

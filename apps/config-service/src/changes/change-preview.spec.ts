import { FleetIndex, validateFleet } from '@policygen/engine';
import { node, packageTechnique, smallFleet } from '../testing/fixtures';
import { bundleDiff, DEFAULT_PREVIEW_LIMITS, previewChange } from './change-preview';

function currentOf(fleet: unknown, revision = 5): { revision: number; index: FleetIndex } {
  const validated = validateFleet(fleet);
  if (!validated.ok) throw new Error(JSON.stringify(validated.issues));
  return { revision, index: FleetIndex.build(validated.fleet) };
}

describe('previewing a change set', () => {
  it('says which nodes it affects and how their bundles change, leaving the configuration as it was', () => {
    const current = currentOf(smallFleet());
    const exported = JSON.stringify(current.index.toFleet());
    const outcome = previewChange(current, {
      upsert: {
        directives: [{ id: 'd-ssh', name: 'SSH', technique: 'pkg', parameters: { package: 'dropbear' } }],
      },
    });
    if (!outcome.ok) throw new Error(JSON.stringify(outcome.issues));
    const { preview } = outcome;
    expect(preview).toMatchObject({
      dryRun: true,
      revision: 5,
      counts: { directives: { upserted: 1, deleted: 0 } },
      affected: { count: 2, nodes: ['n1', 'n2'] },
      removed: [],
      checked: { count: 2, leftOut: 0 },
      changed: 2,
      failing: [],
      diffsLeftOut: 0,
    });
    expect(preview.nodes.map((diff) => diff.node)).toEqual(['n1', 'n2']);
    const [n1] = preview.nodes;
    expect(n1?.node).toBe('n1');
    expect(n1?.status).toEqual({ before: 'ok', after: 'ok' });
    expect(n1?.files.added).toEqual([]);
    expect(n1?.files.changed.length).toBeGreaterThan(0);
    const diffs = Object.entries(n1?.diffs ?? {});
    expect(diffs.length).toBeGreaterThan(0);
    expect(
      diffs.some(([, diff]) => diff.includes('-') && diff.includes('+') && diff.includes('dropbear')),
    ).toBe(true);
    // The manifest's revision is the same on both sides: its diff shows what changed, not the revision.
    expect(n1?.diffs['rules/cfengine-community/policy-manifest.json'] ?? '').not.toMatch(/configRevision/);
    expect(JSON.stringify(current.index.toFleet())).toBe(exported);
  });

  it('names the nodes that would fail, and why', () => {
    const current = currentOf(smallFleet());
    const outcome = previewChange(current, {
      upsert: {
        techniques: [{ ...packageTechnique, id: 'other-pkg' }],
        directives: [
          {
            id: 'd-broken',
            name: 'Broken',
            technique: 'other-pkg',
            parameters: { package: '${rudder.param.missing}' },
          },
        ],
        rules: [{ id: 'r-broken', name: 'Broken', directives: ['d-broken'], targets: ['special:all'] }],
      },
    });
    if (!outcome.ok) throw new Error(JSON.stringify(outcome.issues));
    expect(outcome.preview.affected.nodes).toEqual(['n1', 'n2']);
    expect(
      outcome.preview.failing.map((failing) => [failing.node, failing.before, failing.errors[0]?.code]),
    ).toEqual([
      ['n1', 'ok', 'UNKNOWN_VARIABLE'],
      ['n2', 'ok', 'UNKNOWN_VARIABLE'],
    ]);
    expect(outcome.preview.nodes.map((diff) => diff.status)).toEqual([
      { before: 'ok', after: 'failed' },
      { before: 'ok', after: 'failed' },
    ]);
  });

  it('shows a new node as all files added, and a deleted one as removed', () => {
    const current = currentOf(smallFleet());
    const outcome = previewChange(current, { upsert: { nodes: [node('n5')] }, delete: { nodes: ['n2'] } });
    if (!outcome.ok) throw new Error(JSON.stringify(outcome.issues));
    expect(outcome.preview.removed).toEqual(['n2']);
    const [n5] = outcome.preview.nodes;
    expect(n5?.status).toEqual({ before: 'absent', after: 'ok' });
    expect(n5?.files.removed).toEqual([]);
    expect(n5?.files.added).toContain('rules/cfengine-community/promises.cf');
    // promises.cf and properties.json come first.
    expect(Object.keys(n5?.diffs ?? {}).slice(0, 2)).toEqual([
      'rules/cfengine-community/promises.cf',
      'rules/cfengine-community/properties.d/properties.json',
    ]);
  });

  it('refuses an invalid change set with the issues a commit would give', () => {
    const outcome = previewChange(currentOf(smallFleet()), { upsert: { nodes: [{ id: 'bad' }] }, extra: 1 });
    expect(outcome.ok).toBe(false);
    expect(!outcome.ok && outcome.issues.map((issue) => issue.path)).toEqual(
      expect.arrayContaining(['$.extra', '$.upsert.nodes[0].hostname']),
    );
  });

  it('stays within its limits on a change reaching many nodes, saying what it left out', () => {
    const fleet = smallFleet();
    const nodes = Array.from({ length: 30 }, (_, index) => node(`m${String(index).padStart(2, '0')}`));
    const current = currentOf({
      ...fleet,
      groups: [],
      rules: [{ ...(fleet['rules'] as object[])[0], targets: ['special:all'] }],
      nodes,
    });
    const outcome = previewChange(
      current,
      {
        upsert: {
          directives: [{ id: 'd-ssh', name: 'SSH', technique: 'pkg', parameters: { package: 'dropbear' } }],
        },
      },
      { ...DEFAULT_PREVIEW_LIMITS, listedNodes: 25, checkedNodes: 10, diffedNodes: 3 },
    );
    if (!outcome.ok) throw new Error(JSON.stringify(outcome.issues));
    expect(outcome.preview).toMatchObject({
      affected: { count: 30 },
      checked: { count: 10, leftOut: 20 },
      changed: 10,
      diffsLeftOut: 7,
    });
    expect(outcome.preview.affected.nodes).toHaveLength(25);
    expect(outcome.preview.nodes.map((diff) => diff.node)).toEqual(['m00', 'm01', 'm02']);
  });

  it('diffs files within the budget and names the ones left out', () => {
    const file = (path: string, content: string) => ({
      path,
      content,
      sha256: content,
      bytes: content.length,
    });
    const bundle = (files: ReturnType<typeof file>[]) =>
      ({ nodeId: 'n', status: 'ok', errors: [], files, manifest: null, hash: null }) as const;
    const diff = bundleDiff(
      'n',
      bundle([file('x/promises.cf', 'a\n'), file('x/gone.cf', 'g\n'), file('x/big.cf', 'old\n')]),
      bundle([file('x/promises.cf', 'b\n'), file('x/new.cf', 'n\n'), file('x/big.cf', 'new\n'.repeat(50))]),
      400,
    );
    expect(diff.files).toEqual({
      added: ['x/new.cf'],
      removed: ['x/gone.cf'],
      changed: ['x/big.cf', 'x/promises.cf'],
    });
    expect(Object.keys(diff.diffs)).toEqual(['x/promises.cf', 'x/new.cf']);
    expect(diff.diffs['x/promises.cf']).toContain('-a\n+b');
    expect(diff.undiffed).toEqual(['x/big.cf']);
  });
});

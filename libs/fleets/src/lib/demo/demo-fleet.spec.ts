import {
  FLEET_COLLECTIONS,
  compileFleet,
  generateNode,
  settingsSchema,
  validateFleet,
} from '@policygen/engine';
import type { FleetCollection } from '@policygen/engine';
import { buildDemoFleet, buildDemoFleetFile } from './demo-fleet';

describe('the demo fleet', () => {
  const fleet = buildDemoFleetFile();

  it('is deterministic: two calls give deep-equal values', () => {
    expect(buildDemoFleet()).toEqual(buildDemoFleet());
    expect(JSON.stringify(buildDemoFleet())).toBe(JSON.stringify(buildDemoFleet()));
  });

  it('shares no mutable state between calls', () => {
    const first = buildDemoFleetFile();
    first.directives.length = 0;
    (first.parameters as Record<string, unknown>)['dns_server'] = 'changed';
    expect(buildDemoFleetFile()).toEqual(fleet);
  });

  it('is plain JSON', () => {
    expect(JSON.parse(JSON.stringify(fleet))).toEqual(fleet);
  });

  it('has the intended size', () => {
    expect(fleet.nodes).toHaveLength(300);
    expect(fleet.relays.map((relay) => relay.id)).toEqual(['relay-eu', 'relay-us']);
    expect(fleet.techniques).toHaveLength(12);
    expect(fleet.rules.length).toBeGreaterThanOrEqual(10);
    expect(fleet.rules.length).toBeLessThanOrEqual(15);
    expect(fleet.directives.length).toBeGreaterThan(30);
    expect(fleet.nodes.filter((node) => node.state === 'ignored')).toHaveLength(2);
    expect(fleet.nodes.filter((node) => node.state === 'empty-policies')).toHaveLength(1);
    const lab = fleet.groups.find((group) => group.id === 'g-lab');
    expect(lab?.nodes).toHaveLength(6);
  });

  it('names its nodes like hosts of a datacenter, and includes the relays as nodes', () => {
    for (const node of fleet.nodes.filter((node) => !node.id.startsWith('relay-'))) {
      expect(node.id).toMatch(/^(web|app|db|cache)-(par|lyo|ber|nyc)-\d{3}$/);
      expect(node.hostname).toBe(`${node.id}.example.com`);
    }
    const relayNodes = fleet.nodes.filter((node) => node.id.startsWith('relay-'));
    expect(relayNodes.map((node) => [node.id, node.policyServer])).toEqual([
      ['relay-eu', 'root'],
      ['relay-us', 'root'],
    ]);
    const servers = new Set(fleet.nodes.map((node) => node.policyServer));
    expect([...servers].sort()).toEqual(['relay-eu', 'relay-us', 'root']);
  });

  it('has the DNS override of seeds 000/001', () => {
    const dnsDefault = fleet.directives.find((directive) => directive.id === 'dns-default');
    const dnsParis = fleet.directives.find((directive) => directive.id === 'dns-paris');
    expect(dnsDefault).toMatchObject({ technique: 'generic_variable_definition', priority: 0 });
    expect(dnsDefault?.parameters).toMatchObject({ variable_name: 'DNS' });
    expect(dnsParis).toMatchObject({ technique: 'generic_variable_definition', priority: 10 });
    expect(dnsParis?.parameters).toMatchObject({ variable_name: 'DNS' });
    const parisRule = fleet.rules.find((rule) => rule.directives?.includes('dns-paris'));
    expect(parisRule?.targets).toEqual(['group:g-paris']);
  });

  it('matches the engine schemas item by item (strict: no field the format does not have)', () => {
    expect(settingsSchema.safeParse(fleet.settings).success).toBe(true);
    for (const collection of Object.keys(FLEET_COLLECTIONS) as FleetCollection[]) {
      const schema = FLEET_COLLECTIONS[collection];
      fleet[collection].forEach((item, index) => {
        const result = schema.safeParse(item);
        expect({ collection, index, issues: result.success ? [] : result.error.issues }).toEqual({
          collection,
          index,
          issues: [],
        });
      });
    }
  });

  it('has unique ids per kind and no dangling reference', () => {
    for (const collection of ['techniques', 'directives', 'rules', 'groups', 'nodes', 'relays'] as const) {
      const ids = fleet[collection].map((item) => item.id);
      expect(new Set(ids).size).toBe(ids.length);
    }
    const directives = new Set(fleet.directives.map((directive) => directive.id));
    const techniques = new Set(fleet.techniques.map((technique) => technique.id));
    const groups = new Set(fleet.groups.map((group) => group.id));
    const nodes = new Set(fleet.nodes.map((node) => node.id));
    for (const directive of fleet.directives) expect(techniques).toContain(directive.technique);
    for (const rule of fleet.rules) for (const id of rule.directives ?? []) expect(directives).toContain(id);
    for (const group of fleet.groups) for (const id of group.nodes ?? []) expect(nodes).toContain(id);
    const targets = JSON.stringify(fleet.rules.map((rule) => rule.targets));
    for (const [, group] of targets.matchAll(/group:([A-Za-z0-9_.-]+)/g)) expect(groups).toContain(group);
    for (const relationship of fleet.relationships) {
      expect(directives).toContain(relationship.from);
      expect(directives).toContain(relationship.to);
    }
  });

  it('names in a metaparameter only directives of every enabled rule holding the naming one', () => {
    const enabledRules = fleet.rules.filter((rule) => rule.enabled !== false);
    for (const directive of fleet.directives) {
      const named = [
        ...(directive.before ?? []),
        ...(directive.require ?? []),
        ...(directive.notify ?? []),
        ...(directive.subscribe ?? []),
      ];
      for (const other of named) {
        expect(fleet.directives.find((candidate) => candidate.id === other)?.enabled).not.toBe(false);
        for (const rule of enabledRules.filter((rule) => rule.directives?.includes(directive.id))) {
          expect({ rule: rule.id, directive: directive.id, names: other, applied: rule.directives }).toEqual(
            expect.objectContaining({ applied: expect.arrayContaining([other]) }),
          );
        }
      }
    }
  });

  it('is a valid fleet for the engine', () => {
    const result = validateFleet(buildDemoFleet());
    expect(result.ok ? [] : result.issues).toEqual([]);
    expect(result.ok).toBe(true);
  });

  it('generates every node without failure (no cycle, no missing dependency, no property conflict)', () => {
    const result = validateFleet(buildDemoFleet());
    if (!result.ok)
      throw new Error(result.issues.map((issue) => `${issue.path}: ${issue.message}`).join('\n'));
    const compiled = compileFleet(result.fleet);
    const statuses = new Map<string, number>();
    const failures: { nodeId: string; errors: unknown }[] = [];
    for (const nodeId of compiled.nodeIds) {
      const bundle = generateNode(compiled, nodeId, { generatedAt: 0, revision: 1 });
      statuses.set(bundle.status, (statuses.get(bundle.status) ?? 0) + 1);
      if (bundle.status === 'failed') failures.push({ nodeId, errors: bundle.errors });
    }
    expect(failures).toEqual([]);
    expect(Object.fromEntries(statuses)).toEqual({ ok: 298, ignored: 2 });
  });
});

import fc from 'fast-check';
import { CRITERION_OPERATORS, directiveSchema, groupSchema, nodeSchema } from '../model/fleet';
import { looseJson, tricky } from '../../testing/loose-json-arbitrary';
import { hasControlCharacter } from './limits';
import { plainDirective, plainGroup } from './plain-entities';
import { parseEntity, plainNode } from './plain-node';

const plainJson = fc.jsonValue({ maxDepth: 3 });
const someId = fc.oneof(fc.constantFrom('d-1', 'g.2', 'N_3', 'web'), tricky);
const idList = fc.oneof(fc.array(someId, { maxLength: 3 }), looseJson);
const jsonRecord = fc.oneof(
  fc.dictionary(fc.string(), plainJson, { maxKeys: 4, noNullPrototype: true }),
  looseJson,
);
const somePolicyMode = fc.oneof(fc.constantFrom('enforce', 'audit', 'Audit'), looseJson);
const someName = fc.oneof(fc.constantFrom('A name', 'é', 'x'.repeat(1024), 'x'.repeat(1025)), tricky);

/** Node-shaped values: mostly valid, each field sometimes absent, odd, or replaced. */
const nodeLike = fc
  .record(
    {
      id: fc.oneof(fc.constantFrom('node-1', 'n.2', 'N_3'), tricky),
      hostname: fc.oneof(fc.constantFrom('node-1.example.com', 'h'), tricky),
      policyServer: fc.oneof(fc.constantFrom('root', 'relay-1'), tricky, looseJson),
      state: fc.oneof(fc.constantFrom('enabled', 'ignored', 'empty-policies', 'disabled'), looseJson),
      facts: fc.oneof(
        fc.dictionary(fc.string(), plainJson, { maxKeys: 4, noNullPrototype: true }),
        looseJson,
      ),
      properties: fc.oneof(
        fc.dictionary(fc.string(), plainJson, { maxKeys: 4, noNullPrototype: true }),
        looseJson,
      ),
      inheritModes: fc.oneof(
        fc.dictionary(fc.string(), fc.constantFrom('moo', 'oap', 'mmm', 'MOO'), { noNullPrototype: true }),
        looseJson,
      ),
      policyMode: fc.oneof(fc.constantFrom('enforce', 'audit', 'Audit'), looseJson),
      other: looseJson,
    },
    { requiredKeys: [] },
  )
  .map((value) => ({ ...value }));

/** A node exactly as an export or a bench fleet writes it. */
const plainNodeInput = fc
  .record(
    {
      id: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,20}$/),
      hostname: fc.stringMatching(/^[a-z0-9.-]{1,40}$/),
      policyServer: fc.constantFrom('root', 'relay-1'),
      state: fc.constantFrom('enabled', 'ignored', 'empty-policies'),
      facts: fc.dictionary(fc.string(), plainJson, { maxKeys: 6, noNullPrototype: true }),
      properties: fc.dictionary(fc.string(), plainJson, { maxKeys: 6, noNullPrototype: true }),
      inheritModes: fc.dictionary(fc.string(), fc.constantFrom('moo', 'oap', 'mpa'), {
        noNullPrototype: true,
      }),
      policyMode: fc.constantFrom('enforce', 'audit'),
    },
    { requiredKeys: ['id', 'hostname'] },
  )
  .map((value) => ({ ...value }));

/** Directive-shaped values: mostly valid, each field sometimes absent, odd, or replaced. */
const directiveLike = fc
  .record(
    {
      id: someId,
      name: someName,
      technique: someId,
      techniqueVersion: fc.oneof(fc.constantFrom('1.0', '2'), looseJson),
      priority: fc.oneof(fc.constantFrom(0, 5, 10, 11, -1, 2.5, -0), looseJson),
      enabled: fc.oneof(fc.boolean(), looseJson),
      parameters: jsonRecord,
      policyMode: somePolicyMode,
      before: idList,
      require: idList,
      notify: idList,
      subscribe: idList,
      other: looseJson,
    },
    { requiredKeys: [] },
  )
  .map((value) => ({ ...value }));

const criterionLike = fc.oneof(
  fc
    .record(
      {
        fact: fc.oneof(fc.constantFrom('os.name', ''), tricky),
        property: fc.constantFrom('dc', ''),
        op: fc.oneof(fc.constantFrom(...CRITERION_OPERATORS, 'like'), looseJson),
        value: fc.oneof(plainJson, looseJson),
        group: someId,
      },
      { requiredKeys: [] },
    )
    .map((value) => ({ ...value })),
  looseJson,
);
const criteriaLike = fc.oneof(
  fc.record({ all: fc.array(criterionLike, { maxLength: 3 }) }).map((value) => ({ ...value })),
  fc.record({ any: fc.array(criterionLike, { maxLength: 3 }) }).map((value) => ({ ...value })),
  fc
    .record({
      all: fc.array(criterionLike, { maxLength: 2 }),
      any: fc.array(criterionLike, { maxLength: 2 }),
    })
    .map((value) => ({ ...value })),
  looseJson,
);

/** Group-shaped values: mostly valid, each field sometimes absent, odd, or replaced. */
const groupLike = fc
  .record(
    {
      id: someId,
      name: someName,
      enabled: fc.oneof(fc.boolean(), looseJson),
      nodes: idList,
      criteria: criteriaLike,
      properties: jsonRecord,
      inheritModes: fc.oneof(
        fc.dictionary(fc.string(), fc.constantFrom('moo', 'oap', 'MOO'), { noNullPrototype: true }),
        looseJson,
      ),
      other: looseJson,
    },
    { requiredKeys: [] },
  )
  .map((value) => ({ ...value }));

/** A directive and a group exactly as an export or a bench fleet writes them. */
const plainIds = fc.array(fc.stringMatching(/^[a-z0-9][a-z0-9_.-]{0,10}$/), { maxLength: 3 });
const plainDirectiveInput = fc
  .record(
    {
      id: fc.stringMatching(/^[a-z0-9][a-z0-9_.-]{0,12}$/),
      name: fc.string({ maxLength: 20 }).filter((text) => !hasControlCharacter(text)),
      technique: fc.stringMatching(/^[a-z0-9][a-z0-9_.-]{0,12}$/),
      techniqueVersion: fc.constantFrom('1.0', '2.1'),
      priority: fc.integer({ min: 0, max: 10 }),
      enabled: fc.boolean(),
      parameters: fc.dictionary(fc.string(), plainJson, { maxKeys: 4, noNullPrototype: true }),
      policyMode: fc.constantFrom('enforce', 'audit'),
      before: plainIds,
      require: plainIds,
      notify: plainIds,
      subscribe: plainIds,
    },
    { requiredKeys: ['id', 'name', 'technique'] },
  )
  .map((value) => ({ ...value }));
const plainCriterion = fc.oneof(
  fc.record(
    {
      fact: fc.constantFrom('os.name', 'arch'),
      op: fc.constantFrom(...CRITERION_OPERATORS),
      value: plainJson,
    },
    { requiredKeys: ['fact', 'op'] },
  ),
  fc.record(
    { property: fc.constantFrom('dc', 'env'), op: fc.constantFrom(...CRITERION_OPERATORS), value: plainJson },
    { requiredKeys: ['property', 'op'] },
  ),
  fc.record({ group: fc.stringMatching(/^[a-z0-9][a-z0-9_.-]{0,10}$/) }),
);
const plainGroupInput = fc
  .record(
    {
      id: fc.stringMatching(/^[a-z0-9][a-z0-9_.-]{0,12}$/),
      name: fc.constantFrom('Group', 'Web servers'),
      enabled: fc.boolean(),
      nodes: plainIds,
      criteria: fc.oneof(
        fc.record({ all: fc.array(plainCriterion, { maxLength: 3 }) }),
        fc.record({ any: fc.array(plainCriterion, { maxLength: 3 }) }),
      ),
      properties: fc.dictionary(fc.string(), plainJson, { maxKeys: 4, noNullPrototype: true }),
      inheritModes: fc.dictionary(fc.string(), fc.constantFrom('moo', 'oap'), { noNullPrototype: true }),
    },
    { requiredKeys: ['id', 'name'] },
  )
  .map((value) => JSON.parse(JSON.stringify(value)) as object);

/** A plain entity with one field replaced by an odd value (or a field added): each check gets its turn. */
function perturbed(plain: fc.Arbitrary<object>, keys: readonly string[]): fc.Arbitrary<object> {
  const odd = fc.oneof(
    looseJson,
    fc.constantFrom(11, -1, 2.5, -0, 0, 10, 'audit', 'enforce', 'eq', ''),
    fc.array(fc.oneof(tricky, fc.constantFrom('n1', 'a b')), { maxLength: 3 }),
    criteriaLike,
  );
  return fc
    .tuple(plain, fc.constantFrom(...keys, 'other'), odd)
    .map(([base, key, value]) => ({ ...base, [key]: value }));
}

/** The fields each schema knows, every one perturbed in turn. */
const DIRECTIVE_FIELDS = Object.keys(directiveSchema.shape);
const GROUP_FIELDS = Object.keys(groupSchema.shape);

describe.each([
  {
    kind: 'node',
    read: plainNode,
    schema: nodeSchema,
    like: nodeLike,
    plain: plainNodeInput,
  },
  {
    kind: 'directive',
    read: plainDirective,
    schema: directiveSchema,
    like: fc.oneof(directiveLike, perturbed(plainDirectiveInput, DIRECTIVE_FIELDS)),
    plain: plainDirectiveInput,
  },
  {
    kind: 'group',
    read: plainGroup,
    schema: groupSchema,
    like: fc.oneof(groupLike, perturbed(plainGroupInput, GROUP_FIELDS)),
    plain: plainGroupInput,
  },
] as const)('a $kind read without its schema', ({ read, schema, like, plain }) => {
  it('is never looser than the schema, and equal to what it parses, key order included', () => {
    let fast = 0;
    fc.assert(
      fc.property(fc.oneof(like, plain, looseJson), (value) => {
        const entity = read(value);
        if (entity === null) return;
        fast++;
        const parsed = schema.safeParse(value);
        expect(parsed.success).toBe(true);
        expect(entity).toEqual(parsed.data);
        expect(JSON.stringify(entity)).toBe(JSON.stringify(parsed.data));
      }),
      { numRuns: 3000 },
    );
    // The shortcut is taken often enough for the comparison to mean something.
    expect(fast).toBeGreaterThan(300);
  });

  it('reads every one in the plain shape, defaults applied as the schema applies them', () => {
    fc.assert(
      fc.property(plain, (value) => {
        fc.pre(!JSON.stringify(value).includes('"__proto__"'));
        const entity = read(value);
        expect(entity).not.toBeNull();
        expect(JSON.stringify(entity)).toBe(JSON.stringify(schema.parse(value)));
      }),
    );
  });
});

describe('directives and groups the schema reads', () => {
  it('are what JSON cannot hold or the schema refuses', () => {
    const directive = { id: 'd', name: 'D', technique: 't' };
    for (const odd of [
      { ...directive, parameters: { a: Number.NaN } },
      { ...directive, priority: 11 },
      { ...directive, priority: 2.5 },
      { ...directive, before: ['a b'] },
      { ...directive, require: [1, , 2] }, // eslint-disable-line no-sparse-arrays
      { ...directive, policyMode: undefined },
      { ...directive, name: 'a\nb' },
      { ...directive, extra: 1 },
    ])
      expect(plainDirective(odd)).toBeNull();
    const group = { id: 'g', name: 'G' };
    for (const odd of [
      { ...group, criteria: { all: [], any: [] } },
      { ...group, criteria: { all: [{ fact: 'a', property: 'b', op: 'eq' }] } },
      { ...group, criteria: { all: [{ fact: '', op: 'eq' }] } },
      { ...group, criteria: { all: [{ fact: 'a', op: 'like' }] } },
      { ...group, criteria: { all: [{ fact: 'a', op: 'eq', value: undefined }] } },
      { ...group, criteria: { any: [{ group: 'a b' }] } },
      { ...group, properties: JSON.parse('{"__proto__": {"x": 1}}') as object },
      { ...group, nodes: ['n', 7] },
    ])
      expect(plainGroup(odd)).toBeNull();
  });

  it('name what is wrong', () => {
    expect(parseEntity('directives', { id: 'd', name: 'D', technique: 't', priority: 11 })).toMatchObject({
      success: false,
      error: { issues: [{ path: ['priority'] }] },
    });
    expect(
      parseEntity('groups', { id: 'g', name: 'G', criteria: { all: [{ fact: 'a', op: 'like' }] } }),
    ).toMatchObject({
      success: false,
    });
  });
});

import fc from 'fast-check';
import type { Json, JsonObject } from '../model/json';
import type { ExpansionContext } from './expand';
import { expandReferences, hasGenerationReferences, referencedValuesKey, referencesIn } from './expand';

/**
 * The engine re-expands a node's dynamic policy only when what its references read changed
 * (`referencedValuesKey`): two contexts whose readings are equal must expand a value equally.
 */

const names = fc.constantFrom('a', 'b', 'dns', 'env');
const leaf: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom('x', 'y', '1'),
  fc.constantFrom(1, 2),
  fc.constant(null),
);
const property: fc.Arbitrary<Json> = fc.oneof(leaf, fc.dictionary(names, leaf, { maxKeys: 2 }));

const reference = fc.oneof(
  names.map((name) => `\${node.properties[${name}]}`),
  fc.tuple(names, names).map(([outer, inner]) => `\${node.properties[${outer}][ ${inner} ]}`),
  names.map((name) => `\${rudder.param.${name}}`),
  names.map((name) => `\${rudder.param.${name} | default = "d\\"${name}"}`),
  fc.constantFrom(
    '${rudder.node.id}',
    '${rudder.node.hostname}',
    '${rudder.node.policyserver.id}',
    '${sys.host}',
  ),
);
const text = fc
  .array(fc.oneof(reference, fc.constantFrom('-', 'plain ', '$(x)')), { maxLength: 4 })
  .map((parts) => parts.join(''));
const value: fc.Arbitrary<Json> = fc.oneof(
  text,
  fc.array(text, { maxLength: 3 }),
  fc.dictionary(names, text, { maxKeys: 3 }),
);

const context: fc.Arbitrary<ExpansionContext> = fc.record({
  properties: fc.dictionary(names, property, { maxKeys: 3 }) as fc.Arbitrary<JsonObject>,
  parameters: fc.dictionary(names, property, { maxKeys: 3 }),
  nodeId: fc.constantFrom('n1', 'n2'),
  hostname: fc.constantFrom('h1', 'h2'),
  policyServerId: fc.constantFrom('root', 'relay'),
});

describe('referencedValuesKey', () => {
  it('is equal only for contexts in which a value expands equally', () => {
    fc.assert(
      fc.property(value, context, context, (given, first, second) => {
        // A value tested for references first, as the engine does (the shared expression's state).
        hasGenerationReferences(given);
        const references = referencesIn(given);
        if (referencedValuesKey(references, first) !== referencedValuesKey(references, second)) return;
        expect(expandReferences(given, second)).toEqual(expandReferences(given, first));
      }),
      { numRuns: 3000 },
    );
  });

  it('finds every reference expandReferences resolves', () => {
    fc.assert(
      fc.property(value, (given) => {
        hasGenerationReferences(given);
        expect(referencesIn(given).length > 0).toBe(hasGenerationReferences(given));
      }),
    );
  });
});

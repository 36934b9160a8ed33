import { setFlagsFromString } from 'node:v8';
import fc from 'fast-check';
import { emptyList, flatMapList, mapList } from './lists';

// V8's own view of an array's elements kind: what these helpers exist for.
setFlagsFromString('--allow-natives-syntax');
const hasObjectElements = new Function('list', 'return %HasObjectElements(list)') as (
  list: unknown[],
) => boolean;
const hasSmiElements = new Function('list', 'return %HasSmiElements(list)') as (list: unknown[]) => boolean;

describe('lists in one elements kind', () => {
  it('gives an empty list the kind of a filled list of objects, where a mapped empty list has the small-integer kind', () => {
    expect(hasSmiElements([].map((item) => item))).toBe(true);
    expect(hasObjectElements([{ id: 'a' }].map((item) => item))).toBe(true);
    expect(hasObjectElements(emptyList())).toBe(true);
    expect(hasObjectElements(mapList([], (item) => item))).toBe(true);
    expect(hasObjectElements(flatMapList(['a', 'b'], () => []))).toBe(true);
    expect(hasObjectElements(flatMapList([], () => ['a']))).toBe(true);
  });

  it('gives a fresh list each time: what one caller adds, no other sees', () => {
    const first = emptyList<string>();
    first.push('added');
    expect(emptyList()).toEqual([]);
    const mapped = mapList<string, string>([], (item) => item);
    mapped.push('added');
    expect(mapList<string, string>([], (item) => item)).toEqual([]);
  });

  it('maps and flat-maps as Array.prototype does, index and list included', () => {
    fc.assert(
      fc.property(fc.array(fc.string()), (items) => {
        const project = (item: string, index: number, list: readonly string[]): string =>
          `${item}:${index}:${list.length}`;
        expect(mapList(items, project)).toEqual(items.map(project));
        const spread = (item: string, index: number): string[] =>
          index % 3 === 0 ? [] : index % 3 === 1 ? [item] : [item, `${index}`];
        expect(flatMapList(items, spread)).toEqual(items.flatMap(spread));
      }),
    );
  });
});

import type { RelayState } from '../api/contract';
import { relayTree } from './relays-panel';

function relay(relayId: string, parentId: string | null): RelayState {
  return { relayId, parentId, revision: 1, behind: 0, confirmedAt: null, nodes: 0 };
}

describe('relayTree', () => {
  it('lists each relay under its parent, indented by depth, siblings by id', () => {
    const tree = relayTree([
      relay('b', null),
      relay('a-2', 'a'),
      relay('a', null),
      relay('a-1', 'a'),
      relay('a-1-x', 'a-1'),
    ]);
    expect(tree.map(({ relay: { relayId }, depth }) => `${depth}:${relayId}`)).toEqual([
      '0:a',
      '1:a-1',
      '2:a-1-x',
      '1:a-2',
      '0:b',
    ]);
  });

  it('shows a relay whose parent is not listed, and relays in a cycle, at the top', () => {
    const tree = relayTree([relay('orphan', 'gone'), relay('x', 'y'), relay('y', 'x')]);
    expect(tree.map(({ relay: { relayId }, depth }) => `${depth}:${relayId}`)).toEqual([
      '0:orphan',
      '0:x',
      '0:y',
    ]);
  });
});

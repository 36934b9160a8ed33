import { actorOf, ANONYMOUS } from './actor';

describe('the author of a request', () => {
  it("is its principal's name, or anonymous without one", () => {
    expect(actorOf({ principal: { kind: 'api', name: 'ci-deploy', role: 'editor', tokenId: 't1' } })).toBe(
      'ci-deploy',
    );
    expect(actorOf({})).toBe(ANONYMOUS);
    expect(actorOf({ principal: {} })).toBe(ANONYMOUS);
    expect(actorOf({ principal: { name: '' } })).toBe(ANONYMOUS);
    expect(actorOf(undefined)).toBe(ANONYMOUS);
  });
});

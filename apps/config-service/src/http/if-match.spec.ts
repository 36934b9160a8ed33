import { etagOf, ifMatchAccepts } from './if-match';

describe('If-Match', () => {
  it('accepts a request without the header, or with *', () => {
    expect(ifMatchAccepts(undefined, 3)).toBe(true);
    expect(ifMatchAccepts('', 3)).toBe(true);
    expect(ifMatchAccepts('*', 3)).toBe(true);
  });

  it('compares the revision, quoted or not, weak or strong, in a list', () => {
    expect(ifMatchAccepts(etagOf(12), 12)).toBe(true);
    expect(ifMatchAccepts('12', 12)).toBe(true);
    expect(ifMatchAccepts('W/"12"', 12)).toBe(true);
    expect(ifMatchAccepts('"3", "12"', 12)).toBe(true);
    expect(ifMatchAccepts('"11"', 12)).toBe(false);
    expect(ifMatchAccepts('"012"', 12)).toBe(false);
    expect(ifMatchAccepts('abc', 12)).toBe(false);
  });

  it('accepts no tag, not even *, for what does not exist; nor refuses a request without the header', () => {
    expect(ifMatchAccepts('*', undefined)).toBe(false);
    expect(ifMatchAccepts('"3"', undefined)).toBe(false);
    expect(ifMatchAccepts(undefined, undefined)).toBe(true);
  });
});

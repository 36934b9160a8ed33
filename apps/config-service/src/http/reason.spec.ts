import fc from 'fast-check';
import { HttpException } from '@nestjs/common';
import { checkedReason, MAX_REASON_CHARACTERS, reasonOfHeader } from './reason';

function refusalOf(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error instanceof HttpException ? error.getResponse() : error;
  }
  return undefined;
}

describe('the reason of a write', () => {
  it('is null when absent or blank, the text otherwise', () => {
    expect(checkedReason(undefined, '$.reason')).toBeNull();
    expect(checkedReason(null, '$.reason')).toBeNull();
    expect(checkedReason('  ', '$.reason')).toBeNull();
    expect(checkedReason('rotate the DNS', '$.reason')).toBe('rotate the DNS');
    expect(checkedReason('é'.repeat(MAX_REASON_CHARACTERS), '$.reason')).toHaveLength(MAX_REASON_CHARACTERS);
  });

  it('counts characters, not UTF-16 units', () => {
    expect(checkedReason('🙂'.repeat(MAX_REASON_CHARACTERS), '$.reason')).toBeTruthy();
  });

  it('is refused with a 400 naming where it came from: not text, too long, or any control character', () => {
    expect(refusalOf(() => checkedReason(3, '$.reason'))).toMatchObject({
      statusCode: 400,
      issues: [{ path: '$.reason', message: 'must be a string' }],
    });
    expect(
      refusalOf(() => checkedReason('x'.repeat(MAX_REASON_CHARACTERS + 1), 'X-Policygen-Reason')),
    ).toMatchObject({
      issues: [{ path: 'X-Policygen-Reason' }],
    });
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 0, max: 0x1f }), fc.string(), (before, control, after) => {
        const text = `x${before}${String.fromCharCode(control)}${after}`;
        expect(refusalOf(() => checkedReason(text, '$.reason'))).toMatchObject({ statusCode: 400 });
      }),
    );
    expect(refusalOf(() => checkedReason('a\u007fb', '$.reason'))).toMatchObject({ statusCode: 400 });
  });

  it('reads a header as is, or as RFC 8187 UTF-8 when it says so', () => {
    expect(reasonOfHeader(undefined)).toBeNull();
    expect(reasonOfHeader('plain ASCII')).toBe('plain ASCII');
    expect(reasonOfHeader("UTF-8''d%C3%A9j%C3%A0%20vu")).toBe('déjà vu');
    expect(refusalOf(() => reasonOfHeader("UTF-8''%E0%A4%A"))).toMatchObject({ statusCode: 400 });
    expect(refusalOf(() => reasonOfHeader("UTF-8''a%0Ab"))).toMatchObject({ statusCode: 400 });
  });
});

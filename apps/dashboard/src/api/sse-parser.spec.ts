import { SseParser } from './sse-parser';

describe('SseParser', () => {
  it('dispatches named events on a blank line, whatever the chunks', () => {
    const parser = new SseParser();
    const text =
      'retry: 1000\n\nevent: snapshot\ndata: {"a":\ndata: 1}\n\n: a comment\nevent: snapshot\ndata: 2\n\n';
    const messages = [...text].flatMap((character) => parser.push(character));
    expect(messages).toEqual([
      { event: 'snapshot', data: '{"a":\n1}', id: null },
      { event: 'snapshot', data: '2', id: null },
    ]);
    expect(parser.retryMs).toBe(1000);
  });

  it('reads CRLF and CR line ends, a CRLF split between chunks included', () => {
    const parser = new SseParser();
    expect(parser.push('data: x\r')).toEqual([]);
    expect(parser.push('\n\r\ndata: y\r\r')).toEqual([{ event: 'message', data: 'x', id: null }]);
    // The last CR may be the start of a CRLF: it ends its line once the next character is seen.
    expect(parser.push('data: z\n')).toEqual([{ event: 'message', data: 'y', id: null }]);
  });

  it('keeps the last id and ignores a message without data', () => {
    const parser = new SseParser();
    expect(parser.push('id: 7\nevent: snapshot\n\nevent: snapshot\ndata:z\n\n')).toEqual([
      { event: 'snapshot', data: 'z', id: '7' },
    ]);
  });
});

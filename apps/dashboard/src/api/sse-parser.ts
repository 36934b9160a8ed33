/** One dispatched Server-Sent Event. */
export interface SseMessage {
  event: string;
  data: string;
  id: string | null;
}

/**
 * An incremental parser of the `text/event-stream` format (the WHATWG rules EventSource follows):
 * feed it the decoded text as it arrives, in pieces of any size, and it returns the messages
 * each piece completes. `retry` fields are reported through `retryMs`.
 */
export class SseParser {
  private buffer = '';
  private event = '';
  private data: string[] = [];
  private id: string | null = null;
  private lastId: string | null = null;
  /** The reconnection delay the server asked for, if it did. */
  retryMs: number | null = null;

  push(text: string): SseMessage[] {
    this.buffer += text;
    const messages: SseMessage[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (match === null) break;
      // A lone CR at the very end may be the first half of a CRLF still to come.
      if (match[0] === '\r' && match.index === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      const message = this.line(line);
      if (message !== null) messages.push(message);
    }
    return messages;
  }

  private line(line: string): SseMessage | null {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.event = value;
        break;
      case 'data':
        this.data.push(value);
        break;
      case 'id':
        if (!value.includes('\0')) this.id = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
        break;
    }
    return null;
  }

  private dispatch(): SseMessage | null {
    if (this.id !== null) this.lastId = this.id;
    this.id = null;
    const event = this.event === '' ? 'message' : this.event;
    const data = this.data;
    this.event = '';
    this.data = [];
    if (data.length === 0) return null;
    return { event, data: data.join('\n'), id: this.lastId };
  }
}

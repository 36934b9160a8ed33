/**
 * The position in a topic of `policygen start`'s event stream: the next offset of every partition
 * (`0:13,1:5`), sent as each event's id and given back as `Last-Event-ID` to resume.
 */
export type StreamCursor = ReadonlyMap<number, bigint>;

export function parseStreamCursor(text: string): StreamCursor {
  const positions = new Map<number, bigint>();
  if (text.trim() === '') return positions;
  for (const part of text.split(',')) {
    const match = /^(\d+):(\d+)$/.exec(part.trim());
    if (!match) throw new Error(`not a stream cursor (<partition>:<offset>,…): "${text}"`);
    positions.set(Number(match[1]), BigInt(match[2] as string));
  }
  return positions;
}

export function formatStreamCursor(cursor: StreamCursor): string {
  return [...cursor.entries()]
    .sort(([a], [b]) => a - b)
    .map(([partition, offset]) => `${partition}:${offset}`)
    .join(',');
}

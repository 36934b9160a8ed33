import { request } from 'node:http';

/** An HTTP answer, its body as text. */
export interface RawAnswer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
}

/**
 * A request whose path is sent exactly as written: `fetch` resolves `..` and `%2e%2e` segments
 * before sending, which would hide a traversal from the server instead of trying it.
 */
export function rawRequest(
  baseUrl: string,
  method: string,
  path: string,
  options: { readonly token?: string; readonly body?: string | Buffer; readonly contentType?: string } = {},
): Promise<RawAnswer> {
  const base = new URL(baseUrl);
  const headers: Record<string, string> = {};
  if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
  if (options.body !== undefined) {
    headers['content-type'] = options.contentType ?? 'application/json';
    headers['content-length'] = String(Buffer.byteLength(options.body));
  }
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: base.hostname,
        port: base.port,
        method,
        path: `${base.pathname.replace(/\/$/, '')}${path}`,
        headers,
      },
      (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
        incoming.on('end', () =>
          resolve({
            status: incoming.statusCode ?? 0,
            headers: incoming.headers,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        incoming.on('error', reject);
      },
    );
    outgoing.setTimeout(30_000, () => outgoing.destroy(new Error(`${method} ${path}: no answer in 30 s`)));
    outgoing.on('error', reject);
    outgoing.end(options.body);
  });
}

/**
 * What a path parameter may be made of by someone probing: parent directories (plain, encoded,
 * double-encoded, backslashed), NUL, an absolute path, and a name too long for any file system.
 */
export const HOSTILE_SEGMENTS: readonly string[] = [
  '..',
  '..%2F..%2F..%2Fetc%2Fpasswd',
  '%2e%2e%2f%2e%2e%2fetc%2fpasswd',
  '%252e%252e%252fetc%252fpasswd',
  '..%5C..%5Cwindows%5Cwin.ini',
  '....%2F%2F....%2F%2Fetc%2Fpasswd',
  '%2Fetc%2Fpasswd',
  'a%00b',
  '%00',
  'x'.repeat(4_096),
];

/** What a file a traversal reached would show. */
export const LEAKED_FILE = /root:x?:0:0|\[fonts\]|BEGIN (RSA|OPENSSH) PRIVATE KEY/;

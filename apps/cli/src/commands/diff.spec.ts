import { createServer } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { ChangePreview } from '../io/pipeline-api';
import { run } from '../program';
import { removeDir, tempDir, writeJson } from '../testing/cli-harness';

const preview: ChangePreview = {
  dryRun: true,
  revision: 12,
  counts: { directives: { upserted: 1, deleted: 0 } },
  affected: { count: 2, nodes: ['n1', 'n2'] },
  removed: [],
  checked: { count: 2, leftOut: 0 },
  changed: 2,
  failing: [
    {
      node: 'n2',
      before: 'ok',
      errors: [{ code: 'UNKNOWN_VARIABLE', message: 'unknown ${rudder.param.x}' }],
    },
  ],
  nodes: [
    {
      node: 'n1',
      status: { before: 'ok', after: 'ok' },
      files: { added: [], removed: [], changed: ['rules/cfengine-community/promises.cf'] },
      diffs: {
        'rules/cfengine-community/promises.cf':
          '--- a/promises.cf\n+++ b/promises.cf\n@@ -1 +1 @@\n-openssh\n+dropbear\n',
      },
      undiffed: [],
    },
  ],
  diffsLeftOut: 1,
};

interface Received {
  method: string | undefined;
  url: string | undefined;
  authorization: string | undefined;
  body: unknown;
}

function collector(): { stream: NodeJS.WriteStream; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return { stream: stream as unknown as NodeJS.WriteStream, text: () => chunks.join('') };
}

async function bodyOf(request: IncomingMessage): Promise<unknown> {
  let text = '';
  for await (const chunk of request) text += (chunk as Buffer).toString();
  return JSON.parse(text) as unknown;
}

describe('policygen diff --url', () => {
  let server: Server;
  let url: string;
  let dir: string;
  let received: Received[];
  let answer: { status: number; body: unknown };

  beforeAll(async () => {
    server = createServer((request, response) => {
      void bodyOf(request).then((body) => {
        received.push({
          method: request.method,
          url: request.url,
          authorization: request.headers.authorization,
          body,
        });
        response.writeHead(answer.status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(answer.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    dir = tempDir('diff');
    received = [];
    answer = { status: 200, body: preview };
  });
  afterEach(() => removeDir(dir));

  async function diff(...args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
    const [stdout, stderr] = [collector(), collector()];
    const status = await run(['diff', '--url', url, ...args], {
      stdout: stdout.stream,
      stderr: stderr.stream,
      env: {},
    });
    return { status, stdout: stdout.text(), stderr: stderr.text() };
  }

  it('posts the change set as a dry run, with the token, and prints a summary and the diffs', async () => {
    const changeSet = { reason: 'try dropbear', upsert: { parameters: { a: 1 } } };
    const file = writeJson(join(dir, 'change.json'), changeSet);
    const result = await diff('--token', 's3cret', file);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(received).toEqual([
      { method: 'POST', url: '/api/v1/changes?dryRun=true', authorization: 'Bearer s3cret', body: changeSet },
    ]);
    const lines = result.stdout.split('\n');
    expect(lines.slice(0, 7)).toEqual([
      'dry run against revision 12: nothing committed',
      'change      1 directives upserted',
      'affected    2 node(s): n1, n2',
      'removed     none',
      'changed     2 of 2 node(s) generated',
      'failing     1 node(s)',
      '  n2  UNKNOWN_VARIABLE  (was ok): unknown ${rudder.param.x}',
    ]);
    expect(result.stdout).toContain('=== n1 (ok → ok): 0 added, 0 removed, 1 changed');
    expect(result.stdout).toContain('-openssh\n+dropbear');
    expect(result.stdout).toContain('… 1 more changed node(s) not diffed');
  });

  it('prints the preview as JSON with --json', async () => {
    const result = await diff('--json', writeJson(join(dir, 'change.json'), { upsert: {} }));
    expect(JSON.parse(result.stdout)).toEqual(preview);
  });

  it('exits 2 naming the file when it cannot be read or is not JSON, asking nothing of the API', async () => {
    const missing = join(dir, 'missing.json');
    const unread = await diff(missing);
    expect(unread.status).toBe(2);
    expect(unread.stderr).toBe(
      `policygen: cannot read change-set file ${missing}: no such file or directory\n`,
    );
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{ "upsert": ');
    const notJson = await diff(broken);
    expect(notJson.status).toBe(2);
    expect(notJson.stderr).toMatch(new RegExp(`^policygen: ${broken}: not valid JSON`));
    expect(received).toEqual([]);
  });

  it('exits 2 with every issue the API finds in the change set, naming the file', async () => {
    answer = {
      status: 400,
      body: {
        statusCode: 400,
        message: 'the change set is invalid (1 issue)',
        issues: [{ path: '$.upsert.nodes[0].hostname', message: 'required' }],
      },
    };
    const file = writeJson(join(dir, 'invalid.json'), { upsert: { nodes: [{ id: 'x' }] } });
    const result = await diff(file);
    expect(result.status).toBe(2);
    expect(result.stderr).toBe(
      `$.upsert.nodes[0].hostname: required\npolicygen: ${file} is not a valid change set (1 issue)\n`,
    );
  });
});

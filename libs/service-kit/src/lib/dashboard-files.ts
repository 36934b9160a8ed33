import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, pipeline } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import express from 'express';
import type { Router } from 'express';

/**
 * Where the built dashboard is (`npm run build` writes dist/dashboard): beside the bundle that runs
 * (dist/cli/../dashboard, dist/dashboard-server/../dashboard), or under the working directory when
 * run from the sources.
 */
export function dashboardDirectory(): string {
  const candidates = [join(__dirname, '..', 'dashboard'), join(process.cwd(), 'dist', 'dashboard')];
  const found = candidates.find((candidate) => existsSync(join(candidate, 'index.html')));
  if (!found)
    throw new Error(
      `the dashboard is not built (npm run build writes dist/dashboard); looked in ${candidates.join(', ')}`,
    );
  return found;
}

/** The dashboard's files: `index.html` always asked again, the hashed assets kept for good. */
export function dashboardFiles(directory = dashboardDirectory()): Router {
  const router = express.Router();
  // The API's paths are never files, whatever `..` they hold: they go on to the API, which answers.
  router.use((request, _response, next) => next(/^\/api(\/|$)/.test(request.path) ? 'router' : undefined));
  router.use(
    express.static(directory, {
      index: 'index.html',
      // A path naming a directory is not redirected to one with a trailing slash: nothing to find there.
      redirect: false,
      setHeaders: (response, path) =>
        response.setHeader(
          'cache-control',
          path.endsWith('index.html') ? 'no-cache' : 'public, max-age=31536000, immutable',
        ),
    }),
  );
  return router;
}

/** Hop-by-hop headers, which concern one connection and are not passed on. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
]);

/**
 * `/api/*` passed to the config service as it is (method, headers with the credential, body), the
 * answer streamed back (the server-sent events too): the page reads one origin wherever it is served.
 */
export function apiProxy(apiUrl: string): Router {
  const router = express.Router();
  const base = apiUrl.replace(/\/+$/, '');
  router.use('/api', async (request, response) => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(request.headers))
      if (!HOP_BY_HOP.has(name) && typeof value === 'string') headers.set(name, value);
    const abort = new AbortController();
    response.on('close', () => abort.abort());
    try {
      const hasBody = request.method !== 'GET' && request.method !== 'HEAD';
      const answer = await fetch(`${base}/api${request.url}`, {
        method: request.method,
        headers,
        signal: abort.signal,
        ...(hasBody
          ? { body: Readable.toWeb(request) as unknown as NonNullable<RequestInit['body']>, duplex: 'half' }
          : {}),
      } as RequestInit);
      response.status(answer.status);
      answer.headers.forEach((value, name) => {
        if (!HOP_BY_HOP.has(name) && name !== 'content-encoding') response.setHeader(name, value);
      });
      if (!answer.body) {
        response.end();
        return;
      }
      // A reader that goes away (a closed tab ends its event stream) aborts the answer: no error of ours.
      pipeline(Readable.fromWeb(answer.body as unknown as WebReadableStream), response, () => undefined);
    } catch (error) {
      if (abort.signal.aborted) return;
      if (!response.headersSent)
        response.status(502).json({
          statusCode: 502,
          message: `the config service does not answer: ${(error as Error).message}`,
        });
      else response.end();
    }
  });
  return router;
}

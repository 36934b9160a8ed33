// The containers' health check (deploy/Dockerfile, docker-compose.yml): exits 0 when the service in
// this container answers GET /health/ready with a 2xx within 4 s (ready: caught up, its
// dependencies answering), else 1. Node's own fetch: the image has no curl.
const url = `http://127.0.0.1:${process.env.PORT ?? ''}/health/ready`;
fetch(url, { signal: AbortSignal.timeout(4_000) }).then(
  (response) => process.exit(response.ok ? 0 : 1),
  () => process.exit(1),
);

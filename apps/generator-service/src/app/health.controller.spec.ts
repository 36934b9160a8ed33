import type { Response } from 'express';
import type { GenerationLoop, GenerationStatus } from '../generation/generation-loop';
import { HealthController } from './health.controller';

function statusWith(failing: GenerationStatus['failing']): GenerationStatus {
  return {
    ready: true,
    revision: 3,
    ownership: 'every node',
    pending: 0,
    queued: 0,
    cycles: 5,
    lastCycle: null,
    failing,
  };
}

function answer(status: GenerationStatus): { code: number; body: { status: string } } {
  let code = 200;
  const response = { status: (value: number) => (code = value) } as unknown as Response;
  const controller = new HealthController({ status: () => status } as unknown as GenerationLoop);
  const body = controller.health(response);
  return { code, body };
}

describe('the generator health', () => {
  const since = '2026-11-24T00:00:00.000Z';

  it('is ok while cycles succeed, and after one failure that a retry may mend', () => {
    expect(answer(statusWith(null))).toMatchObject({ code: 200, body: { status: 'ok' } });
    const once = statusWith({ since, consecutiveFailures: 1, error: 'broker away', retriable: true });
    expect(answer(once)).toMatchObject({
      code: 200,
      body: { status: 'ok', failing: { error: 'broker away' } },
    });
  });

  it('is 503 after failures in a row, and at once when the bus refuses for good', () => {
    const often = statusWith({ since, consecutiveFailures: 3, error: 'broker away', retriable: true });
    expect(answer(often)).toMatchObject({ code: 503, body: { status: 'failing' } });
    const refused = statusWith({ since, consecutiveFailures: 1, error: 'not allowed', retriable: false });
    expect(answer(refused)).toMatchObject({ code: 503, body: { status: 'failing' } });
  });
});

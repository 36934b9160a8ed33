import { Logger } from '@nestjs/common';
import pino from 'pino';
import { NestPinoLogger } from './nest-logger';

function capture(): { lines: Record<string, unknown>[]; logger: NestPinoLogger } {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'trace' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { lines, logger: new NestPinoLogger(logger) };
}

describe('NestPinoLogger', () => {
  it("writes Nest's calls as lines of its own pino logger: level, context, message, an object's fields", () => {
    const { lines, logger } = capture();
    logger.log('loaded at revision 3', 'ConfigState');
    logger.warn({ msg: 'revision committed', revision: 4 }, 'ConfigState');
    logger.verbose('quiet');
    logger.debug('count %d', 7, 'Counter');
    expect(lines.map(({ level, context, msg, revision }) => ({ level, context, msg, revision }))).toEqual([
      { level: 30, context: 'ConfigState', msg: 'loaded at revision 3', revision: undefined },
      { level: 40, context: 'ConfigState', msg: 'revision committed', revision: 4 },
      { level: 10, context: undefined, msg: 'quiet', revision: undefined },
      { level: 20, context: 'Counter', msg: 'count 7', revision: undefined },
    ]);
  });

  it('writes an error with its stack, whether given as an Error or as (message, stack, context) by Nest', () => {
    const { lines, logger } = capture();
    logger.error(new Error('boom'), 'Handler');
    logger.error('failed', 'Error: failed\n    at somewhere (file.ts:1:1)', 'ExceptionsHandler');
    expect(
      lines.map((line) => [line['level'], line['context'], (line['err'] as { message: string }).message]),
    ).toEqual([
      [50, 'Handler', 'boom'],
      [50, 'ExceptionsHandler', 'failed'],
    ]);
    expect((lines[1]?.['err'] as { stack: string }).stack).toContain('at somewhere');
  });

  it("is what Nest's static Logger writes to once an application uses it", () => {
    const { lines, logger } = capture();
    Logger.overrideLogger(logger);
    try {
      new Logger('Service').log({ msg: 'revision committed', author: 'ops' });
    } finally {
      Logger.overrideLogger(false);
    }
    expect(lines).toEqual([
      expect.objectContaining({ context: 'Service', msg: 'revision committed', author: 'ops' }),
    ]);
  });
});

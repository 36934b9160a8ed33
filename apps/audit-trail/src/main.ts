import pino from 'pino';
import { connectionFromEnvironment } from '@policygen/sdk';
import type { Connection } from '@policygen/sdk';
import { startAuditTrail } from './audit-trail';

const logger = pino({ name: 'audit-trail', level: process.env['LOG_LEVEL'] ?? 'info' });

function fail(message: string): never {
  process.stderr.write(`audit-trail: ${message}\n`);
  process.exit(2);
}

let connection: Connection;
try {
  connection = connectionFromEnvironment();
} catch (error) {
  fail((error as Error).message);
}
const databaseUrl = process.env['AUDIT_DATABASE_URL'];
if (!databaseUrl || !/^postgres(ql)?:\/\//.test(databaseUrl))
  fail('AUDIT_DATABASE_URL: a postgres:// connection string is needed');

void startAuditTrail({
  connection,
  databaseUrl,
  ...(process.env['AUDIT_SCHEMA'] ? { schema: process.env['AUDIT_SCHEMA'] } : {}),
  ...(process.env['AUDIT_GROUP_ID'] ? { groupId: process.env['AUDIT_GROUP_ID'] } : {}),
  logger,
}).then(
  (trail) => {
    logger.info('recording the fleet’s deliveries and failures');
    let stopping = false;
    const stop = (): void => {
      if (stopping) return;
      stopping = true;
      trail.stop().then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'stopping failed');
          process.exit(1);
        },
      );
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  },
  (error: unknown) => {
    const message = (error as Error).message;
    if (message.startsWith('AUDIT_')) fail(message);
    logger.fatal({ err: error }, 'the audit trail did not start');
    process.exit(1);
  },
);

import 'reflect-metadata';
import { z } from 'zod';
import { claimedRelayId } from '@policygen/distribution';
import { env, runService } from '@policygen/service-kit';
import { startRelay } from './app/relay-service';

runService({
  name: 'relay',
  environment: z
    .object({
      POLICYGEN_RELAY_ID: z.string().min(1),
      POLICYGEN_PARENT_URL: env.url(),
      // Its credential for its parent: POST /api/v1/relays/{id}/token, or derived (deploy/README.md).
      POLICYGEN_RELAY_TOKEN: z.string().refine((token) => claimedRelayId(token) !== null, {
        message: 'is not a relay credential (relay.<relayId>.<mac>: deploy/README.md says how to get one)',
      }),
      HOST: env.host('0.0.0.0'),
      PORT: env.port(3004),
      LOG_LEVEL: env.logLevel(),
      POLICYGEN_DATA_DIR: z.string().min(1).default('/var/lib/policygen/relay'),
      POLICYGEN_POLL_WAIT_MS: z.coerce.number().int().min(0).max(60_000).default(25_000),
      POLICYGEN_BLOB_GRACE_MS: z.coerce.number().int().min(0).default(600_000),
    })
    .refine((settings) => claimedRelayId(settings.POLICYGEN_RELAY_TOKEN) === settings.POLICYGEN_RELAY_ID, {
      path: ['POLICYGEN_RELAY_TOKEN'],
      message: "is the credential of another relay than POLICYGEN_RELAY_ID's",
    }),
  async start(settings, logger) {
    const relay = await startRelay({
      relayId: settings.POLICYGEN_RELAY_ID,
      parentUrl: settings.POLICYGEN_PARENT_URL,
      relayToken: settings.POLICYGEN_RELAY_TOKEN,
      dataDir: settings.POLICYGEN_DATA_DIR,
      logger: logger.child({ relay: settings.POLICYGEN_RELAY_ID }),
      pollWaitMs: settings.POLICYGEN_POLL_WAIT_MS,
      blobGraceMs: settings.POLICYGEN_BLOB_GRACE_MS,
    });
    return { app: relay.app, stop: () => relay.stop() };
  },
});

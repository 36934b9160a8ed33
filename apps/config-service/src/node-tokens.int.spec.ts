import { nodeKey, nodeTokenValid, parseNodeToken } from '@policygen/distribution';
import { smallFleet } from './testing/fixtures';
import { configServiceForSuite } from './testing/running-config-service';

const SECRET = 'a-long-random-secret-for-the-tests';

describe('config service: node tokens', () => {
  const suite = configServiceForSuite('cs_tokens', { nodeTokenSecret: SECRET, tokenRequestsPerMinute: 3 });

  beforeAll(async () => {
    const seeded = await suite.api.post('/api/v1/import', smallFleet());
    if (seeded.status !== 200) throw new Error(`could not import the fleet: ${seeded.text}`);
  });

  it('issues a node its token, then answers 429 to a client asking for more than its limit a minute', async () => {
    for (let request = 0; request < 3; request++) {
      const issued = await suite.api.post('/api/v1/nodes/n1/token', {});
      expect(issued.status).toBe(200);
      const { nodeId, token, expiresAt } = issued.body as {
        nodeId: string;
        token: string;
        expiresAt: string;
      };
      expect(nodeId).toBe('n1');
      // 90 days by default, to the second.
      expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(89 * 86_400_000);
      const claim = parseNodeToken(token);
      expect(claim?.nodeId).toBe('n1');
      expect(claim && nodeTokenValid(claim, nodeKey(SECRET, 'n1'), Date.now())).toBe(true);
    }
    const limited = await suite.api.post('/api/v1/nodes/n2/token', {});
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // Only the token endpoints are limited.
    for (let request = 0; request < 5; request++)
      expect((await suite.api.get('/api/v1/nodes/n1')).status).toBe(200);
  });
});

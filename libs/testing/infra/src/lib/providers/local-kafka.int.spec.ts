import { launchLocalKafka } from './local-kafka';

// These start brokers of their own, beside the run's shared one, to prove that a broker which
// dies or never comes up fails the run quickly and clearly instead of hanging it.
describe('local Kafka start-up', () => {
  it('fails at once, with the broker log, when the broker dies while the harness waits for it', async () => {
    const kafka = await launchLocalKafka({ startTimeoutMs: 60_000 });
    const began = Date.now();
    kafka.process.kill();
    await expect(kafka.ready).rejects.toThrow(
      /Kafka broker .* was killed by SIGKILL before it was ready\.\n--- last lines of .*kafka\.log ---/s,
    );
    expect(Date.now() - began).toBeLessThan(10_000);
    expect(kafka.process.running).toBe(false);
  });

  it('gives up after its start-up timeout rather than hanging, and stops the broker', async () => {
    const kafka = await launchLocalKafka({ startTimeoutMs: 200 });
    await expect(kafka.ready).rejects.toThrow(/did not become ready within 0.2 s/);
    expect(kafka.process.running).toBe(false);
  });
});

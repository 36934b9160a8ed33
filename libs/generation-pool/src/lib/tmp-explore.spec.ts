import { GenerationEngine } from '@policygen/engine';
import { demoFleet, randomChangeSets } from '../testing/fixtures';

it('explores', () => {
  const fleet = demoFleet();
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    const engine = GenerationEngine.fromFleet(fleet);
    engine.regenerate();
    const changes = randomChangeSets(seed, () => engine.toFleet());
    for (let i = 0; i < 20; i++) {
      const input = changes.next().value;
      const outcome = engine.apply(input);
      if (!outcome.ok) continue;
      const run = engine.regenerate();
      if (run.skipped > 0) process.stdout.write(`${seed} ${JSON.stringify(input).slice(0, 200)} -> ${run.skipped}/${run.candidates}\n`);
    }
  }
  for (const input of [{ upsert: { parameters: { extra: 1 } } }, { upsert: { settings: { orderingSeed: 5 } } }]) {
    const engine = GenerationEngine.fromFleet(fleet);
    engine.regenerate();
    engine.apply(input);
    const run = engine.regenerate();
    process.stdout.write(`${JSON.stringify(input)} -> ${run.skipped}/${run.candidates}\n`);
  }
});

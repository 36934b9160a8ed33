/**
 * Digests remembered for a bounded time after they were last noted, in two generations: the
 * current one takes new notes, and at each turn the previous one is forgotten whole. A digest is
 * known at most `maxAgeMs` after it was noted, provided `tick` is called before each batch of
 * lookups, and never more than `max` are held. Cheaper per lookup than a TTL LRU, which reads the clock and reorders on every hit:
 * this is asked once per file of every bundle generated.
 */
export class RecentDigests {
  private current = new Set<string>();
  private previous = new Set<string>();
  private turnedAt: number;
  private readonly turnEveryMs: number;
  private readonly perGeneration: number;

  constructor(
    maxAgeMs: number,
    max: number,
    private readonly now: () => number = Date.now,
  ) {
    // A lookup comes at most one turn after the last tick, and the previous generation is at most
    // two turns old then: three turns in all.
    this.turnEveryMs = Math.max(1, Math.floor(maxAgeMs / 3));
    this.perGeneration = Math.max(1, Math.floor(max / 2));
    this.turnedAt = now();
  }

  /** To be asked once per batch of lookups: moves to the next generation when it is due. */
  tick(): void {
    const now = this.now();
    if (now - this.turnedAt < this.turnEveryMs) return;
    // Past two turns, both generations are too old.
    this.previous = now - this.turnedAt >= 2 * this.turnEveryMs ? new Set() : this.current;
    this.current = new Set();
    this.turnedAt = now;
  }

  has(digest: string): boolean {
    return this.current.has(digest) || this.previous.has(digest);
  }

  note(digest: string): void {
    if (this.current.size >= this.perGeneration) {
      this.previous = this.current;
      this.current = new Set();
      this.turnedAt = this.now();
    }
    this.current.add(digest);
  }

  clear(): void {
    this.current = new Set();
    this.previous = new Set();
  }

  get size(): number {
    return this.current.size + this.previous.size;
  }
}

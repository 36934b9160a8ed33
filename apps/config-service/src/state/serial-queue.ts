/** Runs tasks one at a time, in the order they were queued; a failing task does not stop the next. */
export class SerialQueue {
  private tail: Promise<void> = Promise.resolve();
  private queued = 0;

  run<T>(task: () => Promise<T>): Promise<T> {
    this.queued++;
    const result = this.tail.then(task);
    this.tail = result.then(
      () => this.done(),
      () => this.done(),
    );
    return result;
  }

  get idle(): boolean {
    return this.queued === 0;
  }

  /** Resolves once everything queued so far has run. */
  drained(): Promise<void> {
    return this.tail;
  }

  private done(): void {
    this.queued--;
  }
}

/**
 * One offset commit at a time for a consumer's handled batches: a batch that ends while a commit
 * is under way waits for the next one, which all such batches share and which commits every offset
 * resolved by the time it starts. Each `commit` resolves once a commit that began after it was
 * asked for has succeeded, so a handled batch is committed before its partition is fetched again.
 */
export class CoalescedCommits {
  private inFlight: Promise<void> | null = null;
  private next: Promise<void> | null = null;

  commit(send: () => Promise<void>): Promise<void> {
    if (this.inFlight === null) {
      const sending = send().finally(() => {
        if (this.inFlight === sending) this.inFlight = null;
      });
      this.inFlight = sending;
      return sending;
    }
    this.next ??= this.inFlight
      .catch(() => undefined)
      .then(() => {
        this.next = null;
        return this.commit(send);
      });
    return this.next;
  }
}

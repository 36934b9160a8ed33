import type { PipelineSnapshot } from '../api/contract';
import type { SnapshotHistory } from '../history';

/** A part of the page that follows the stream: it is given each snapshot, and the history so far. */
export interface Panel {
  readonly element: HTMLElement;
  update(snapshot: PipelineSnapshot, history: SnapshotHistory): void;
}

/** Remembers the last value rendered, so an unchanged part of a snapshot is not rendered again. */
export class ChangeGate {
  private last: string | null = null;

  changed(value: unknown): boolean {
    const key = JSON.stringify(value);
    if (key === this.last) return false;
    this.last = key;
    return true;
  }
}

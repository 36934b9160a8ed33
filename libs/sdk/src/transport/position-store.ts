/** Where a consumer of the event stream keeps its position per group and topic between runs. */
export interface PositionStore {
  load(groupId: string, topic: string): Promise<string | undefined>;
  save(groupId: string, topic: string, position: string): Promise<void>;
}

/** Positions for the life of the process: a restarted consumer reads its topics again from the start. */
export class MemoryPositionStore implements PositionStore {
  private readonly positions = new Map<string, string>();

  async load(groupId: string, topic: string): Promise<string | undefined> {
    return this.positions.get(`${groupId}\u0000${topic}`);
  }

  async save(groupId: string, topic: string, position: string): Promise<void> {
    this.positions.set(`${groupId}\u0000${topic}`, position);
  }
}

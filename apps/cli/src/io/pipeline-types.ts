/** The config API's answers the CLI reads (apps/config-service/src/pipeline, `/api/docs`). */

export interface StageLag {
  readonly stage: string;
  readonly count: number;
  readonly p50: number | null;
  readonly p95: number | null;
  readonly p99: number | null;
  readonly max: number | null;
}

export interface LagReport {
  readonly windowSeconds: number;
  readonly steady: readonly StageLag[];
  readonly catchUp: readonly StageLag[];
}

export interface PipelineStatus {
  readonly revisions: {
    readonly committed: number;
    readonly generated: number;
    readonly distributed: number;
  };
  readonly failingNodes: number;
  readonly failuresByCode: Readonly<Record<string, number>>;
  readonly throughput: {
    readonly changesPerSecond: number;
    readonly nodesGeneratedPerSecond: number;
    readonly bundlesDeliveredPerSecond: number;
  };
  readonly relays: readonly {
    readonly relayId: string;
    readonly parentId: string | null;
    readonly revision: number;
    readonly behind: number;
    readonly confirmedAt: string | null;
    readonly nodes: number;
  }[];
  readonly consumers: readonly { readonly group: string; readonly topic: string; readonly lag: number }[];
  readonly generators: readonly {
    readonly memberId: string;
    readonly clientId: string;
    readonly partitions: readonly number[];
  }[];
  readonly ready: boolean;
  readonly reasons: readonly string[];
}

export interface NodeFailurePage {
  readonly total: number;
  readonly items: readonly {
    readonly nodeId: string;
    readonly code: string;
    readonly message: string;
    readonly directiveIds: readonly string[];
    readonly ruleIds: readonly string[];
    readonly sinceRevision: number;
  }[];
  readonly next: string | null;
}

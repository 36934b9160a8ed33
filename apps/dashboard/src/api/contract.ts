/**
 * The shapes of the config service's public pipeline APIs the dashboard reads (`/api/v1/...`).
 * Times are ISO 8601 strings; lags are milliseconds from the revision's commit.
 */

export type Stage = 'generated' | 'distributed' | 'relay' | 'fetched';

export const STAGES: readonly Stage[] = ['generated', 'distributed', 'relay', 'fetched'];

export interface StageLag {
  stage: Stage;
  count: number;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  max: number | null;
}

export interface LagReport {
  windowSeconds: number;
  steady: StageLag[];
  catchUp: StageLag[];
}

export interface RelayState {
  relayId: string;
  parentId: string | null;
  revision: number;
  behind: number;
  confirmedAt: string | null;
  nodes: number;
}

export interface ConsumerLag {
  group: string;
  topic: string;
  lag: number;
  partitions: { partition: number; lag: number }[];
}

export interface GeneratorInstance {
  memberId: string;
  clientId: string;
  partitions: number[];
}

export interface PipelineStatus {
  revisions: { committed: number; generated: number; distributed: number };
  failingNodes: number;
  failuresByCode: Record<string, number>;
  throughput: {
    changesPerSecond: number;
    nodesGeneratedPerSecond: number;
    bundlesDeliveredPerSecond: number;
  };
  relays: RelayState[];
  consumers: ConsumerLag[];
  generators: GeneratorInstance[];
  ready: boolean;
  reasons: string[];
}

/** The data of one `snapshot` event of `GET /api/v1/pipeline/stream`. */
export interface PipelineSnapshot {
  at: string;
  status: PipelineStatus;
  lag: LagReport;
}

export interface Failure {
  nodeId: string;
  code: string;
  message: string;
  directiveIds: string[];
  ruleIds: string[];
  sinceRevision: number;
  since: string;
}

export interface FailurePage {
  total: number;
  items: Failure[];
  next: string | null;
}

export interface FailureFilter {
  code: string;
  directive: string;
  rule: string;
}

export interface NodeStatus {
  nodeId: string;
  /** The configuration's revision now. */
  revision: number;
  generation: null | {
    revision: number;
    outcome: 'generated' | 'unchanged' | 'failed';
    hash: string | null;
    at: string;
    lastGoodRevision: number | null;
  };
  failure: null | Omit<Failure, 'nodeId'>;
  relays: { relayId: string; revision: number; hash: string; confirmedAt: string }[];
  fetched: null | { relayId: string; revision: number; hash: string; fetchedAt: string };
}

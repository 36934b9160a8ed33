export { configServiceAuthenticator, createConfigServiceApp } from './app/create-config-service-app';
export type { ConfigServiceOptions } from './app/config-service-options';
export type { LagReport, NodeStatus, RevisionProgress, StageLag } from './pipeline/pipeline-view';
export type { FailurePage, PipelineStatus } from './pipeline/pipeline.service';
export type { ChangePreview, NodeBundleDiff } from './changes/change-preview';
export type { DeadLetterTopic } from './dead-letters/dead-letters.service';

export {
  CfEngineNotFoundError,
  requireCfEngine,
  runAgent,
  TREE_ROOT,
  type AgentRun,
  type AgentRunOptions,
} from './lib/cf-agent';

/** Injection tokens of the ports; classes are injected by their class. */
export const CONFIG_STORE = Symbol('ConfigStore');
export const MESSAGING = Symbol('Messaging');
export const OUTBOX_PRODUCER = Symbol('OutboxProducer');
export const SERVICE_TIMINGS = Symbol('ServiceTimings');
export const NODE_TOKEN_SECRET = Symbol('NodeTokenSecret');
export const PIPELINE_SETTINGS = Symbol('PipelineSettings');
export const API_TOKENS = Symbol('ApiTokenRegistry');

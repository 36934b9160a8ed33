export * from './lib/topology';
export * from './lib/node-token';
export * from './lib/feed';
export * from './lib/ledger';
export * from './lib/disk/blob-directory';
export * from './lib/disk/feed-log';
export * from './lib/http/feed.controller';
export * from './lib/http/metrics.controller';

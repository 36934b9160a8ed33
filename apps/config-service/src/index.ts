export { createConfigServiceApp } from './app/create-config-service-app';
export type { ConfigServiceOptions } from './app/config-service-options';

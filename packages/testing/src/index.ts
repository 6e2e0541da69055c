export * from './isolation.js';
export * from './service-process.js';
export * from './scripted-model.js';
export * from './fake-lark.js';
export * from './redis-test-keys.js';
export * from './concept-embedding.js';
export * from './dense-embedding.js';
export * from './loopback-servers.js';
export * from './prose.js';
export {
  startFakeSearchProviders,
  type FakeResult,
  type FakeSearchProvider,
  type SearchBehaviour,
  type SearchRequest,
} from './fake-search.js';
export {
  FAKE_OAUTH_CLIENT,
  startFakeSaas,
  type FakeSaas,
  type FakeSaasData,
  type FakeSaasProvider,
  type SaasRecordedRequest,
} from './fake-saas.js';
export { startFakeE2B, type FakeE2B, type FakeE2BSandbox } from './fake-e2b.js';
export {
  startFakeDocker,
  type FakeContainer,
  type FakeDocker,
  type FakeDockerOptions,
} from './fake-docker.js';
export * from './prometheus-text.js';
export * from './tcp-proxy.js';
export * from './zip-writer.js';
export { timeFirstStart, type FirstStart, type FirstStartOptions } from './first-start.js';
export * from './oidc-provider.js';
export * from './redis-topology.js';
export * from './redis-cluster-slots.js';

import { describeClientContract } from './client.contract.js';
import { startFakeGateway } from './testing/fake-gateway.js';

// Against the gateway test double until the real gateway exists; the same contract can then
// run against it (see GatewayHarness).
describeClientContract('the fake gateway', startFakeGateway);

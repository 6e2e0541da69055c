import { describeBusContract } from './bus.contract.js';
import { createMemoryBus, createMemoryHub } from './memory-bus.js';

describeBusContract('memory', async (count, { onError }) => {
  const hub = createMemoryHub();
  const nodes = Array.from({ length: count }, () => createMemoryBus({ hub, onError }));
  return {
    nodes,
    injectRaw: async (channel, payload) => void hub.injectRaw(channel, payload),
    dispose: async () => void (await Promise.all(nodes.map((node) => node.close()))),
  };
});

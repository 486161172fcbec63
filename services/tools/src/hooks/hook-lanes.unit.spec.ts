import { describeHookLaneContract } from './hook-lanes.contract.js';
import { InMemoryHookLaneStore } from './hook-lanes.js';

describeHookLaneContract('in memory', async () => {
  const lanes = new InMemoryHookLaneStore();
  return { lanes, second: lanes };
});

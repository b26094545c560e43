/** Desktop bridge operations: projects (see bridge.ts for the contract every operation keeps). */
import type { BridgeOp } from './bridge.js';

export const BRIDGE_PROJECT_OPS: BridgeOp[] = [];
